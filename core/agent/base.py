"""AgentBase: what the parts of the Agent share.

`core.agent.Agent` is assembled from parts with one job each: the turn loop (`core.agent`), the
compaction plumbing around the pipeline (`core.agent_compaction`), the user's steering actions
(`core.agent_steering`) and sessions (`core.agent_sessions`). Each part is a class over this base,
so it can reach the agent's state, and `Agent` inherits them all. The state is made in
`Agent.__init__` and only declared here (for the type checker); what is defined here are the moves
every part makes: change the history (each change recorded in the session log and reported as a
`HistoryChanged`), log an event, measure the context.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from core.archive import Archive
from core.compaction import Compactor
from core.compaction.steering import Compaction, SteeringError
from core.config import Settings
from core.events import (
    AgentEvent,
    CompactionStep,
    ContextMeasured,
    ErrorEvent,
    HistoryChanged,
    Notice,
    Splice,
    StepName,
)
from core.history.messages import splice_between
from core.history.store import History
from core.history.tokens import TokenCounter
from core.model.base import Model
from core.sessions.log import SessionLog
from core.tools import ToolBox
from core.usage.counting import TokenCount, count_next_request
from core.usage.timeline import ContextSample, Timeline

Message = dict[str, Any]


class AgentBase:
    """The shared state of an agent and the moves on it every part makes (see the module docstring)."""

    # --- the state, made in Agent.__init__ (its attributes are documented there) ---
    model: Model
    toolbox: ToolBox
    compactor: Compactor
    settings: Settings
    session: SessionLog | None
    tokens: TokenCounter
    system_prompt: str
    max_steps: int
    allow_all: bool
    allowed_for_session: set[str]
    last_request: str
    last_input_tokens: int | None
    running: bool
    resumed_from: str | None
    compactions: list[Compaction]
    auto_compact: bool
    _messages: History
    _announce: Notice | None
    _steps: list[CompactionStep]
    _session_error: str | None
    _timeline: Timeline

    if TYPE_CHECKING:
        # --- defined in core/agent_compaction.py (the user's compact calls it too) ---
        def _compaction(
            self, step: StepName, focus: str | None, summary: str | None = None
        ) -> AsyncGenerator[AgentEvent, None]: ...

    # --- the history --------------------------------------------------------------------------

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

    # --- measuring ------------------------------------------------------------------------------

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

    def _idle(self, action: str) -> None:
        """Refuse an action that changes or reads the history while a turn is running."""
        if self.running:
            raise SteeringError(f"cannot {action} while a turn is running")
