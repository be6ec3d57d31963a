"""Sessions: start a new one, resume one, and take over what a resumed history carries.

A resumed history comes from a session file (`--resume` at start, the session picker later): its
validated messages, its pins and its undo records. The pins still in the history and the undo
records that still lead to it become this session's, and the new session file starts with them, so
that resuming that file again offers the same pins and the same undo.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from core.agent.base import AgentBase, Message
from core.agent.steering import pin_target
from core.compaction.steering import Compaction
from core.config import Settings
from core.events import HistoryChanged
from core.history.messages import last_user_request, splice_between
from core.sessions.listing import resume_replay
from core.sessions.log import Replay, SessionLog
from core.usage.timeline import Timeline


class AgentSessions(AgentBase):
    """The session actions of the Agent (see the module docstring)."""

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
        self.last_request = last_user_request(self._messages)
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
        kept = frozenset(key for key in pins if pin_target(self._messages, key) is not None)
        if kept:
            self.compactor.pinned = kept
            if self.session is not None:
                self.session.pins(kept)

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


def resumed_session(settings: Settings) -> tuple[Replay, Path | None]:
    """What `--resume` continues, replayed (an empty replay and None without `--resume` or a session)."""
    found = resume_replay(settings.state_dir, settings.resume_id, settings.undo_depth) if settings.resume else None
    return found if found is not None else (Replay(), None)
