"""The model's notes (the `note` tool, DESIGN.md "Recall"), as a view is told of them.

The notes themselves are a tuple of strings, numbered from 1 in that order as the model sees them;
the conversation's state owns them (core/agent/state.py) and every compaction carries them
(core/compaction/notes.py). `NotesChanged` is the event a turn yields when the note tool changed
them, carrying every note and the figures a view shows, so that it never asks the agent again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

NoteChange = Literal["added", "removed"]


def notes_chars(notes: Iterable[str]) -> int:
    """The size `notes_char_limit` bounds: the characters of all the notes' texts."""
    return sum(len(text) for text in notes)


@dataclass(frozen=True)
class NotesChanged:
    """The note tool added or removed a note. `notes`: all of them now, numbered from 1 in this order
    as the model sees them; `change` and `number`: what happened (the number the note has, or had
    before it was removed) and `text`, that note's text; `limit`: `notes_char_limit`; `tool_use_id`:
    the call that changed them."""

    notes: tuple[str, ...]
    change: NoteChange
    number: int
    text: str
    limit: int
    tool_use_id: str = ""

    @property
    def chars(self) -> int:
        """The notes' size now, against `limit`."""
        return notes_chars(self.notes)


__all__ = ["NoteChange", "NotesChanged", "notes_chars"]
