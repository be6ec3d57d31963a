"""Typed Textual messages: one per core event, plus the turn's own lifecycle.

The turn worker (`MainScreen.drive`) turns every `core.events` event into the matching message here
and posts it to the main screen; handlers are `@on(...)` methods on `MainScreen`. Streamed pieces
(assistant text, a tool's output) are the exception: a piece that arrives while the message of the
piece before is still waiting in the screen's queue joins that message (`Streamed.absorb`) instead
of queueing one more. A stream of thousands of chunks thus keeps at most one message waiting, and
the screen goes idle between them, which is when Textual lays out and paints: one message per chunk
kept the queue full, so nothing was painted until the stream ended and then everything at once.

Wrapping (rather than re-declaring the fields) keeps the core's dataclasses the single source of
truth. The wrappers are plain classes (one generic `EventMessage`), not dataclasses: eighteen
dataclasses cost the app's start ~10 ms.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from textual.message import Message

if TYPE_CHECKING:
    from core import events as core


E = TypeVar("E")


class HasText(Protocol):
    """A streamed event: assistant text or a tool's output."""

    @property
    def text(self) -> str: ...


S = TypeVar("S", bound=HasText)


class TurnMessage(Message, bubble=False):
    """A message of the turn worker: handled by the main screen that runs the worker, never bubbled
    (each subclass says `bubble=False` again: Textual resets it per class)."""


class EventMessage(TurnMessage, Generic[E], bubble=False):
    """One core event, as it came (`event`)."""

    def __init__(self, event: E) -> None:
        super().__init__()
        self.event = event


class TurnStarted(EventMessage["core.TurnStarted"], bubble=False):
    pass


class Streamed(EventMessage[S], bubble=False):
    """A streamed piece of text, and those that came after it before the screen took it."""

    def __init__(self, event: S) -> None:
        super().__init__(event)
        self.pieces = [event.text]
        self.taken = False

    def joins(self, event: Any) -> bool:
        """Whether `event` continues this message's stream (same type, same source)."""
        return type(event) is type(self.event)

    def absorb(self, event: Any) -> bool:
        """Take `event`'s piece if this message is still waiting and `event` continues its stream."""
        if self.taken or not self.joins(event):
            return False
        self.pieces.append(event.text)
        return True

    def take(self) -> str:
        """The text of every piece so far; later pieces go in a message of their own."""
        self.taken = True
        return "".join(self.pieces)


class TextDelta(Streamed["core.TextDelta"], bubble=False):
    pass


class AssistantMessage(EventMessage["core.AssistantMessage"], bubble=False):
    pass


class ToolCallStarted(EventMessage["core.ToolCallStarted"], bubble=False):
    pass


class PermissionRequested(EventMessage["core.PermissionRequested"], bubble=False):
    pass


class ToolOutputDelta(Streamed["core.ToolOutputDelta"], bubble=False):
    def joins(self, event: Any) -> bool:
        return type(event) is type(self.event) and event.tool_use_id == self.event.tool_use_id


class ToolCallFinished(EventMessage["core.ToolCallFinished"], bubble=False):
    pass


class NotesChanged(EventMessage["core.NotesChanged"], bubble=False):
    pass


class CompactionStep(EventMessage["core.CompactionStep"], bubble=False):
    pass


class CompactionHeld(EventMessage["core.CompactionHeld"], bubble=False):
    pass


class ContextMeasured(EventMessage["core.ContextMeasured"], bubble=False):
    pass


class ContextSampled(EventMessage["core.ContextSampled"], bubble=False):
    pass


class HistoryChanged(EventMessage["core.HistoryChanged"], bubble=False):
    pass


class Notice(EventMessage["core.Notice"], bubble=False):
    pass


class ErrorEvent(EventMessage["core.ErrorEvent"], bubble=False):
    pass


class TurnFinished(EventMessage["core.TurnFinished"], bubble=False):
    pass


class TurnCancelled(TurnMessage, bubble=False):
    """The user cancelled the running turn; the core has already repaired the history."""


class TurnCrashed(TurnMessage, bubble=False):
    """The turn worker raised something the core did not turn into an ErrorEvent."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class TurnEnded(TurnMessage, bubble=False):
    """The turn worker is done (finished, failed or cancelled): time for exact figures."""

    def __init__(self, cancelled: bool = False) -> None:
        super().__init__()
        self.cancelled = cancelled


@functools.cache
def _wrappers() -> dict[type, type[EventMessage[Any]]]:
    """Each core event type's message (core.events is imported at the first turn, not at the start:
    its dataclasses cost the first frame ~15 ms)."""
    from core import events as core

    return {
        core.TurnStarted: TurnStarted,
        core.TextDelta: TextDelta,
        core.AssistantMessage: AssistantMessage,
        core.ToolCallStarted: ToolCallStarted,
        core.PermissionRequested: PermissionRequested,
        core.ToolOutputDelta: ToolOutputDelta,
        core.ToolCallFinished: ToolCallFinished,
        core.NotesChanged: NotesChanged,
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
    wrapper = _wrappers().get(type(event))
    return wrapper(event) if wrapper is not None else None
