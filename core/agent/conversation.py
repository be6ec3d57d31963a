"""The conversation: the history, the session log that records it, and where it was resumed from.

Every change of the history goes through here: it is applied to the `History`, written to the
session log, and handed back as the `HistoryChanged` it made, which the agent yields so that every
view applies the same splices. The current request is read off the history (`current_request`), never
parked beside it. A new session and a resumed one start a new session file with the same metadata
(the model and the workdir).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.compaction.steering import Compaction, check_kept
from core.events import AgentEvent, CompactionStep, ContextSampled, ErrorEvent, HistoryChanged, Notice
from core.facts.index import FactIndex, Part
from core.history.blocks import compaction_blocks
from core.history.messages import current_request, splice_between
from core.history.store import History
from core.sessions.log import SessionLog
from core.values.records import LedgerChanged
from core.values.splice import Splice

Message = dict[str, Any]


class Conversation:
    """The history and its record (see the module docstring)."""

    def __init__(
        self,
        messages: Sequence[Message] = (),
        *,
        session: SessionLog | None = None,
        state_dir: Path | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.history = History(messages)
        self.session = session
        """The session log (None: nothing is recorded, e.g. in tests)."""
        self.resumed_from: str | None = None
        self._state_dir = state_dir
        self._meta = dict(meta or {})
        self._session_error: str | None = None
        self.facts = FactIndex(self.history, fallback=self.session_file())
        """Every fact this history held, kept from each change (`Agent.facts`)."""

    @property
    def chars(self) -> int:
        """`estimate_chars` of the history, from its per-message tally."""
        return self.history.chars

    @property
    def request(self) -> str:
        """The request the next call works on, read off the history."""
        return current_request(self.history)

    # --- changing the history ------------------------------------------------------------------

    def append(self, message: Message, reason: str) -> HistoryChanged:
        start = len(self.history)
        self.history.append(message)
        if self.session is not None:
            self.session.message(message)
        return self._changed((Splice(start, 0, (message,)),), reason)

    def replace(
        self,
        messages: Sequence[Message],
        reason: str,
        changes: tuple[Splice, ...] | None = None,
        parts: Sequence[Part] = (),
        ledger: LedgerChanged | None = None,
    ) -> HistoryChanged | None:
        """Make the history `messages` (`changes`: the splices to it, when known); None if nothing changed.
        `parts` and `ledger`: what the change took out of the context (see `compacted`)."""
        if changes is None:
            changes = splice_between(self.history, messages)
        return self._apply(changes, reason, parts, ledger) if changes else None

    def guard(self, changes: tuple[Splice, ...], reason: str) -> None:
        """Refuse (SignedBlockError, one line) a change that would edit or drop a compaction block the
        server signed; nothing is changed then."""
        if any(True for _ in compaction_blocks(self.history)):
            after = list(self.history)
            for change in changes:
                after[change.start : change.start + change.removed] = list(change.added)
            check_kept(self.history, after, reason)

    def compacted(
        self,
        changes: tuple[Splice, ...],
        reason: str,
        steps: Sequence[str],
        files: Sequence[str],
        *,
        undoable: bool,
        parts: Sequence[Part] = (),
        ledger: LedgerChanged | None = None,
    ) -> HistoryChanged | None:
        """Apply a compaction's splices; the session log says first that the change is a compaction
        (its steps and files), so a replay can offer undo for it again. `parts` split the splices by
        step, with the entries of what each took out (the archive file of each fact that leaves);
        `ledger` is the change of the agent's ledger, recorded with it."""
        if not changes:
            return None
        self.guard(changes, reason)
        if undoable and steps and self.session is not None:
            self.session.compaction(reason, steps, files)
        return self._apply(changes, reason, parts, ledger)

    def _apply(
        self,
        changes: tuple[Splice, ...],
        reason: str,
        parts: Sequence[Part] = (),
        ledger: LedgerChanged | None = None,
    ) -> HistoryChanged:
        self.guard(changes, reason)
        self.history.apply(changes)
        if self.session is not None:
            self.session.change(changes, self.history, reason)
        if ledger:
            self.record_ledger(ledger)
        return self._changed(changes, reason, parts, ledger or None)

    def _changed(
        self,
        changes: tuple[Splice, ...],
        reason: str,
        parts: Sequence[Part] = (),
        ledger: LedgerChanged | None = None,
    ) -> HistoryChanged:
        facts = self.facts.apply(changes, parts)
        return HistoryChanged(
            len(self.history), self.history.chars, changes, reason, facts=facts, ledger=ledger
        )

    # --- the session log -------------------------------------------------------------------------

    def log(self, event: AgentEvent) -> AgentEvent:
        """Record the events the session log keeps (steps, notices, errors, each call's sample: what
        `ctxtui inspect --report` reads the session's cache economics from); hand the event back."""
        if self.session is not None and isinstance(
            event, CompactionStep | Notice | ErrorEvent | ContextSampled
        ):
            self.session.event(event)
        return event

    async def saved(self) -> Notice | None:
        """Wait until the session log has written what it was given (a turn ends saved), then say if it
        could not (`session_notice`)."""
        if self.session is not None:
            await self.session.flush()
        return self.session_notice()

    def session_notice(self) -> Notice | None:
        """A notice the first time the session log fails to write (and again if the failure changes)."""
        error = self.session.error if self.session is not None else None
        if error and error != self._session_error:
            self._session_error = error
            failure = self.session.failure() if self.session is not None else error  # what is not saved, too
            notice = Notice(f"{failure} (kept in memory, retried on the next write)", "session")
            self.log(notice)
            return notice
        return None

    def record_ledger(self, change: LedgerChanged) -> None:
        """Write a change of the ledger to the session log (a replay gives the same ledger back)."""
        if self.session is not None:
            self.session.event(change)

    def session_file(self) -> str | None:
        """The session log's path, workdir-relative when it is inside the workdir: the file that holds
        every message this history had (for a fact no archive file holds)."""
        if self.session is None:
            return None
        workdir = self._meta.get("workdir")
        path = self.session.path
        if isinstance(workdir, str) and path.is_relative_to(workdir):
            return path.relative_to(workdir).as_posix()
        return str(path)

    def record_pins(self, pins: frozenset[str]) -> None:
        if self.session is not None:
            self.session.pins(pins)

    def record_notes(self, notes: Sequence[str]) -> None:
        if self.session is not None:
            self.session.notes(notes)

    def record_cancel(self) -> None:
        """The turn ended without finishing (cancelled or closed)."""
        if self.session is not None:
            self.session.record({"type": "event", "kind": "TurnCancelled", "event": {}})

    # --- sessions ----------------------------------------------------------------------------------

    def start_new(
        self, messages: Sequence[Message], reason: str, facts: FactIndex | None = None
    ) -> HistoryChanged:
        """The history becomes `messages` in a new session file (the old one is closed; archives and
        old sessions stay on disk). Its facts start over (`facts`: the index of `messages` when the
        caller built it, with what the archive holds); the change carries the whole new report."""
        changes = self.history.replace(list(messages))
        if self.session is not None:
            previous = self.session
            self.session = SessionLog.create(self._session_dir(previous), self._meta)
            previous.close_soon()
        self.resumed_from = None
        self._session_error = None
        self.facts = facts if facts is not None else FactIndex(self.history)
        self.facts.fallback = self.session_file()
        report = tuple(self.facts.report().facts)
        return HistoryChanged(len(self.history), self.history.chars, changes, reason, facts=report)

    def _session_dir(self, previous: SessionLog) -> Path:
        return self._state_dir if self._state_dir is not None else previous.path.parent.parent

    def log_resumed(self, compactions: Sequence[Compaction]) -> None:
        """Start the new session file of a resumed history: the history, and the undo records it
        carries, so a resume of this file offers the same undo. With records, the log starts from
        the oldest record's history and replays each compaction (what came between them as plain
        changes), ending at the current history."""
        session = self.session
        if session is None or not self.history:
            return
        if not compactions:
            session.replace(self.history, "resume")
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
        if changes := splice_between(state, self.history):
            session.change(changes, self.history, "resume")

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
