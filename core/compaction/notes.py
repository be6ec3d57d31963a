"""The model's notes through every compaction (DESIGN.md, "Recall"): where they live, and how each step
carries them verbatim, as it carries a pin.

Where the notes live
- The conversation's state owns them (`ConversationState.notes`: texts numbered from 1), in a `Notebook`
  it shares with the compactor, as it shares its `Pins`. The session log records each change (a "notes"
  record), so `--resume` and the session picker bring them back; a new session starts with none. The
  note tool (core/tools/note.py) refuses a note that would bring them over `notes_char_limit`, so what a
  step adds for them is bounded.
- The model sees them in every request, in the history itself (what is sent is the history: the gauge,
  the ledger and the fact check stay true), in two places no step ever shortens:
  1. The note call: the assistant's `note` tool_use holds the text in its input (no step edits a
     tool_use) and its result is one short line (the note's number, the notes' size; no note text, so no
     fact is read from it). A note added or removed appends to the history and rewrites nothing before
     it: the cached prefix stays.
  2. The notes message (`core.markers.notes_message`): one user message holding every current note
     verbatim, numbered. A step that removes messages (snip_compact, compact_history, reactive_compact)
     puts one right after its marker or summary (`notes_to_carry`), unless what it keeps holds that very
     message already. The notes messages it removes are archived in its transcript like any message; the
     ledger counts one equal to the new one as staying.
  Between two such steps an older notes message may be stale (it still shows a note removed since; a
  note added since is in its call): the newest call's result says what changed, and the next step that
  removes messages consolidates them into one message again.

What each step does to them
- tool_result_budget, micro_compact, fit_tool_results only replace tool results' contents: a note's
  text is in its tool_use and in notes messages, which they never touch.
- snip_compact: the notes message goes after its marker (before the pinned messages and the request it
  keeps); an old notes message in the middle is nothing new to archive (as a copy of the request is not).
- compact_history: [summary, notes, pinned..., request]: the request comes after the notes, so it is
  still the last thing the model reads.
- reactive_compact: [summary, notes, pinned..., request if the tail has none, the newest messages].
- A notes message is ctxtui's (`core.markers.is_note`): never the current request, never the person's
  words (no constraint is read from it, it cannot be pinned), but a fact whose text it holds is visible,
  as the model sees it there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from core.markers import is_notes_message, notes_message

Message = dict[str, Any]


class Notebook:
    """The conversation's notes, one object that their owner (the agent's state) changes and its
    compactor reads: no copy to keep in step."""

    __slots__ = ("notes",)

    def __init__(self, notes: tuple[str, ...] = ()) -> None:
        self.notes = notes


def is_notes(message: Any) -> bool:
    """A notes message (a user message that holds the model's notes)."""
    return (
        isinstance(message, dict)
        and message.get("role") == "user"
        and is_notes_message(message.get("content"))
    )


def notes_to_carry(notes: Sequence[str], kept: Iterable[Message]) -> list[Message]:
    """What a step that removes messages puts right after its marker for the notes: one notes message
    with every note, or nothing when there are none or `kept` (what the step keeps) holds that very
    message already."""
    if not notes:
        return []
    text = notes_message(notes)
    if any(message.get("role") == "user" and message.get("content") == text for message in kept):
        return []
    return [{"role": "user", "content": text}]


__all__ = ["Notebook", "is_notes", "notes_to_carry"]
