"""The agent loop: prepare the context, stream the model, run the tools, repeat.

`Agent.run_turn(text)` is an async generator of events (core/events.py), yielded in the order
things happen: it is the only channel from the core to a UI. A tool that needs consent yields
`PermissionRequested` and waits for its `reply` future. Whatever happens (an API error, a failed
summary, a cancelled task, a closed generator) one place, `_finish`, ends the turn, and the history
it leaves is API-valid: every tool_use is answered and no half-written assistant message is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from core.archive import Archive
from core.compaction import CompactionError, Compactor, Summarize, conversation_text
from core.config import Settings
from core.counting import count_next_request
from core.events import (
    PERMISSION_CHOICES,
    AgentEvent,
    AssistantMessage,
    CompactionStep,
    ContextMeasured,
    ContextSampled,
    ErrorEvent,
    HistoryChanged,
    Notice,
    PermissionRequested,
    Splice,
    StepName,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from core.history import (
    USER_PIN_PREFIX,
    find_user_message,
    interrupted_result,
    splice_between,
    text_of,
    tool_result_ids,
    user_pin_key,
)
from core.markers import parse_marker
from core.model.base import (
    SUMMARY_RETRIES,
    Model,
    ModelError,
    ModelResponse,
    PromptTooLongError,
    Retrying,
    TextChunk,
)
from core.session import SessionLog, resume_path
from core.steering import Compaction, SteeringError, drop_result, find_result, restore_result, undo
from core.store import History
from core.text import error_line, one_line
from core.tokens import TokenCounter
from core.tools import COMPACT_TOOL_OUTPUT, PERMISSION_DENIED, ToolBox, ToolOutput, Workspace
from core.usage import ContextSample, Timeline, TokenCount, price_for

Message = dict[str, Any]
_T = TypeVar("_T")

SYSTEM_PROMPT = """You are a coding agent working in the directory {workdir} through tools: bash, read_file, \
write_file, edit_file, glob and compact. Work step by step, read before you edit, and keep answers short.

