"""The UI's one copy of the history: the splices of each `HistoryChanged` applied once, in order.

The core hands a view every change of the history as splices (core/events.py). The inspector applies
them here, once, and every view reads what it needs from this model: the breakdown its figures, the
archive opener the summary that replaced a transcript, a dialog the message count. The message tree
draws the same splices as nodes (each node's data holds its message) and keeps no list of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.history import estimate_chars
from core.history.categories import Breakdown
from core.values.splice import Splice

Message = dict[str, Any]


class HistoryModel:
    """The history as the UI knows it (see the module docstring)."""

    def __init__(self, messages: Sequence[Message] = (), chars: int | None = None) -> None:
        self._messages: list[Message] = list(messages)
        self.chars = estimate_chars(self._messages) if chars is None else chars
        """`estimate_chars` of the history (the last HistoryChanged's figure)."""
        self.breakdown = Breakdown(self._messages)
        """Its figures by category, kept from the splices (never re-walked)."""
        self.version = 0
        """How many changes were applied (a view compares it to know it is behind)."""

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
        self.breakdown.apply(changes)
        self.chars = chars
        self.version += 1

    def reset(self, messages: Sequence[Message], chars: int | None = None) -> None:
        """Another history altogether (a new or resumed session, the proxy's other conversation)."""
        self._messages = list(messages)
        self.chars = estimate_chars(self._messages) if chars is None else chars
        self.breakdown.reset(self._messages)
        self.version += 1


__all__ = ["HistoryModel"]
