"""note: the model keeps notes that every compaction carries verbatim (DESIGN.md, "Recall").

As with the compact tool, the effect is the agent's: the notes belong to the conversation's state,
not to the workspace. `NoteTool.run` checks the input and answers NOTE_TOOL_OUTPUT; the agent, seeing
it, applies the call to its notes with `edit_notes` (a pure function: the notes before, the input,
the limit -> the notes after and the result the model reads). Every refusal is one line the model
reads as an error result, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from core.text import valid_utf8
from core.tools.base import ToolError, ToolOutput, optional_positive_int, optional_str

NOTE_TOOL = "note"
NOTE_TOOL_OUTPUT = "Note change requested: the agent applies it to your notes."


@dataclass(frozen=True)
class NoteEdit:
    """What one note call makes of the notes: the notes after it (the same tuple when nothing changed),
    the result the model reads, and what changed (`change` None: nothing; `number` the note's
    number, or the one it had before it was removed, and `text` its text)."""

    notes: tuple[str, ...]
    output: ToolOutput
    change: Literal["added", "removed"] | None = None
    number: int = 0
    text: str = ""


def read_note(tool_input: dict[str, Any]) -> str | int:
    """The call's request: the text of a note to add, or the number of the note to remove (ToolError,
    one line, for anything else)."""
    text = optional_str(tool_input, "text")
    number = optional_positive_int(tool_input, "remove")
    if text is not None and number is not None:
        raise ToolError("Give either text (a note to add) or remove (a note's number), not both.")
    if number is not None:
        return number
    if text is None:
        raise ToolError("Give text to add a note, or remove with the number of a note to remove it.")
    if not text.strip():
        raise ToolError("The note's text is empty.")
    return valid_utf8(text)


def _size(notes: tuple[str, ...]) -> int:
    return sum(len(text) for text in notes)


def _counted(notes: tuple[str, ...], limit: int) -> str:
    count = len(notes)
    return f"{count} note{'' if count == 1 else 's'}, {_size(notes):,} of {limit:,} chars"


def edit_notes(notes: tuple[str, ...], tool_input: dict[str, Any], limit: int) -> NoteEdit:
    """Apply one note call to `notes` (numbered from 1): add a note unless the notes would then be over
    `limit` characters, or remove one. Never raises: a refusal is an error result naming why."""
    try:
        request = read_note(tool_input)
    except ToolError as error:
        return NoteEdit(notes, ToolOutput(str(error), is_error=True))
    if isinstance(request, int):
        if request > len(notes):
            have = f"there are {len(notes)} (1 to {len(notes)})" if notes else "there are none"
            return NoteEdit(notes, ToolOutput(f"No note {request}: {have}.", is_error=True))
        text = notes[request - 1]
        after = notes[: request - 1] + notes[request:]
        moved = "; the notes after it move up by one" if request <= len(after) else ""
        return NoteEdit(
            after,
            ToolOutput(f"Removed note {request}{moved} ({_counted(after, limit)})."),
            "removed",
            request,
            text,
        )
    if request in notes:
        number = notes.index(request) + 1
        return NoteEdit(notes, ToolOutput(f"Note {number} already says exactly this; nothing added."))
    size, grown = _size(notes), _size(notes) + len(request)
    if grown > limit:
        return NoteEdit(
            notes,
            ToolOutput(
                f"Note refused: it is {len(request):,} chars and your notes would come to {grown:,}, "
                f"over notes_char_limit ({limit:,}); they are {size:,} chars in {len(notes)} now. "
                "Remove a note or write a shorter one.",
                is_error=True,
            ),
        )
    after = (*notes, request)
    return NoteEdit(
        after,
        ToolOutput(
            f"Added note {len(after)} ({_counted(after, limit)}). Every compaction keeps your notes verbatim."
        ),
        "added",
        len(after),
        request,
    )


class NoteTool:
    """Checks the input; the agent applies the call to the conversation's notes (`edit_notes`)."""

    name = NOTE_TOOL
    needs_permission = False

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "Keep a note that survives every compaction: your notes are in every request, verbatim "
                "and numbered from 1, even after older messages are archived or summarised. Add one "
                "with `text`, remove one with `remove` (its number). Note what you must not lose: the "
                "person's constraints, decisions, key paths, what is left to do. Their total size is "
                "limited; a note over the limit is refused."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The note to add."},
                    "remove": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "The number of the note to remove.",
                    },
                },
            },
        }

    async def preview(self, tool_input: dict[str, Any]) -> str:
        return ""

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        read_note(tool_input)
        return ToolOutput(NOTE_TOOL_OUTPUT)