Your context is kept small by a compaction pipeline. Older tool results may be replaced by \
`[Earlier tool result saved at PATH]`, large ones by a `<persisted-output>` block with a preview, and \
old messages by `[N messages archived at PATH]`; a `[Compacted]` message holds the current request and \
a summary. Every PATH is relative to the working directory: read it with read_file (use offset/limit \
for large files) when you need the full text again. Call the compact tool when a phase of work is done \
and its details are no longer needed."""

DEFAULT_MAX_STEPS = 50


@dataclass
class _Turn:
    """What one turn has done so far: the batch being answered, the final text, how it ended."""

    request: str
    batch: list[Message] = field(default_factory=list)  # tool_use blocks of the reply being answered
    answered: list[Message] = field(default_factory=list)  # their tool_results so far
    waiting: asyncio.Future[str] | None = None  # an unanswered PermissionRequested.reply
    response: ModelResponse | None = None
    final_text: str = ""
    error: str | None = None
    error_kind: str = "error"
    finished: bool = False

    def fail(self, message: str, kind: str) -> None:
        self.error, self.error_kind = message, kind


class Agent:
    """One conversation with a model, its tools and its compaction pipeline."""

    def __init__(
        self,
        model: Model,
        toolbox: ToolBox,
        compactor: Compactor,
        *,
        settings: Settings | None = None,
        session: SessionLog | None = None,
        messages: list[Message] | None = None,
        token_counter: TokenCounter | None = None,
        system_prompt: str | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        allow_all: bool | None = None,
    ) -> None:
        self.model = model
        self.toolbox = toolbox
        self.compactor = compactor
        self.settings = settings or Settings(workdir=toolbox.workspace.root)
        self.session = session
        self._messages = History(messages or [])
        self.tokens = token_counter or TokenCounter()
        self.system_prompt = system_prompt or SYSTEM_PROMPT.format(workdir=toolbox.workspace.root)
        self.max_steps = max_steps
        self.allow_all = self.settings.yes if allow_all is None else allow_all
        """Run tools that need consent without asking (`--yes`)."""
        self.allowed_for_session: set[str] = set()
        """Tools the user allowed for the rest of this session ("session" answers)."""
        self.last_request = _last_request(self._messages)
        self.last_input_tokens: int | None = None
        self.running = False
        self.resumed_from: str | None = None
        self._announce: Notice | None = None  # said once, at the start of the first turn
        self._steps: list[CompactionStep] = []  # what the compactor reported during the current call
        self.compactions: list[Compaction] = []
        """Every compaction applied to this history, oldest first (what `undo_compaction` reverses)."""
        self.auto_compact = self.settings.auto_compact
        """False pauses the pipeline before each call; reactive_compact still guards an API refusal."""
        self._session_error: str | None = None
        self._timeline = Timeline(None if model.offline else price_for(model.name), offline=model.offline)
        compactor.on_event = self._steps.append
        if compactor.summarize is not None and self.settings.summary_instructions.strip():
            compactor.summarize = _with_instructions(compactor.summarize, self.settings.summary_instructions)

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, *, model: Model | None = None, allow_all: bool | None = None) -> Agent:
        """Build the whole stack from settings: model (offline without a key), tools, archive, session."""
        workdir = settings.workdir.resolve()
        settings.workdir = workdir
        if model is None:
            model = make_model(settings)
        archive = Archive(workdir)
        toolbox = ToolBox(
            Workspace(workdir),
            bash_timeout=settings.bash_timeout,
            max_bash_timeout=settings.max_bash_timeout,
            output_limit=settings.tool_output_limit,
            read_line_limit=settings.read_line_limit,
            spill_dir=archive.tool_results_dir,
            spill_byte_limit=settings.spill_byte_limit,
            glob_time_budget=settings.glob_time_budget,
        )
        compactor = Compactor(archive, summarize=model.summarize, settings=settings.compaction)
        messages: list[Message] = []
        pins: list[str] = []
        resumed = None
        undo: list[Compaction] = []
        if settings.resume:
            latest = resume_path(settings.state_dir, settings.resume_id)
            if latest is not None:
                replay = SessionLog.replay(latest, undo_depth=settings.undo_depth)
                messages, pins, undo = replay.messages, replay.pins, replay.compactions
                resumed = str(latest)
        session = SessionLog.create(settings.state_dir, {"model": model.name, "workdir": str(workdir)})
        agent = cls(model, toolbox, compactor, settings=settings, session=session, messages=messages,
                    allow_all=allow_all)
        agent._take_over(undo, pins)
        if resumed is not None:
            agent.resumed_from = resumed
            agent._announce = Notice(f"resumed {len(messages)} messages from {resumed}")
        return agent

    # --- state ----------------------------------------------------------------------------------

    @property
    def messages(self) -> History:
        """The current history (plain dicts, Messages API shape), in a list that records its changes."""
        return self._messages

    @property
    def archive(self) -> Archive:
        return self.compactor.archive

    @property
    def chars(self) -> int:
        return self.compactor.estimate_chars(self._messages)

    @property
    def timeline(self) -> list[ContextSample]:
        """**contract** One sample per model call, oldest first (what was sent, the steps before it, usage)."""
        return list(self._timeline.samples)

    def _append(self, message: Message, reason: str) -> HistoryChanged:
        start = len(self._messages)
        self._messages.append(message)
        if self.session is not None:
            self.session.message(message)
        return self._changed((Splice(start, 0, (message,)),), reason)

    def _replace(
        self, messages: Sequence[Message], reason: str, changes: tuple[Splice, ...] | None = None
    ) -> HistoryChanged | None:
        """Make the history `messages`; `changes`, when the compactor reported them, saves the diff."""
        if changes is None:
            changes = splice_between(self._messages, messages)
        if not changes:
            return None
        self._messages.apply(changes)
        if self.session is not None:
            self.session.change(changes, self._messages, reason)
        return self._changed(changes, reason)

    def _changed(self, changes: tuple[Splice, ...], reason: str) -> HistoryChanged:
        return HistoryChanged(len(self._messages), self.chars, changes, reason)

    async def measure(self) -> ContextMeasured:
        """The figures of the history as it is now (tokens counted off the event loop)."""
        tokens: int | None
        try:
            tokens = await self.tokens.count_async(self._messages)
        except Exception:
            tokens = None
        return ContextMeasured(
            chars=self.chars,
            limit=self.compactor.settings.context_char_limit,
            messages=len(self._messages),
            tokens=tokens,
            input_tokens=self.last_input_tokens,
        )

    async def count_next_request(self, debounce: float = 0.0) -> TokenCount:
        """The size of the next request: exact from the model's count_tokens, else the labelled estimate."""
        return await count_next_request(
            self.model, self.tokens, system=self.system_prompt, messages=self._messages,
            tools=self.toolbox.schemas, debounce=debounce,
        )

    def new_session(self) -> HistoryChanged:
        """Forget the history and start a new session file (archives and old sessions stay on disk)."""
        changes = self._messages.replace([])
        self.last_request = ""
        self.last_input_tokens = None
        self.allowed_for_session.clear()
        self.compactions.clear()
        self.compactor.pinned = frozenset()
        self._timeline = Timeline(self._timeline.price, offline=self._timeline.offline)  # cost is per session
        if self.session is not None:
            previous = self.session
            self.session = SessionLog.create(self.settings.state_dir, {"model": self.model.name})
            previous.close_soon()
        return self._changed(changes, "new session")

    async def resume(self, path: Path) -> HistoryChanged:
        """Continue the session in `path` (the session picker): its validated history replaces this
        one and a new session file records it, as `--resume` does at start. Minimal on purpose: the
        timeline, compaction record and session permissions start empty, as after `new_session`."""
        self._idle("resume a session")
        replay = await asyncio.to_thread(SessionLog.replay, path, self.settings.undo_depth)
        self._idle("resume a session")
        self.new_session()
        changes = self._messages.replace(replay.messages)
        self.last_request = _last_request(self._messages)
        self.resumed_from = str(path)
        self._take_over(replay.compactions, replay.pins)
        return self._changed(changes, "resume")

    def _take_over(self, undo: Sequence[Compaction], pins: Sequence[str]) -> None:
        """A resumed history's undo records and pins (those still in it) become this session's,
        and the new session file starts with them."""
        usable: list[Compaction] = []
        following: Sequence[Message] = self._messages
        for record in reversed(undo):  # newest first: what each left must start what followed it
            if len(following) < len(record.after) or any(
                    a != b for a, b in zip(following, record.after, strict=False)):
                break
            usable.append(record)
            following = record.before
        self.compactions = usable[::-1][-self.settings.undo_depth:] if self.settings.undo_depth else []
        self._log_resumed(self.compactions)
        kept = frozenset(key for key in pins if _pin_target(self._messages, key) is not None)
        if kept:
            self.compactor.pinned = kept
            if self.session is not None:
                self.session.pins(kept)

    # --- the turn -------------------------------------------------------------------------------

    async def run_turn(self, text: str) -> AsyncIterator[AgentEvent]:
        """Run one user turn to the end, yielding every event as it happens."""
        if self.running:
            yield ErrorEvent("a turn is already running", "busy")
            return
        self.running = True
        turn = _Turn(text)
        self.last_request = text
        try:
            async with contextlib.aclosing(self._turn(turn)) as events:
                async for event in events:
                    yield self._log(event)
                    if notice := self._session_notice():
                        yield notice
            if turn.error is not None:
                yield self._log(ErrorEvent(turn.error, turn.error_kind))
            turn.finished = True
            usage = dict(turn.response.usage) if turn.response is not None and turn.error is None else {}
            yield TurnFinished(turn.final_text, error=turn.error, usage=usage)
        finally:
            self._finish(turn)

    async def _turn(self, turn: _Turn) -> AsyncGenerator[AgentEvent, None]:
        """Prepare, one model call, one tool batch; again until the model stops calling tools."""
        async for event in self._add_request(turn.request):
            yield event
        yield TurnStarted(turn.request)
        if self._announce is not None:
            yield self._announce
            self._announce = None
        reactive_retries = 0
        for _ in range(self.max_steps):
            async for event in self._prepare():
                yield event
            measured = await self.measure()
            yield measured
            turn.response = None
            self._timeline.start(measured.chars, measured.messages, measured.tokens)
            try:
                async with contextlib.aclosing(self._call_model(turn)) as stream:
                    async for event in stream:
                        yield event
            except ModelError as error:
                yield ContextSampled(self._timeline.finish(None, str(error)))
                if not isinstance(error, PromptTooLongError):
                    turn.fail(str(error), error.kind)
                    return
                if reactive_retries >= self.compactor.settings.max_reactive_retries:
                    turn.fail(f"the API still refuses the context after reactive compaction: {error}", error.kind)
                    return
                reactive_retries += 1
                async for event in self._compaction("reactive_compact", None):
                    yield event
                continue
            response = turn.response
            yield ContextSampled(self._timeline.finish(None if response is None else response.usage))
            if response is None:
                turn.fail("the model stream ended without a message", "api")
                return
            async for event in self._record_reply(turn, response):
                yield event
            if not turn.batch:
                yield await self.measure()
                return
            async for event in self._run_tools(turn):
                yield event
        turn.fail(f"stopped after {self.max_steps} model calls in one turn", "limit")

    async def _add_request(self, request: str) -> AsyncGenerator[AgentEvent, None]:
        """Append the request so that the model sees one clear request.

        A turn that failed leaves its request unanswered at the end of the history. The same text
        sent again is that request again (kept once); a different one follows the earlier request,
        which is marked as unanswered so the model does not take both for the current one (unless
        it is pinned: a pinned message stays byte-exact).
        """
        last = self._messages[-1] if self._messages else None
        # a pinned message is never rewritten (it may also just follow a summary that carried it)
        if last is not None and _unanswered_request(last) and user_pin_key(last) not in self.pinned:
            if last["content"] == request:
                return
            marked = {**last, "content": f"{UNANSWERED_MARK}\n{last['content']}"}
            if changed := self._replace([*self._messages[:-1], marked], "unanswered request"):
                yield changed
        if len(json.dumps(request, ensure_ascii=False)) > self.compactor.settings.context_char_limit:
            yield Notice(
                f"this message alone is {len(request):,} chars, over the {self.compactor.settings.context_char_limit:,}"
                "-char context limit: no compaction step can shrink it (archive it as a file for the model to read)",
                "warning",
            )
        yield self._append({"role": "user", "content": request}, "user")

    async def _call_model(self, turn: _Turn) -> AsyncGenerator[AgentEvent, None]:
        """Stream one model call; the complete reply lands in `turn.response`."""
        stream = self.model.stream(
            system=self.system_prompt,
            messages=self._messages,
            tools=self.toolbox.schemas,
            max_tokens=self.settings.max_tokens,
        )
        async with contextlib.aclosing(stream):  # type: ignore[type-var]  # the protocol says AsyncIterator
            async for chunk in stream:
                if isinstance(chunk, TextChunk):
                    yield TextDelta(chunk.text)
                elif isinstance(chunk, Retrying):
                    yield Notice(f"retrying: {chunk.message}", "retry")
                else:
                    turn.response = chunk

    async def _record_reply(self, turn: _Turn, response: ModelResponse) -> AsyncGenerator[AgentEvent, None]:
        """Append the complete assistant message; its tool calls become the batch to answer."""
        if response.prompt_tokens:
            self.last_input_tokens = response.prompt_tokens  # with caching, input_tokens is only the uncached part
        content = [block for block in response.content if isinstance(block, dict)]
        if not content:
            content = [{"type": "text", "text": "(no reply)"}]
        turn.batch = [block for block in content if block.get("type") == "tool_use"]
        turn.answered = []
        yield self._append({"role": "assistant", "content": content}, "assistant")
        yield AssistantMessage(content, response.stop_reason)
        turn.final_text = text_of({"content": content}) or turn.final_text

    async def _run_tools(self, turn: _Turn) -> AsyncGenerator[AgentEvent, None]:
        """Run the batch in order (asking for consent where needed), then the compact tool if called."""
        compact_requested = False
        compact_focus: str | None = None
        for block in turn.batch:
            tool_use_id = str(block.get("id"))
            name = str(block.get("name", ""))
            raw_input = block.get("input")
            tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
            yield ToolCallStarted(tool_use_id, name, tool_input)
            allowed = True
            if self.toolbox.needs_permission(name, tool_input) and not self._pre_approved(name):
                reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()
                preview = await self.toolbox.permission_preview(name, tool_input)
                turn.waiting = reply
                yield PermissionRequested(tool_use_id, name, tool_input, reply, preview)
                choice = await asyncio.shield(reply)  # a cancel leaves `reply` to `_finish`, which denies it
                turn.waiting = None
                if choice == "session":
                    self.allowed_for_session.add(name)
                allowed = choice in ("once", "session")
            started = time.monotonic()
            output = await self.toolbox.run(name, tool_input) if allowed else ToolOutput(PERMISSION_DENIED, is_error=True)
            elapsed = time.monotonic() - started
            if name == "compact" and output.content == COMPACT_TOOL_OUTPUT:
                compact_requested = True
                focus = tool_input.get("focus")
                compact_focus = str(focus) if focus else compact_focus
            result: Message = {"type": "tool_result", "tool_use_id": block.get("id"), "content": output.content}
            if output.is_error:
                result["is_error"] = True
            turn.answered.append(result)
            yield ToolCallFinished(
                tool_use_id, name, tool_input, output.content, len(output.content), elapsed, output.is_error
            )
        answered, turn.batch, turn.answered = turn.answered, [], []
        yield self._append({"role": "user", "content": answered}, "tools")
        if compact_requested:
            async for event in self._compaction("compact_history", compact_focus):
                yield event
            yield await self.measure()

    def _pre_approved(self, tool: str) -> bool:
        return self.allow_all or tool in self.allowed_for_session

    def _finish(self, turn: _Turn) -> None:
        """The one place a turn ends (completed, failed, cancelled or closed): repair and record it."""
        if turn.waiting is not None and not turn.waiting.done():
            turn.waiting.set_result("deny")
        self._timeline.abandon("cancelled")
        if turn.batch:
            done = {result.get("tool_use_id") for result in turn.answered}
            results = [*turn.answered] + [
                interrupted_result(str(block.get("id"))) for block in turn.batch if block.get("id") not in done
            ]
            self._append({"role": "user", "content": results}, "interrupted")
        self.running = False
        if not turn.finished and self.session is not None:
            self.session.record({"type": "event", "kind": "TurnCancelled", "event": {}})

    # --- compaction -----------------------------------------------------------------------------

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
            for step in self._take_steps():
                yield step
            if error.partial is not None and (changed := self._replace(error.partial, "prepare (partial)")):
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

    def _log_resumed(self, compactions: Sequence[Compaction]) -> None:
        """Start the new session file of a resumed session: the history, and the undo records it
        carries, so a resume of this file offers the same undo. With records, the log starts from
        the oldest record's history and replays each compaction (what came between them as plain
        changes), ending at the current history."""
        session = self.session
        if session is None or not self._messages:
            return
        if not compactions:
            session.replace(self._messages, "resume")
            return
        state: Sequence[Message] = compactions[0].before
        session.replace(state, "resume")
        for record in compactions:
            if changes := splice_between(state, record.before):
                session.change(changes, record.before, "resume")
            if changes := splice_between(record.before, record.after):
                session.compaction("resume", record.steps, record.files)
                session.change(changes, record.after, "resume")
            state = record.after
        if changes := splice_between(state, self._messages):
            session.change(changes, self._messages, "resume")

    def _take_steps(self) -> list[CompactionStep]:
        steps, self._steps[:] = list(self._steps), []
        for step in steps:
            self._timeline.note_step(step.step, step.saved)
        return steps

    # --- steering (the user's hand on the context) -------------------------------------------

    def _idle(self, action: str) -> None:
        if self.running:
            raise SteeringError(f"cannot {action} while a turn is running")

    async def drop(self, tool_use_id: str) -> HistoryChanged | None:
        """Archive one tool result now and leave a placeholder, exactly as micro_compact would."""
        self._idle("drop a result")
        messages, path = await drop_result(self._messages, self.archive, tool_use_id)
        self._log(Notice(f"dropped the result of {tool_use_id}: saved at {path}"))
        return self._replace(messages, "drop")

    async def restore(self, path: str) -> HistoryChanged | None:
        """The archived text at `path` is back in context, byte-exact (at its place when its marker is
        still there, else appended as a labelled message). Refused when it alone is over the limit."""
        self._idle("restore a result")
        messages, where = await restore_result(
            self._messages, self.archive, path, self.compactor.settings.context_char_limit
        )
        self._log(Notice(f"restored {path} ({where})"))
        return self._replace(messages, "restore")

    async def undo_compaction(self) -> HistoryChanged | None:
        """Reverse the last compaction: what it removed is back, byte-exact and in place, and every
        message added after it stays after it. Falsy when there is nothing to undo."""
        self._idle("undo a compaction")
        if not self.compactions:
            return None
        last = self.compactions[-1]
        messages = undo(self._messages, last)
        self.compactions.pop()
        self._log(Notice(f"undid {' + '.join(last.steps)} (its files stay in the archive)"))
        return self._replace(messages, "undo")

    @property
    def pinned(self) -> frozenset[str]:
        """What every compaction step keeps byte-exact: tool_use ids (their results, in a pair with
        the tool_use) and `user:` keys of user messages (`core.history.user_pin_key`)."""
        return self.compactor.pinned

    async def pin(self, tool_use_id: str) -> Notice:
        """Pin a tool result (by its tool_use id) or a user message (by its `user:` key, see
        `pin_key`): every step keeps it byte-exact. Saved with the session.

        The notice it returns is a warning when the pinned items alone are over the context limit.
        """
        what = self._pin_label(tool_use_id)
        if tool_use_id in self.pinned:
            return Notice(f"{what} is already pinned")
        if _pin_target(self._messages, tool_use_id) is None:
            if tool_use_id.startswith(USER_PIN_PREFIX):
                raise SteeringError(f"no user message {tool_use_id!r} in the context")
            raise SteeringError(f"no tool result for {tool_use_id!r} in the context "
                                "(tool results and user messages can be pinned)")
        self._set_pins(self.pinned | {tool_use_id})
        return self._pins_notice(f"pinned {what}: every compaction step keeps it byte-exact")

    async def unpin(self, tool_use_id: str) -> Notice:
        """Unpin a tool result or a user message; compaction may shorten it again."""
        what = self._pin_label(tool_use_id)
        if tool_use_id not in self.pinned:
            raise SteeringError(f"{what} is not pinned")
        self._set_pins(self.pinned - {tool_use_id})
        return self._pins_notice(f"unpinned {what}")

    def pin_key(self, index: int) -> str | None:
        """The key `pin` takes for the message at `index`: its tool_use id for a message of one
        tool result, its `user:` key for a user message of text, else None (a marker, a reply)."""
        if not 0 <= index < len(self._messages):
            return None
        message = self._messages[index]
        ids = tool_result_ids(message)
        if len(ids) == 1:
            return ids[0]
        return user_pin_key(message)

    def _pin_label(self, key: str) -> str:
        """How a notice names what `key` pins: a user message by its first words."""
        if not key.startswith(USER_PIN_PREFIX):
            return f"the result of {key}"
        index = find_user_message(self._messages, key)
        if index is None:
            return f"the user message {key}"
        return f"the user message {one_line(text_of(self._messages[index]), 40)!r} ({key})"

    def _set_pins(self, ids: frozenset[str]) -> None:
        self.compactor.pinned = ids
        if self.session is not None:
            self.session.pins(ids)

    def pinned_chars(self) -> int:
        """The JSON size of what is pinned (results with their tool_use blocks, user messages), as
        the summary carries them."""
        parts: list[Any] = []
        for key in self.pinned:
            target = _pin_target(self._messages, key)
            if target is None:
                continue
            index, block_index = target
            message = self._messages[index]
            parts.append(message if block_index is None else message["content"][block_index])
        return len(json.dumps(parts, default=str, ensure_ascii=False))

    def _pins_notice(self, text: str) -> Notice:
        limit = self.compactor.settings.context_char_limit
        size = self.pinned_chars() if self.pinned else 0
        if size > limit:
            notice = Notice(
                f"{text}; the pinned items alone are {size:,} chars, over the {limit:,}-char limit: "
                "compaction cannot bring the context under it (unpin some)", "warning")
        else:
            notice = Notice(text)
        self._log(notice)
        return notice

    async def preview(self) -> list[CompactionStep]:
        """What the next prepare would do now, step by step (writes nothing, calls no model)."""
        self._idle("preview the next call")
        return await self.compactor.dry_run(self._messages, self.last_request)

    async def recompact_warning(self) -> Notice | None:
        """After an undo: a warning when automatic compaction would compact again on the next call."""
        if not self.auto_compact or self.running:
            return None
        fired = [step.step for step in await self.preview() if step.saved > 0 or step.step == "compact_history"]
        if not fired:
            return None
        notice = Notice(
            f"automatic compaction is on: the next call would run {' + '.join(dict.fromkeys(fired))} again; "
            "pause it, or compact with a focus instead", "warning")
        self._log(notice)
        return notice

    async def draft_summary(self, focus: str | None = None) -> str:
        """A summary of the history as a manual compact would ask for it; changes nothing.

        Review (and edit) it, then `compact(focus, summary=text)` puts exactly that text in.
        """
        self._idle("draft a summary")
        if not self._messages:
            raise SteeringError("nothing to summarise yet")
        summarize = self.compactor.summarize
        if summarize is None:
            raise SteeringError("no summarizer configured")
        text = conversation_text(self._messages, self.compactor.settings.summary_input_char_limit)
        try:
            summary = await summarize(text, focus)
        except Exception as error:
            raise SteeringError(f"the summary failed: {error_line(error)}") from error
        if not isinstance(summary, str) or not summary.strip():
            raise SteeringError("the summary came back empty")
        return summary

    async def archive_request(self, text: str) -> str:
        """Save a request too long for the context in the archive; returns the short message to send instead.

        The message names the file (the model reads it with read_file) and keeps a preview.
        """
        name = f"user-request-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
        path = await self.archive.save_tool_result(name, text)
        preview = text[: self.compactor.settings.fit_preview_chars]
        return (
            f"[My message is {len(text):,} chars long, too long for the context: it is saved whole at {path}. "
            f"Read it with read_file (offset/limit) before answering.]\n\nIts beginning:\n{preview}"
        )

    async def compact(self, focus: str | None = None, summary: str | None = None) -> AsyncIterator[AgentEvent]:
        """Compact the history now, on the user's request (the focus goes into the summary request).

        `summary` (e.g. a reviewed `draft_summary`) is used exactly as given instead of asking the model.
        """
        if self.running:
            yield ErrorEvent("cannot compact while a turn is running", "busy")
            return
        if not self._messages:
            yield ErrorEvent("nothing to compact yet", "compaction")
            return
        self.running = True
        try:
            async with contextlib.aclosing(self._compaction("compact_history", focus, summary)) as events:
                async for event in events:
                    yield self._log(event)
                    if notice := self._session_notice():
                        yield notice
            yield await self.measure()
        finally:
            self.running = False

    # --- the session log ------------------------------------------------------------------------

    def _log(self, event: AgentEvent) -> AgentEvent:
        """Record the events the session log keeps; hand the event back."""
        if self.session is not None and isinstance(event, CompactionStep | Notice | ErrorEvent):
            self.session.event(event)
        return event

    def _session_notice(self) -> Notice | None:
        """A notice the first time the session log fails to write (and again if the failure changes)."""
        error = self.session.error if self.session is not None else None
        if error and error != self._session_error:
            self._session_error = error
            return self._log(Notice(f"{error} (kept in memory, retried on the next write)", "session"))  # type: ignore[return-value]
        return None

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
        await self.model.aclose()


