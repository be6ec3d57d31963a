"""Typed Textual messages: one per core event, plus the turn's own lifecycle.

The turn worker turns every `core.events` event into the matching message here and posts it to the
app; handlers are `@on(...)` methods on `CtxApp`. Wrapping (rather than re-declaring the fields)
keeps the core's dataclasses the single source of truth.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from core import events as core


@dataclass
class TurnStarted(Message):
    event: core.TurnStarted


@dataclass
class TextDelta(Message):
    event: core.TextDelta


@dataclass
class AssistantMessage(Message):
    event: core.AssistantMessage


@dataclass
class ToolCallStarted(Message):
    event: core.ToolCallStarted


@dataclass
class PermissionRequested(Message):
    event: core.PermissionRequested


@dataclass
class ToolCallFinished(Message):
    event: core.ToolCallFinished


@dataclass
class CompactionStep(Message):
    event: core.CompactionStep


@dataclass
class ContextMeasured(Message):
    event: core.ContextMeasured


@dataclass
class HistoryChanged(Message):
    event: core.HistoryChanged


@dataclass
class Notice(Message):
    event: core.Notice


@dataclass
class ErrorEvent(Message):
    event: core.ErrorEvent


@dataclass
class TurnFinished(Message):
    event: core.TurnFinished


@dataclass
class TurnCancelled(Message):
    """The user cancelled the running turn; the core has already repaired the history."""


@dataclass
class TurnCrashed(Message):
    """The turn worker raised something the core did not turn into an ErrorEvent."""

    error: str


@dataclass
class TurnEnded(Message):
    """The turn worker is done (finished, failed or cancelled): time for exact figures."""

    cancelled: bool = False


_WRAPPERS: dict[type, type[Message]] = {
    core.TurnStarted: TurnStarted,
    core.TextDelta: TextDelta,
    core.AssistantMessage: AssistantMessage,
    core.ToolCallStarted: ToolCallStarted,
    core.PermissionRequested: PermissionRequested,
    core.ToolCallFinished: ToolCallFinished,
    core.CompactionStep: CompactionStep,
    core.ContextMeasured: ContextMeasured,
    core.HistoryChanged: HistoryChanged,
    core.Notice: Notice,
    core.ErrorEvent: ErrorEvent,
    core.TurnFinished: TurnFinished,
}


def wrap(event: core.AgentEvent) -> Message | None:
    """The Textual message for a core event (None for an event type this UI does not know)."""
    wrapper = _WRAPPERS.get(type(event))
    return wrapper(event) if wrapper is not None else None  # type: ignore[call-arg]
