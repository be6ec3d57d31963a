"""The agent's side of the compaction pipeline: run a step, report it, apply it, remember it for undo.

`_prepare` runs the pipeline before every model call (unless automatic compaction is paused);
`_compaction` runs compact_history (the compact tool, the user) or reactive_compact (an API
refusal). Either way the steps the compactor reported come out as events, retries inside a summary
call come out as notices while they happen, a failed step keeps what succeeded, and an applied
compaction is kept (the newest `undo_depth`) so that `undo_compaction` can reverse it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Sequence
from typing import TypeVar

from core.agent.base import AgentBase, Message
from core.compaction import CompactionError
from core.compaction.steering import Compaction
from core.events import AgentEvent, CompactionStep, ErrorEvent, HistoryChanged, Notice, Splice, StepName
from core.history.messages import splice_between
from core.model.base import SUMMARY_RETRIES, Retrying

_T = TypeVar("_T")


class AgentCompaction(AgentBase):
    """Compaction plumbing of the Agent (see the module docstring)."""

    async def _prepare(self) -> AsyncGenerator[AgentEvent, None]:
        """The pipeline before a model call; a failed step keeps what succeeded and the turn goes on."""
        self._steps.clear()
        self._timeline.note_before(self.chars)
        if not self.auto_compact:
            limit = self.compactor.settings.context_char_limit
            if self.chars > limit:
                yield Notice(
                    f"automatic compaction is paused: the context is {self.chars:,} chars, over the "
                    f"{limit:,}-char limit (the API may refuse it; reactive compaction still guards that)",
                    "warning",
                )
            return
        done: list[tuple[Splice, ...]] = []
        try:
            async for notice in self._retries_while(
                    self.compactor.prepare_changes(self._messages, self.last_request), done):
                yield notice
            changes = done[0]
        except CompactionError as error:
            steps = self._take_steps()
            for step in steps:
                yield step
            # what the steps before the failed one did is applied, and can be undone like any compaction
            if error.partial is not None and (changed := self._compacted(steps, error.partial, "prepare (partial)")):
                yield changed
            yield ErrorEvent(f"compaction: {error}; going on with the context as it is", "compaction")
            return
        steps = self._take_steps()
        for step in steps:
            yield step
        if changed := self._compacted(steps, self._messages, "prepare", changes):
            yield changed

    @staticmethod
    async def _retries_while(call: Awaitable[_T], result: list[_T]) -> AsyncGenerator[AgentEvent, None]:
        """Run a compactor call, yielding a retry notice for every retry inside its summary call as
        it happens (`core.model.base.report_retry`); its value is appended to `result`, its
        exception raised after the notices. Closing the generator cancels the call."""
        queue: asyncio.Queue[Retrying] = asyncio.Queue()
        token = SUMMARY_RETRIES.set(queue.put_nowait)
        try:
            task = asyncio.ensure_future(call)  # the task takes a copy of this context, the sink set
        finally:
            SUMMARY_RETRIES.reset(token)
        try:
            while not task.done():
                waiting = asyncio.ensure_future(queue.get())
                await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
                if waiting.done():
                    yield Notice(f"retrying: {waiting.result().message}", "retry")
                else:
                    waiting.cancel()
            while not queue.empty():
                yield Notice(f"retrying: {queue.get_nowait().message}", "retry")
            result.append(task.result())
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _compaction(
        self, step: StepName, focus: str | None, summary: str | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """compact_history (the compact tool, the user) or reactive_compact (an API refusal)."""
        self._steps.clear()
        self._timeline.note_before(self.chars)
        call: Awaitable[list[Message]]
        if step == "reactive_compact":
            call = self.compactor.reactive_compact(self._messages, self.last_request)
            label = "reactive compaction"
        else:
            call = self.compactor.compact_history(self._messages, self.last_request, focus=focus, summary=summary)
            label = "compact"
        done: list[list[Message]] = []
        try:
            async for notice in self._retries_while(call, done):
                yield notice
            compacted = done[0]
        except CompactionError as error:
            for event in self._take_steps():
                yield event
            yield ErrorEvent(f"{label}: {error}", "compaction")
            return
        steps = self._take_steps()
        for event in steps:
            yield event
        if changed := self._compacted(steps, compacted, step):
            yield changed

    def _compacted(
        self, steps: list[CompactionStep], messages: Sequence[Message], reason: str,
        changes: tuple[Splice, ...] | None = None,
    ) -> HistoryChanged | None:
        """Apply a compaction's result and remember it for undo, in memory and in the session log
        (the history changes in place, so the list before it is copied first)."""
        if changes is None:
            changes = splice_between(self._messages, messages)
        if not changes:
            return None
        before = tuple(self._messages)
        names = tuple(step.step for step in steps)
        files = tuple(path for step in steps for path in step.files_written)
        if names and self.session is not None and self.settings.undo_depth:
            self.session.compaction(reason, names, files)  # the change written next is this compaction
        changed = self._replace(messages, reason, changes)
        if names:
            self._remember(Compaction(names, before, tuple(self._messages), files))
        return changed

    def _remember(self, compaction: Compaction) -> None:
        """Keep a compaction for undo; only the newest `undo_depth` are kept, so what left the
        history is not held forever (the archive keeps every byte of it on disk)."""
        self.compactions.append(compaction)
        del self.compactions[: max(0, len(self.compactions) - self.settings.undo_depth)]

    def _take_steps(self) -> list[CompactionStep]:
        steps, self._steps[:] = list(self._steps), []
        for step in steps:
            self._timeline.note_step(step.step, step.saved)
        return steps
