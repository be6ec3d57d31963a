"""The extraction rules of the fact check (DESIGN.md): the exact words, any case, whole words; the
three error substrings, case-sensitive; paths only from the file tools' `path` inputs."""

from __future__ import annotations

from typing import Any

import pytest

from core.facts.extract import constraints, error_lines, facts_of, sentences
from core.markers import kept_note, placeholder, restored_message, snip_marker, summary_message, unanswered


def user(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize("sentence", [
    "You must run the tests", "Never touch prod.yaml", "always use tabs", "don't push to main",
    "Do not edit the lockfile", "only edit src/", "Avoid the network", "NEVER TOUCH PROD", "MuSt be quick",
    "Do  not rename it",
])
def test_each_word_in_any_case_makes_a_constraint(sentence: str) -> None:
    assert constraints(sentence) == [sentence]


@pytest.mark.parametrize("sentence", [
    "mustard is yellow", "a commonly used name", "an unavoidable delay", "he avoids it", "alwayss", "neverland",
    "dont touch it", "do nothing", "donut", "don’t (a typographic apostrophe is not the word)",
])
def test_other_words_are_not_constraints(sentence: str) -> None:
    assert constraints(sentence) == []


def test_sentences_end_at_line_breaks_and_at_closing_punctuation_followed_by_space() -> None:
    text = ("Please fix the build. Never touch prod.yaml! Is it done? only edit src/.\n"
            "- do not rename files\n  2) always run make   \n* avoid v1.2. Thanks")
    assert list(sentences(text)) == [
        "Please fix the build", "Never touch prod.yaml", "Is it done", "only edit src/", "do not rename files",
        "always run make", "avoid v1.2", "Thanks",
    ]
    assert constraints(text) == ["Never touch prod.yaml", "only edit src/", "do not rename files",
                                 "always run make", "avoid v1.2"]


def test_a_constraint_is_taken_once_per_message() -> None:
    assert constraints("Never push. Never push.") == ["Never push"]


def test_error_lines_hold_one_of_the_three_substrings_case_sensitively() -> None:
    text = "\n".join([
        "ValueError: bad value", "  compile error: missing ;  ", "2 FAILED, 3 passed", "Traceback (most recent call last):",
        "an error occurred", "ERROR: loud", "failed quietly", "error : spaced", "errors: plural", "", "Error",
    ])
    assert error_lines(text) == ["ValueError: bad value", "compile error: missing ;", "2 FAILED, 3 passed",
                                 "Traceback (most recent call last):", "Error"]


def test_paths_come_from_the_file_tools_path_inputs_only() -> None:
    reply = {"role": "assistant", "content": [
        {"type": "text", "text": "I will read a.py and never touch b.py"},
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/a.py"}},
        {"type": "tool_use", "id": "t2", "name": "write_file", "input": {"path": "out/b.txt", "content": "x"}},
        {"type": "tool_use", "id": "t3", "name": "edit_file", "input": {"path": "c.md", "old": "a", "new": "b"}},
        {"type": "tool_use", "id": "t4", "name": "bash", "input": {"command": "cat d.py", "path": "d.py"}},
        {"type": "tool_use", "id": "t5", "name": "glob", "input": {"pattern": "*.py"}},
        {"type": "tool_use", "id": "t6", "name": "read_file", "input": {"path": "src/a.py"}},
    ]}
    assert facts_of(reply) == [(("path", "src/a.py"), None), (("path", "out/b.txt"), None), (("path", "c.md"), None)]


def test_errors_come_from_tool_results_with_their_call_and_never_from_a_marker() -> None:
    results = user([
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok\nImportError: no module x\n"},
        {"type": "tool_result", "tool_use_id": "t2", "content": [
            {"type": "text", "text": "test_a FAILED"}, {"type": "image", "source": {"data": "Error"}}]},
        {"type": "tool_result", "tool_use_id": "t3", "content": placeholder(".task_outputs/tool-results/t3.txt")},
    ])
    assert facts_of(results) == [(("error", "ImportError: no module x"), "t1"), (("error", "test_a FAILED"), "t2")]


def test_constraints_come_from_the_persons_text_only() -> None:
    rule = "Never touch prod.yaml"
    assert facts_of(user(f"{rule}. Then read a.py")) == [(("constraint", rule), None)]
    assert facts_of(user([{"type": "text", "text": rule}])) == [(("constraint", rule), None)]
    assert facts_of(user(unanswered(rule))) == [(("constraint", rule), None)]
    summary = summary_message("Compacted", f"{rule} please", "they said: always lint", ".transcripts/t.jsonl")
    assert facts_of(user(summary)) == [(("constraint", f"{rule} please"), None)]  # the request, not the summary
    for not_typed in (kept_note(rule), restored_message(".task_outputs/tool-results/x.txt", rule),
                      snip_marker(3, ".transcripts/t.jsonl")):
        assert facts_of(user(not_typed)) == []
    assert facts_of({"role": "assistant", "content": [{"type": "text", "text": rule}]}) == []
    assert facts_of(user([{"type": "tool_result", "tool_use_id": "t", "content": rule}])) == []
