"""What a UI reads of an agent: one read-only view, so that no view reaches through the agent's parts.

A UI learns what happens from the events a turn or an action yields; for everything else it shows
(the model, the workdir, the limit, the request's system prompt and tools, the pins, the model's
notes, the timeline, the session's file) it reads an `AgentView`. Every property reads the agent's
state or settings as they are now; sequences are handed out as tuples or as the history itself typed
read-only, so a view cannot change the conversation by accident. Steering goes through the agent's
methods, which refuse while a turn runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.archive import Archive
from core.config import Settings
from core.values.records import Fact, LedgerEntry
from core.values.samples import ContextSample

if TYPE_CHECKING:
    from core.agent.agent import Agent

Message = dict[str, Any]


class AgentView:
    """Read-only facts about one agent (see the module docstring)."""

    __slots__ = ("_agent",)

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    # --- what the agent is ----------------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        return self._agent.toolbox.workspace.root

    @property
    def model_name(self) -> str:
        return self._agent.model.name

    @property
    def model_label(self) -> str:
        """The model's name, or why the offline model runs."""
        return self._agent.model.label

    @property
    def offline(self) -> bool:
        return self._agent.model.offline

    @property
    def allow_all(self) -> bool:
        """Tools that need consent run without asking (`--yes`)."""
        return self._agent.allow_all

    @property
    def permission(self) -> str:
        """ "preset" (--yes), "session" (bash allowed for this session) or "ask"."""
        if self._agent.allow_all:
            return "preset"
        return "session" if "bash" in self._agent.allowed_for_session else "ask"

    @property
    def limit(self) -> int:
        """The context limit in characters (`context_char_limit`)."""
        return self._agent.compactor.settings.context_char_limit

    @property
    def target_ratio(self) -> float:
        return self._agent.compactor.settings.micro_target_ratio

    @property
    def system_prompt(self) -> str:
        return self._agent.system_prompt

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        """The tool schemas every request carries."""
        return tuple(self._agent.toolbox.schemas)

    @property
    def archive(self) -> Archive:
        """Where every reduction's full data is (read-only use: a view opens its files)."""
        return self._agent.archive

    @property
    def settings(self) -> Settings:
        """A copy of the settings the agent was built from (changing it changes nothing)."""
        return dataclasses.replace(self._agent.settings)

    @property
    def state_dir(self) -> Path:
        return self._agent.settings.state_dir

    # --- the conversation as it is now -------------------------------------------------------------

    @property
    def running(self) -> bool:
        """A turn (or a compaction the person asked for) is running: the core's turn flag."""
        return self._agent.state.running

    @property
    def auto_compact(self) -> bool:
        return self._agent.state.auto_compact

    @property
    def messages(self) -> Sequence[Message]:
        """The history itself (not a copy), typed read-only."""
        return self._agent.state.history

    @property
    def chars(self) -> int:
        return self._agent.state.chars

    @property
    def pinned(self) -> frozenset[str]:
        return self._agent.state.pinned

    @property
    def notes(self) -> tuple[str, ...]:
        """The model's notes (the note tool), numbered from 1 in this order as the model sees them;
        a turn yields `NotesChanged` when they change (a new session has none, a resume brings them back)."""
        return self._agent.state.notes

    @property
    def notes_char_limit(self) -> int:
        """The characters the notes may hold in all (`notes_char_limit`)."""
        return self._agent.compactor.settings.notes_char_limit

    @property
    def timeline(self) -> tuple[ContextSample, ...]:
        return tuple(self._agent.state.timeline.samples)

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._agent.state.ledger.entries)

    def facts(self) -> tuple[Fact, ...]:
        return tuple(self._agent.facts().facts)

    @property
    def resumed_from(self) -> str | None:
        return self._agent.conversation.resumed_from

    @property
    def session_path(self) -> Path | None:
        session = self._agent.conversation.session
        return session.path if session is not None else None

    def session_failure(self) -> str | None:
        """What the session log could not save (None: everything is on disk)."""
        session = self._agent.conversation.session
        return session.failure() if session is not None else None


__all__ = ["AgentView"]
