"""One call of the compactor: what its steps reported, the list they made so far, and the archive writes.

A `CompactionRun` lives for one prepare, one compact, one reactive compaction or one dry run. The
steps report through it (`emit`), so the call that made the run hands the steps out as events in the
order they happened; it follows the list the steps derive from each other (`derived`), so the call
knows the splices from its input to its result without diffing; and it does every archive write of
the steps (`save_planned`, `save_transcript`): the one save-then-replace helper (`apply_plan`) saves
every planned file before anything is replaced. A dry run writes nothing: it names the files as the
archive would and remembers them, so the rest of the run trusts them as if they had been written.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.archive import Archive, ArchiveError, SavedTranscript
from core.compaction.plans import TRANSCRIPT_PATH_ESTIMATE, Editor, Replacement, unchanged
from core.compaction.settings import CompactionError
from core.events import CompactionStep, StepName
from core.facts.entries import Removed, count_removed, result_entry
from core.history.sizes import dumps, message_chars
from core.history.store import HistorySizer
from core.markers import parse_marker
from core.model.base import Retrying, SummaryUsage
from core.values.records import LedgerEntry
from core.values.splice import Splice

Message = dict[str, Any]
EventSink = Callable[[CompactionStep], Any]
CountTokens = Callable[[str], int]


@dataclass(frozen=True)
class StepPart:
    """One applied step of a call: its event (with what it took out) and its splices, each to the
    list the step before it left."""

    step: CompactionStep
    changes: tuple[Splice, ...]


@dataclass(frozen=True)
class Outcome:
    """How a compactor call ended: the history it made (its input itself when no step fired), the
    splices from the input to it, and the error that stopped it (then `messages` is what the steps
    before the failure made, lossless, and may still be used). `parts` split `changes` by step."""

    messages: Sequence[Message]
    changes: tuple[Splice, ...]
    error: CompactionError | None = None
    parts: tuple[StepPart, ...] = ()


Report = Retrying | SummaryUsage
"""What a summary call inside a compactor call reports as it goes: each retry, and its usage."""

CompactionEvent = CompactionStep | Retrying | SummaryUsage | Outcome
"""What a compactor call yields: each step as it is done, a notice per retry inside a summary call,
each summary call's usage, and last its `Outcome`."""


