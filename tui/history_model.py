"""The UI's one copy of the history: the splices of each `HistoryChanged` applied once, in order.

The core hands a view every change of the history as splices (core/events.py). The inspector applies
them here, once, and every view reads what it needs from this model: the breakdown its figures, the
archive opener the summary that replaced a transcript, a dialog the message count. The message tree
draws the same splices as nodes (each node's data holds its message) and keeps no list of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.history import estimate_chars
from core.values.splice import Splice

if TYPE_CHECKING:
    from core.history.categories import Breakdown

Message = dict[str, Any]


class HistoryModel:
    """The history as the UI knows it (see the module docstring)."""

    def __init__(self, messages: Sequence[Message] = (), chars: int | None = None) -> None:
        self._messages: list[Message] = list(messages)
        self.chars = estimate_chars(self._messages) if chars is None else chars
        """`estimate_chars` of the history (the last HistoryChanged's figure)."""
        self._breakdown: Breakdown | None = None
        self.version = 0
        """How many changes were applied (a view compares it to know it is behind)."""

    @property
    def breakdown(self) -> Breakdown:
        """Its figures by category: counted from the messages when first asked for (the first frame
        does without them), then kept from the splices (never re-walked)."""
        if self._breakdown is None:
            from core.history.categories import Breakdown

            self._breakdown = Breakdown(self._messages)
        return self._breakdown

    @property
    def messages(self) -> Sequence[Message]:
        """The messages, read-only: they change only through `apply`."""
        return self._messages

    def __len__(self) -> int:
        return len(self._messages)

    def apply(self, changes: Sequence[Splice], chars: int) -> None:
        """Apply a HistoryChanged's splices (a splice with `removed == -1` replaces everything)."""
        whole = [change for change in changes if change.removed < 0]
        if whole:
            changes = [Splice(0, len(self._messages), whole[-1].added)]
        for change in changes:
            self._messages[change.start : change.start + change.removed] = list(change.added)
        if self._breakdown is not None:
            self._breakdown.apply(changes)
        self.chars = chars
        self.version += 1

    def reset(self, messages: Sequence[Message], chars: int | None = None) -> None:
        """Another history altogether (a new or resumed session, the proxy's other conversation)."""
        self._messages = list(messages)
        self.chars = estimate_chars(self._messages) if chars is None else chars
        if self._breakdown is not None:
            self._breakdown.reset(self._messages)
        self.version += 1


__all__ = ["HistoryModel"]
