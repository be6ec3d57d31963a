"""The context's keeper: the compactor run on the conversation, the pins, what undo can reverse.

`prepare` runs the pipeline before a model call (unless automatic compaction is paused) and `compact`
runs compact_history (the compact tool, the user) or reactive_compact (an API refusal); both yield
the events of the compactor's call as they happen (each step, a retry notice per retry inside a
summary call) and then the `HistoryChanged` of the change they applied. A failed step keeps what
the steps before it did. An applied compaction is kept (the newest `undo_depth`) so that `undo`
can reverse it.

The steering actions (pin, unpin, drop, restore, undo, preview, the draft summary) each hand back
the change or the notice they made; the history work itself is done by `core.compaction.steering`.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

from core.agent.conversation import Conversation
from core.agent.state import ConversationState
from core.archive import Archive, ArchiveError
from core.compaction.pipeline import Compactor
from core.compaction.review import review_summary
from core.compaction.run import CompactionEvent, Outcome
from core.compaction.settings import CompactionError
from core.compaction.steering import (
    Compaction,
    SignedBlockError,
    SteeringError,
    drop_result,
    find_result,
    pin_target,
    pin_targets,
    restore_result,
    undo,
)
from core.events import (
    AgentEvent,
    CompactionHeld,
    CompactionStep,
    ErrorEvent,
    HistoryChanged,
    NextCallPreview,
    Notice,
)
from core.facts.entries import count_removed, result_entry
from core.facts.extract import facts_of
from core.facts.index import Part
from core.facts.ledger import Ledger
from core.facts.rebuild import archived_facts
from core.history.messages import USER_PIN_PREFIX, find_user_message, text_of, tool_result_ids, user_pin_key
from core.history.sizes import dumps, estimate_chars, request_chars, request_oversize
from core.markers import kept_note
from core.model.base import Retrying, SummaryUsage
from core.text import one_line
from core.values.records import LedgerEntry

Message = dict[str, Any]
SummaryStep = Literal["compact_history", "reactive_compact"]


class ContextKeeper:
    """Keeps the conversation's context under its limit, and takes the user's hand on it."""

    def __init__(
        self,
        state: ConversationState,
        compactor: Compactor,
        *,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        self.state = state
        self.compactor = compactor
        self.count_tokens = count_tokens
        """Counts the tokens of what a drop takes out (its ledger entry); the compactor has its own."""
        conversation = state.conversation
        if conversation.history:  # a history handed in: the facts behind its markers are in the archive
            conversation.facts.add_archived(archived_facts(conversation.history, self.archive))

    @property
    def conversation(self) -> Conversation:
        return self.state.conversation

    @property
    def ledger(self) -> Ledger:
        return self.state.ledger

    @property
    def compactions(self) -> list[Compaction]:
        return self.state.compactions

    @property
    def auto_compact(self) -> bool:
        return self.state.auto_compact

    @property
    def undo_depth(self) -> int:
        return self.state.undo_depth

    @property
    def archive(self) -> Archive:
        return self.compactor.archive

    @property
    def limit(self) -> int:
        return self.compactor.settings.context_char_limit

    # --- compacting -------------------------------------------------------------------------------

    async def prepare(self, request: str, hold: bool = False) -> AsyncIterator[AgentEvent | SummaryUsage]:
        """The pipeline before a model call; a failed step keeps what succeeded and the turn goes on.
        `hold`: only the steps that leave the cached prefix alone run (cache-aware timing, warm cache)."""
        chars = self.conversation.chars
        if not self.auto_compact:
            if chars > self.limit:
                yield Notice(
                    f"automatic compaction is paused: the context is {chars:,} chars, over the "
                    f"{self.limit:,}-char limit (the API may refuse it; reactive compaction still guards that)",
                    "warning",
                )
            return
        events = self.compactor.prepare_events(self.conversation.history, request, hold)
        async for event in self._applied(events, "prepare"):
            yield event

    async def compact(
        self, step: SummaryStep, request: str, focus: str | None = None, summary: str | None = None
    ) -> AsyncIterator[AgentEvent | SummaryUsage]:
        """compact_history (with `focus`, or the reviewed `summary` as it is) or reactive_compact; a
        failure is one ErrorEvent and nothing is replaced."""
        history = self.conversation.history
        if step == "reactive_compact":
            events = self.compactor.reactive_events(history, request)
        else:
            events = self.compactor.compact_events(history, request, focus, summary)
        async for event in self._applied(events, step):
            yield event

    async def _applied(
        self, events: AsyncIterator[CompactionEvent], reason: str
    ) -> AsyncIterator[AgentEvent | SummaryUsage]:
        """The events of a compactor call (a summary call's usage passed on for the timeline), then its
        change applied (and kept for undo)."""
        steps: list[CompactionStep] = []
        outcome: Outcome | None = None
        call = self.state.call_number
        async for event in events:
            if isinstance(event, Retrying):
                yield Notice(f"retrying: {event.message}", "retry")
            elif isinstance(event, SummaryUsage):
                yield event
            elif isinstance(event, CompactionStep):
                event = replace(event, ledger=self.ledger.stamp(event.ledger, call))
                steps.append(event)
                yield event
            else:
                outcome = event
        assert outcome is not None
        # what the steps before a failed one did is applied, and can be undone like any compaction
        try:
            changed = self._compacted(
                steps, outcome, reason if outcome.error is None else f"{reason} (partial)", call
            )
        except SignedBlockError as error:
            yield ErrorEvent(str(error), "compaction")
            return
        if changed:
            yield changed
            if notice := self._lost_notice(changed):
                yield notice
        if outcome.error is not None:
            label = {
                "prepare": "compaction",
                "compact_history": "compact",
                "reactive_compact": "reactive compaction",
            }.get(reason, reason)
            going_on = "; going on with the context as it is" if reason == "prepare" else ""
            yield ErrorEvent(f"{label}: {outcome.error}{going_on}", "compaction")

    def _compacted(
        self, steps: list[CompactionStep], outcome: Outcome, reason: str, call: int
    ) -> HistoryChanged | None:
        """Apply a compaction's splices, add what its steps took out to the ledger, and remember it for
        undo (the list before it is copied first: the history changes in place)."""
        if not outcome.changes:
            return None
        before = tuple(self.conversation.history)
        names = tuple(step.step for step in steps)
        files = tuple(path for step in steps for path in step.files_written)
        parts: list[Part] = [
            (len(part.changes), self.ledger.stamp(part.step.ledger, call)) for part in outcome.parts
        ]
        ledger = self.ledger.adding([entry for _, entries in parts for entry in entries])
        changed = self.conversation.compacted(
            outcome.changes, reason, names, files, undoable=bool(self.undo_depth), parts=parts, ledger=ledger
        )
        self.ledger.apply(ledger)
        if names and changed is not None:
            self.state.remember(Compaction(names, before, tuple(self.conversation.history), files))
        return changed

    def _lost_notice(self, changed: HistoryChanged) -> Notice | None:
        """After a change: the person's constraints it left out of the context, named (their exact
        text, which a view shows as data)."""
        lost = [fact.text for fact in changed.facts if fact.kind == "constraint" and not fact.visible]
        if not lost:
            return None
        verb = "is" if len(lost) == 1 else "are"
        notice = Notice(
            f"{len(lost)} of your constraints {verb} no longer visible: {'; '.join(lost)}", "warning"
        )
        self.conversation.log(notice)
        return notice

    def oversize(self, request: str) -> int | None:
        """The size of `request` as a message's content (JSON chars) when it alone is over the context
        limit, which no compaction step can shrink; None when it fits."""
        return request_oversize(request, self.limit)

    def oversize_notice(self, request: str) -> Notice | None:
        """A warning when `request` alone is over the context limit (no step can shrink it)."""
        if (size := self.oversize(request)) is None:
            return None
        return Notice(
            f"this message alone is {size:,} chars, over the {self.limit:,}"
            "-char context limit: no compaction step can shrink it (archive it as a file for the model to read)",
            "warning",
        )

    # --- the user's actions --------------------------------------------------------------------------

    async def drop(self, tool_use_id: str) -> HistoryChanged | None:
        """Archive one tool result now and leave a placeholder, exactly as micro_compact would; its
        ledger entry says what left."""
        history = self.conversation.history
        found = find_result(history, tool_use_id)
        messages, path = await drop_result(history, self.archive, tool_use_id)
        self.conversation.log(Notice(f"dropped the result of {tool_use_id}: saved at {path}"))
        entries: tuple[LedgerEntry, ...] = ()
        if found is not None:
            try:
                restorable = len(dumps(await self.archive.read_text(path))) <= self.limit
            except ArchiveError:
                restorable = False
            removed = [result_entry("drop", history, *found, path, restorable)]
            entries = (
                await asyncio.to_thread(count_removed, removed, self.count_tokens)
                if self.count_tokens is not None
                else (removed[0][0],)
            )
        entries = self.ledger.stamp(entries, self.state.call_number)
        ledger = self.ledger.adding(entries)
        changed = self.conversation.replace(messages, "drop", parts=[(-1, entries)], ledger=ledger)
        self.ledger.apply(ledger)
        return changed

    async def restore(self, path: str) -> HistoryChanged | None:
        """The archived text at `path` is back in context, byte-exact (at its place when its marker is
        still there, else appended as a labelled message). Refused when it alone is over the limit."""
        messages, where = await restore_result(self.conversation.history, self.archive, path, self.limit)
        self.conversation.log(Notice(f"restored {path} ({where})"))
        ledger = self.ledger.restoring(path)
        changed = self.conversation.replace(messages, "restore", ledger=ledger)
        self.ledger.apply(ledger)
        return changed

    async def undo(self) -> HistoryChanged | None:
        """Reverse the last compaction: what it removed is back, byte-exact and in place, and every
        message added after it stays after it. None when there is nothing to undo."""
        if not self.compactions:
            return None
        last = self.compactions[-1]
        messages = undo(self.conversation.history, last)
        self.compactions.pop()
        self.conversation.log(Notice(f"undid {' + '.join(last.steps)} (its files stay in the archive)"))
        ledger = self.ledger.undoing()
        changed = self.conversation.replace(messages, "undo", ledger=ledger)
        self.ledger.apply(ledger)
        return changed

    async def keep_fact(self, text: str, kind: str = "constraint") -> tuple[HistoryChanged | None, Notice]:
        """Make a fact visible again and keep it through every later step: pin the user message it
        came from while that is in the context, else add it as a short note pinned by its `user:` key.
        Both are in the session log (a pins record, the note as a message)."""
        facts = self.conversation.facts
        if facts.fact(kind, text) is None:
            raise SteeringError(f"no {kind} {text!r} in this conversation")
        history = self.conversation.history
        request = self.conversation.request
        for index in reversed(facts.holders(kind, text)):
            key = user_pin_key(history[index])
            # not the current request: a summary holds that in its marker, and a pin does not follow it there
            if (
                key is not None
                and history[index].get("content") != request
                and (kind, text) in dict(facts_of(history[index]))
            ):
                if key in self.pinned:
                    return None, Notice(f"the message with {text!r} is pinned already: every step keeps it")
                self._set_pins(self.pinned | {key})
                return None, self._pins_notice(f"kept {text!r}: its message is pinned, every step keeps it")
        note = {"role": "user", "content": kept_note(text)}
        changed = self.conversation.append(note, "keep")
        key = user_pin_key(note)
        assert key is not None
        self._set_pins(self.pinned | {key})
        return changed, self._pins_notice(
            f"kept {text!r}: added as a pinned note ({key}), every step keeps it"
        )

    @property
    def pinned(self) -> frozenset[str]:
        """What every compaction step keeps byte-exact: tool_use ids (their results, in a pair with
        the tool_use) and `user:` keys of user messages (`core.history.messages.user_pin_key`)."""
        return self.state.pinned

    def pin(self, key: str) -> Notice:
        """Pin a tool result (by its tool_use id) or a user message (by its `user:` key): every step
        keeps it byte-exact. A warning when the pinned items alone are over the context limit."""
        what = self._pin_label(key)
        if key in self.pinned:
            return Notice(f"{what} is already pinned")
        if pin_target(self.conversation.history, key) is None:
            if key.startswith(USER_PIN_PREFIX):
                raise SteeringError(f"no user message {key!r} in the context")
            raise SteeringError(
                f"no tool result for {key!r} in the context (tool results and user messages can be pinned)"
            )
        self._set_pins(self.pinned | {key})
        return self._pins_notice(f"pinned {what}: every compaction step keeps it byte-exact")

    def unpin(self, key: str) -> Notice:
        """Unpin a tool result or a user message; compaction may shorten it again."""
        what = self._pin_label(key)
        if key not in self.pinned:
            raise SteeringError(f"{what} is not pinned")
        self._set_pins(self.pinned - {key})
        return self._pins_notice(f"unpinned {what}")

    def pin_key(self, index: int) -> str | None:
        """The key `pin` takes for the message at `index`: its tool_use id for a message of one tool
        result, its `user:` key for a user message of text, else None (a marker, a reply)."""
        history = self.conversation.history
        if not 0 <= index < len(history):
            return None
        ids = tool_result_ids(history[index])
        return ids[0] if len(ids) == 1 else user_pin_key(history[index])

    def _pin_label(self, key: str) -> str:
        """How a notice names what `key` pins: a user message by its first words."""
        if not key.startswith(USER_PIN_PREFIX):
            return f"the result of {key}"
        index = find_user_message(self.conversation.history, key)
        if index is None:
            return f"the user message {key}"
        return f"the user message {one_line(text_of(self.conversation.history[index]), 40)!r} ({key})"

    def _set_pins(self, keys: frozenset[str]) -> None:
        self.state.set_pins(keys)

    def pinned_chars(self) -> int:
        """The JSON size of what is pinned (results with their tool_use blocks, user messages), as the
        summary carries them."""
        history = self.conversation.history
        parts: list[Any] = []
        for key in self.pinned:
            target = pin_target(history, key)
            if target is not None:
                index, block_index = target
                parts.append(
                    history[index] if block_index is None else history[index]["content"][block_index]
                )
        return estimate_chars(parts)

    def _pins_notice(self, text: str) -> Notice:
        size = self.pinned_chars() if self.pinned else 0
        if size > self.limit:
            notice = Notice(
                f"{text}; the pinned items alone are {size:,} chars, over the {self.limit:,}-char "
                "limit: compaction cannot bring the context under it (unpin some)",
                "warning",
            )
        else:
            notice = Notice(text)
        self.conversation.log(notice)
        return notice

    def next_call(
        self, steps: list[CompactionStep], held: CompactionHeld | None, timing: str
    ) -> NextCallPreview:
        """The forecast of the next call: its steps, the tool results they would shorten, the pins,
        whether compaction is paused, the timing in force, what waits for the cache and, when it would
        summarise, the visible facts only the summary could keep."""
        files = {path for step in steps for path in step.files_written}
        shortened = (
            frozenset(
                tool_use_id
                for message in self.conversation.history
                if message.get("role") == "user"
                for tool_use_id in tool_result_ids(message)
                if self.archive.expected_tool_result_path(tool_use_id) in files
            )
            if files
            else frozenset()
        )
        at_risk = (
            review_summary(
                self.conversation.facts.report(),
                None,
                self.conversation.history,
                self.conversation.request,
                self.pinned,
            ).dropped
            if any(step.step == "compact_history" for step in steps)
            else ()
        )
        return NextCallPreview(
            tuple(steps),
            shortened,
            self.pinned,
            not self.auto_compact,
            timing,
            held.steps if held is not None else (),
            at_risk,
        )

    def recompact_warning(self, steps: list[CompactionStep]) -> Notice | None:
        """After an undo: a warning when the next call's `steps` would compact again."""
        fired = [step.step for step in steps if step.saved > 0 or step.step == "compact_history"]
        if not fired:
            return None
        notice = Notice(
            f"automatic compaction is on: the next call would run {' + '.join(dict.fromkeys(fired))} again; "
            "pause it, or compact with a focus instead",
            "warning",
        )
        self.conversation.log(notice)
        return notice

    async def preview(self, request: str, hold: bool = False) -> list[CompactionStep]:
        """What the next prepare would do now, step by step (writes nothing, calls no model)."""
        return await self.compactor.dry_run(self.conversation.history, request, hold)

    async def draft_summary(
        self, request: str, focus: str | None = None
    ) -> tuple[str, tuple[SummaryUsage, ...]]:
        """A summary of the history as a manual compact would ask for it, and its call's usage;
        changes nothing."""
        if not self.conversation.history:
            raise SteeringError("nothing to summarise yet")
        try:
            return await self.compactor.summarize_history(self.conversation.history, focus)
        except CompactionError as error:
            raise SteeringError(str(error)) from error

    async def archive_request(self, text: str) -> str:
        """Save a request too long for the context in the archive; returns the short message to send
        instead (it names the file, which the model reads with read_file, and keeps a preview)."""
        name = f"user-request-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
        path = await self.archive.save_tool_result(name, text)
        preview = text[: self.compactor.settings.fit_preview_chars]
        return (
            f"[My message is {request_chars(text):,} chars long, too long for the context: it is saved whole at {path}. "
            f"Read it with read_file (offset/limit) before answering.]\n\nIts beginning:\n{preview}"
        )

    # --- sessions ----------------------------------------------------------------------------------

    def take_over(
        self,
        records: Sequence[Compaction],
        pins: Sequence[str],
        ledger: Sequence[LedgerEntry] = (),
        notes: Sequence[str] = (),
    ) -> None:
        """A resumed history's undo records (those that still lead to it), pins (those still in it),
        ledger and the model's notes become this session's, and the new session file starts with them."""
        self.state.take_over(records, pins, ledger, notes)
        kept = frozenset(pin_targets(self.conversation.history, pins))
        if kept:
            self._set_pins(kept)