class CompactionRun:
    """The state of one compactor call (see the module docstring)."""

    def __init__(
        self,
        archive: Archive,
        sizer: HistorySizer,
        base: Sequence[Message],
        *,
        dry: bool = False,
        sink: EventSink | None = None,
        count_tokens: CountTokens | None = None,
        restore_limit: int | None = None,
    ) -> None:
        self.archive = archive
        self.sizer = sizer
        self.dry = dry
        self.sink = sink  # a direct step call outside a run: its events go here at once
        self.count_tokens = count_tokens  # the ledger entries' tokens (none in a dry run)
        self.restore_limit = restore_limit  # a result larger than this cannot be restored (the char limit)
        self.events: list[CompactionStep] = []
        self.result: Sequence[Message] = base
        self.changes: tuple[Splice, ...] = ()
        self.parts: tuple[StepPart, ...] = ()
        self._emitted: CompactionStep | None = None  # the newest step's event, until its splices come
        self._dry_saved: set[tuple[str, str]] = set()  # (path, tool_use_id) a dry run would have saved
        self._archived_sizes: dict[str, int] = {}  # path -> JSON length of the text saved there

    # --- what the steps report -------------------------------------------------------------------

    async def emit(
        self,
        step: StepName,
        before: int,
        after: int,
        affected: int,
        files: Sequence[str],
        detail: str = "",
        at: tuple[int, int] | None = None,
        removed: Sequence[Removed] = (),
    ) -> None:
        """Report a step; `at` is the (message, block) of the first block it changed (None: nothing),
        `removed` what it took out of the context (its ledger entries, with the values their tokens are
        counted from)."""
        event = CompactionStep(
            step,
            before,
            after,
            affected,
            tuple(files),
            detail,
            changed_at=at,
            ledger=await self._entries(removed),
        )
        self._emitted = event
        if self.sink is None:
            self.events.append(event)
            return
        reply = self.sink(event)
        if inspect.isawaitable(reply):
            await reply

    async def not_applied(self, step: StepName, before: int, would_be: int, why: str) -> None:
        """Say that a step was refused because its result would not be smaller than its input."""
        await self.emit(step, before, before, 0, (), f"not applied: {why} ({before:,} -> {would_be:,} chars)")

    async def _entries(self, removed: Sequence[Removed]) -> tuple[LedgerEntry, ...]:
        if not removed:
            return ()
        if self.count_tokens is None or self.dry:
            return tuple(entry for entry, _ in removed)
        return await asyncio.to_thread(count_removed, removed, self.count_tokens)

    def take(self) -> list[CompactionStep]:
        """The steps reported since the last call, oldest first."""
        events, self.events = self.events, []
        return events

    def outcome(self, error: CompactionError | None = None) -> Outcome:
        return Outcome(self.result, self.changes, error, self.parts)

    async def drive(self, body: AsyncIterator[Report | None]) -> AsyncIterator[CompactionEvent]:
        """The call's events: the steps `body` reported each time it yields (None, or a retry or a
        summary's usage to pass on), then the Outcome; a CompactionError ends it with the Outcome of
        what was done."""
        try:
            async with contextlib.aclosing(body):  # type: ignore[type-var]
                async for retry in body:
                    for step in self.take():
                        yield step
                    if retry is not None:
                        yield retry
        except CompactionError as error:
            for step in self.take():
                yield step
            yield self.outcome(error)
            return
        for step in self.take():
            yield step
        yield self.outcome()

    # --- the list the steps make --------------------------------------------------------------------

    def sized(
        self,
        base: Sequence[Message],
        result: list[Message],
        changes: tuple[Splice, ...],
        chars: int | None = None,
    ) -> list[Message]:
        """`result` is `base` with `changes`: the sizer sizes it from the changed messages only."""
        self.sizer.derive(base, result, changes, chars)
        return result

    def derived(
        self,
        base: Sequence[Message],
        result: list[Message],
        changes: tuple[Splice, ...],
        chars: int | None = None,
    ) -> list[Message]:
        """A step returns `result`, made from `base` by `changes`: it is the run's newest list."""
        self.sized(base, result, changes, chars)
        if self.result is base:
            self.result, self.changes = result, self.changes + changes
            if self._emitted is not None:
                self.parts += (StepPart(self._emitted, changes),)
        self._emitted = None
        return result

    # --- writing what leaves the context --------------------------------------------------------------

    async def apply_plan(
        self,
        messages: Sequence[Message],
        plan: list[Replacement],
        render: Callable[[Replacement], str],
        step: StepName,
        detail: Callable[[list[Replacement]], str],
    ) -> list[Message]:
        """The one save-then-replace helper: save every planned result, then (only then) replace.

        A block whose rendering with the real path would not be shorter than what it replaces
        (the archive gave a longer name than expected) keeps its content; its file stays saved.
        """
        if not plan:
            return unchanged(messages)
        before = self.sizer.measure(messages)
        files = await self.save_planned(plan)
        editor = Editor(messages, before)
        done: list[Replacement] = []
        for item in plan:
            replacement = render(item)
            if item.old_size is not None and message_chars(replacement) >= item.old_size:
                continue
            editor.set_block_content(item.index, item.block_index, replacement, item.old_size)
            done.append(item)
        if not done:
            return unchanged(messages)
        first = min((item.index, item.block_index) for item in done)
        removed = [
            result_entry(
                step,
                messages,
                item.index,
                item.block_index,
                item.saved_path,
                await self._restorable(item),
                self._measured(messages, item),
            )
            for item in done
        ]
        await self.emit(step, before, editor.chars, len(editor.changed), files, detail(done), first, removed)
        return self.derived(messages, editor.messages, editor.splices(), editor.chars)

    @staticmethod
    def _measured(messages: Sequence[Message], item: Replacement) -> int | None:
        """The JSON length of the content `item` replaces, when the plan measured that very block."""
        if item.old_size is not None and messages[item.index]["content"][item.block_index] is item.block:
            return item.old_size
        return None

    async def _restorable(self, item: Replacement) -> bool:
        """`Agent.restore` would bring the result back: its archived text is not over the limit alone.
        A dry run decides as the real one does (a file it only named is sized from the text it planned)."""
        if self.restore_limit is None:
            return True
        path = item.saved_path
        size = self._archived_sizes.get(path)
        if size is None:
            if item.text is not None and item.old_size is not None and item.block.get("content") is item.text:
                size = self._archived_sizes[path] = (
                    item.old_size
                )  # the planned text is the content it measured
            else:
                try:
                    text = item.text if item.text is not None else await self.archive.read_text(path)
                except ArchiveError:
                    return False
                size = self._archived_sizes[path] = len(dumps(text))
        return size <= self.restore_limit

    async def save_planned(self, plan: list[Replacement]) -> list[str]:
        """Save every planned result that has no file yet, in one batch; returns the new files.

        Nothing is replaced before all saves succeeded.
        """
        pending = [item for item in plan if item.path is None]
        if self.dry:
            for item in pending:
                item.path = self.archive.expected_tool_result_path(item.tool_use_id)
                self._dry_saved.add((item.path, item.tool_use_id))
            return [item.saved_path for item in pending]
        try:
            paths = await self.archive.save_tool_results(
                [(item.tool_use_id, item.text or "") for item in pending]
            )
        except ArchiveError as error:
            raise CompactionError(f"compaction stopped, nothing replaced: {error}") from error
        for item, path in zip(pending, paths, strict=True):
            item.path = path
        return paths

    async def save_transcript(self, messages: Sequence[Message]) -> SavedTranscript | None:
        """The whole list archived, with each message's size (None in a dry run: nothing is written)."""
        if self.dry:
            return None
        try:
            return await self.archive.save_transcript(messages)
        except ArchiveError as error:
            raise CompactionError(f"compaction stopped, nothing replaced: {error}") from error

    async def transcript(self, messages: Sequence[Message]) -> tuple[str, tuple[int, ...] | None]:
        """The whole list archived: its path and each message's JSON length (in a dry run the name it
        would have, and no lengths)."""
        saved = await self.save_transcript(messages)
        return (saved.path, saved.sizes) if saved is not None else (TRANSCRIPT_PATH_ESTIMATE, None)

    # --- what the archive vouches for ----------------------------------------------------------------

    def own_persisted_path(self, content: Any, tool_use_id: str) -> str | None:
        """The path of a <persisted-output> block this archive wrote for this tool_use id, else None.

        Trusting a path alone would let tool output that merely looks like a marker pass as
        already archived, and its text would be saved nowhere: the manifest must vouch for the
        path and the id, and the file must start with the block's preview.
        """
        marker = parse_marker(content)
        if marker is None or marker.kind != "persisted":
            return None
        if (marker.path, tool_use_id) in self._dry_saved:
            return marker.path
        return marker.path if self.archive.is_own(marker.path, tool_use_id, marker.preview) else None

    def own_snip_count(self, message: Message) -> int | None:
        """How many messages an earlier snip marker of this archive stands for, else None."""
        if not isinstance(message, dict) or message.get("role") != "user":
            return None
        marker = parse_marker(message.get("content"))
        if marker is None or marker.kind != "snip" or marker.count is None:
            return None
        return marker.count if self.archive.is_own(marker.path) else None


def first_change(changes: Sequence[Splice]) -> tuple[int, int] | None:
    """(message, 0) of the first message a list of splices changes (None: none)."""
    return (min(change.start for change in changes), 0) if changes else None


async def finish(events: AsyncIterator[CompactionEvent], sink: EventSink | None) -> Outcome:
    """Drain a call for a caller that wants only its result: each step to `sink`, its error raised
    (with `partial`, the lossless list the steps before the failure made, or None)."""
    outcome: Outcome | None = None
    async with contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, CompactionStep) and sink is not None:
                reply = sink(event)
                if inspect.isawaitable(reply):
                    await reply
            elif isinstance(event, Outcome):
                outcome = event
    assert outcome is not None, "a compactor call ends with its Outcome"
    if outcome.error is not None:
        outcome.error.partial = list(outcome.messages) if outcome.changes else None
        raise outcome.error
    return outcome
