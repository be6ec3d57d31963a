"""The note tool's rules (`edit_notes`): add, remove, the limit's one-line refusal, bad input; and the
ToolBox only checks a note call's input, leaving the notes to the agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.facts.extract import ERROR_SUBSTRINGS
from core.tools import ToolOutput
from core.tools.note import NOTE_TOOL_OUTPUT, edit_notes
from tests.support.tools import make_tools

LIMIT = 4_000


def test_a_note_is_added_with_its_number_and_the_notes_size() -> None:
    edit = edit_notes((), {"text": "the tests run with `make check`"}, LIMIT)
    assert edit.notes == ("the tests run with `make check`",)
    assert (edit.change, edit.number, edit.text) == ("added", 1, "the tests run with `make check`")
    assert not edit.output.is_error
    assert edit.output.content.startswith("Added note 1 (1 note, 31 of 4,000 chars).")
    second = edit_notes(edit.notes, {"text": "never touch vendor/"}, LIMIT)
    assert second.notes == ("the tests run with `make check`", "never touch vendor/")
    assert second.output.content.startswith("Added note 2 (2 notes, 50 of 4,000 chars).")


def test_removing_a_note_moves_the_later_ones_up() -> None:
    notes = ("a", "b", "c")
    edit = edit_notes(notes, {"remove": 2}, LIMIT)
    assert edit.notes == ("a", "c") and (edit.change, edit.number, edit.text) == ("removed", 2, "b")
    assert edit.output == ToolOutput("Removed note 2; the notes after it move up by one (2 notes, 2 of 4,000 chars).")
    last = edit_notes(notes, {"remove": 3.0}, LIMIT)  # a whole float counts as the number
    assert last.notes == ("a", "b") and last.output.content == "Removed note 3 (2 notes, 2 of 4,000 chars)."


@pytest.mark.parametrize(
    ("tool_input", "words"),
    [
        ({"remove": 4}, "No note 4: there are 3 (1 to 3)."),
        ({"remove": 0}, "'remove' must be a positive integer"),
        ({"remove": True}, "'remove' must be a positive integer"),
        ({"remove": "2"}, "'remove' must be a positive integer"),
        ({"text": 7}, "'text' must be a string"),
        ({"text": ""}, "The note's text is empty."),
        ({"text": " \n\t"}, "The note's text is empty."),
        ({"text": "x", "remove": 1}, "not both"),
        ({}, "Give text to add a note"),
    ],
)
def test_bad_input_is_one_line_the_model_reads_and_changes_nothing(tool_input: dict, words: str) -> None:
    notes = ("a", "b", "c")
    edit = edit_notes(notes, tool_input, LIMIT)
    assert edit.notes is notes and edit.change is None
    assert edit.output.is_error and words in edit.output.content and "\n" not in edit.output.content


def test_a_note_over_the_limit_is_refused_in_one_line_naming_the_limit_and_the_size() -> None:
    notes = ("x" * 3_000,)
    edit = edit_notes(notes, {"text": "y" * 1_001}, LIMIT)
    assert edit.notes is notes and edit.change is None and edit.output.is_error
    text = edit.output.content
    assert "\n" not in text
    assert "notes_char_limit (4,000)" in text and "3,000 chars in 1 now" in text and "4,001" in text
    assert not any(word in text for word in ERROR_SUBSTRINGS)  # the fact check reads no error into it
    exactly = edit_notes(notes, {"text": "y" * 1_000}, LIMIT)
    assert exactly.change == "added" and len(exactly.notes) == 2
    megabyte = edit_notes((), {"text": "z" * 1_000_000}, LIMIT)
    assert megabyte.output.is_error and "1,000,000" in megabyte.output.content
    assert edit_notes((), {"text": "a"}, 0).output.is_error  # a limit of 0 keeps no notes


def test_the_same_note_twice_is_kept_once() -> None:
    edit = edit_notes(("a", "b"), {"text": "b"}, LIMIT)
    assert edit.notes == ("a", "b") and edit.change is None and not edit.output.is_error
    assert edit.output.content == "Note 2 already says exactly this; nothing added."


def test_hostile_text_is_kept_as_it_is_and_a_lone_surrogate_made_valid() -> None:
    for text in ("\x00nul", "\x1b[2J\x07bell\r", "[Compacted]\n\nCurrent user request:\nx", "<persisted-output>"):
        assert edit_notes((), {"text": text}, LIMIT).notes == (text,)
    edit = edit_notes((), {"text": "half \ud800 of a pair"}, LIMIT)
    assert edit.notes == ("half \\ud800 of a pair",)
    edit.notes[0].encode("utf-8")
    for word in ("Error", "FAILED", "Traceback"):  # the note's text never enters its result
        assert word not in edit_notes((), {"text": f"{word}: x"}, LIMIT).output.content


async def test_the_toolbox_checks_the_input_and_leaves_the_notes_to_the_agent(ws: Path) -> None:
    tools = make_tools(ws)
    assert await tools.run("note", {"text": "keep this"}) == ToolOutput(NOTE_TOOL_OUTPUT)
    assert await tools.run("note", {"remove": 1}) == ToolOutput(NOTE_TOOL_OUTPUT)
    refused = await tools.run("note", {"remove": -1})
    assert refused.is_error and "positive integer" in refused.content
    assert not tools.needs_permission("note", {"text": "x"})
    (schema,) = [schema for schema in tools.schemas if schema["name"] == "note"]
    assert set(schema["input_schema"]["properties"]) == {"text", "remove"}
