"""Typed Textual messages: one per core event, plus the turn's own lifecycle.

The turn worker (`MainScreen.drive`) turns every `core.events` event into the matching message here
and posts it to the main screen; handlers are `@on(...)` methods on `MainScreen`. Wrapping (rather than re-declaring the fields)
keeps the core's dataclasses the single source of truth.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from core import events as core


class TurnMessage(Message, bubble=False):
    """A message of the turn worker: handled by the main screen that runs the worker, never bubbled
    (each subclass says `bubble=False` again: Textual resets it per class)."""


@dataclass
class TurnStarted(TurnMessage, bubble=False):
    event: core.TurnStarted


@dataclass
class TextDelta(TurnMessage, bubble=False):
    event: core.TextDelta


@dataclass
class AssistantMessage(TurnMessage, bubble=False):
    event: core.AssistantMessage


@dataclass
class ToolCallStarted(TurnMessage, bubble=False):
    event: core.ToolCallStarted


@dataclass
class PermissionRequested(TurnMessage, bubble=False):
    event: core.PermissionRequested


@dataclass
class ToolOutputDelta(TurnMessage, bubble=False):
    event: core.ToolOutputDelta


@dataclass
class ToolCallFinished(TurnMessage, bubble=False):
    event: core.ToolCallFinished


@dataclass
class CompactionStep(TurnMessage, bubble=False):
    event: core.CompactionStep


@dataclass
class CompactionHeld(TurnMessage, bubble=False):
    event: core.CompactionHeld


@dataclass
class ContextMeasured(TurnMessage, bubble=False):
    event: core.ContextMeasured


@dataclass
class ContextSampled(TurnMessage, bubble=False):
    event: core.ContextSampled


@dataclass
class HistoryChanged(TurnMessage, bubble=False):
    event: core.HistoryChanged


@dataclass
class Notice(TurnMessage, bubble=False):
    event: core.Notice


@dataclass
class ErrorEvent(TurnMessage, bubble=False):
    event: core.ErrorEvent


@dataclass
class TurnFinished(TurnMessage, bubble=False):
    event: core.TurnFinished


@dataclass
class TurnCancelled(TurnMessage, bubble=False):
    """The user cancelled the running turn; the core has already repaired the history."""


@dataclass
class TurnCrashed(TurnMessage, bubble=False):
    """The turn worker raised something the core did not turn into an ErrorEvent."""

    error: str


@dataclass
class TurnEnded(TurnMessage, bubble=False):
    """The turn worker is done (finished, failed or cancelled): time for exact figures."""

    cancelled: bool = False


_WRAPPERS: dict[type, type[TurnMessage]] = {
    core.TurnStarted: TurnStarted,
    core.TextDelta: TextDelta,
    core.AssistantMessage: AssistantMessage,
    core.ToolCallStarted: ToolCallStarted,
    core.PermissionRequested: PermissionRequested,
    core.ToolOutputDelta: ToolOutputDelta,
    core.ToolCallFinished: ToolCallFinished,
    core.CompactionStep: CompactionStep,
    core.CompactionHeld: CompactionHeld,
    core.ContextMeasured: ContextMeasured,
    core.ContextSampled: ContextSampled,
    core.HistoryChanged: HistoryChanged,
    core.Notice: Notice,
    core.ErrorEvent: ErrorEvent,
    core.TurnFinished: TurnFinished,
}


def wrap(event: core.AgentEvent) -> TurnMessage | None:
    """The Textual message for a core event (None for an event type this UI does not know)."""
    wrapper = _WRAPPERS.get(type(event))
    return wrapper(event) if wrapper is not None else None  # type: ignore[call-arg]
