"""NotesLine: the model's notes (the note tool) under the gauge, in one line: how many, their size
against `notes_char_limit`, and the newest. Hidden while there are none. It learns them from each
`NotesChanged` (and from the agent's view once, at the start or a resume); the notes' text came from
the model, so it enters as `Content`, control characters shown as escapes.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from core.text import one_line, visible
from core.values.notes import notes_chars
from tui.format import count, plural


class NotesLine(Static):
    """One line: `✎ notes: N (chars / limit) · newest: …` (see the module docstring)."""

    DEFAULT_CSS = """
    NotesLine {
        height: 1;
        padding: 0 1;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    NotesLine.-full { color: $text-warning; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Content(""), id=id)
        self.notes: tuple[str, ...] = ()
        self.limit = 0
        self.display = False

    def set_notes(self, notes: Sequence[str], limit: int) -> None:
        self.notes = tuple(notes)
        self.limit = limit
        self.display = bool(self.notes)
        chars = notes_chars(self.notes)
        self.set_class(bool(limit) and chars >= limit * 0.9, "-full")
        self.update(self.label)

    @property
    def text(self) -> str:
        """The line as plain text (for tests and the tooltip)."""
        return self.label.plain

    @property
    def label(self) -> Content:
        if not self.notes:
            return Content("")
        chars = notes_chars(self.notes)
        limit = f" / {count(self.limit)}" if self.limit else ""
        return Content.assemble(
            ("✎ notes: ", "bold"),
            f"{len(self.notes)} ({plural(chars, 'char')}{limit})",
            (f" · newest: {visible(one_line(self.notes[-1], 80))}", "dim"),
        )