UNANSWERED_MARK = "[An earlier request that got no answer: the turn ended before a reply. The current request follows.]"


def _with_instructions(summarize: Summarize, instructions: str) -> Summarize:
    """`summarize` with the user's standing summary instructions added to every focus."""

    async def summarize_with(text: str, focus: str | None) -> str:
        standing = f"Always: {instructions.strip()}"
        return await summarize(text, f"{focus}\n{standing}" if focus else standing)

    summarize_with.__wrapped__ = summarize  # type: ignore[attr-defined]
    return summarize_with


def _unanswered_request(message: Message) -> bool:
    """A plain user request (not a marker, not tool results) that no assistant message answered."""
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and not content.startswith(UNANSWERED_MARK)
        and parse_marker(content) is None
    )


def _last_request(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def make_model(settings: Settings) -> Model:
    """The Anthropic model when a key is configured (and --offline is not set), else the offline one."""
    if settings.use_offline:
        from core.model.offline import OfflineModel

        why = "offline model (--offline)" if settings.offline else "offline model (no API key)"
        return OfflineModel(chunk_delay=settings.offline_chunk_delay, label=why)
    from core.model.anthropic import AnthropicModel

    return AnthropicModel(
        settings.model,
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
        timeout=settings.request_timeout,
        max_retries=settings.max_retries,
        retry_after_cap=settings.retry_after_cap,
    )


__all__ = ["PERMISSION_CHOICES", "Agent", "make_model"]


def _pin_target(messages: Sequence[Message], key: str) -> tuple[int, int | None] | None:
    """Where what `key` pins is: (message, block) of a tool result, (message, None) of a user message."""
    if key.startswith(USER_PIN_PREFIX):
        index = find_user_message(messages, key)
        return None if index is None else (index, None)
    return find_result(messages, key)
