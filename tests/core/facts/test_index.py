"""The fact index on its own: holders found wherever a fact's text is, the archive file of the step
that took a fact's last holder, and the delta each change reports."""

from __future__ import annotations

from typing import Any

from core.events import Splice
from core.facts.index import FactIndex
from core.values.records import LedgerEntry

Message = dict[str, Any]


def user(text: Any) -> Message:
    return {"role": "user", "content": text}


def read(tool_use_id: str, path: str, text: str = "") -> list[Message]:
    return [
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": tool_use_id, "name": "read_file", "input": {"path": path}}]},
        user([{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}]),
    ]


def visible(index: FactIndex) -> dict[str, bool]:
    return {fact.text: fact.visible for fact in index.report().facts}


def test_a_holder_older_than_the_fact_is_found_when_its_source_leaves() -> None:
    # the request names the path before the tool call that makes it a fact
    index = FactIndex([user("please look at src/a.py")])
    index.apply((Splice(1, 0, tuple(read("t1", "src/a.py"))),))
    assert visible(index) == {"src/a.py": True} and index.holders("path", "src/a.py") == [1]
    changed = index.apply((Splice(1, 2, ()),))  # the call and its result leave; the request stays
    assert changed == () and visible(index) == {"src/a.py": True}
    assert index.holders("path", "src/a.py") == [0]
    changed = index.apply((Splice(0, 1, ()),), [(1, [LedgerEntry("snip_compact", 3, "messages", "message #0", 40,
                                                                    None, ".transcripts/t.jsonl", False, span=(0, 1))])])
    fact, = changed
    assert (fact.text, fact.visible, fact.path) == ("src/a.py", False, ".transcripts/t.jsonl")


def test_a_later_quote_holds_a_fact_and_a_new_quote_brings_it_back() -> None:
    index = FactIndex([user("go"), *read("t1", "a.py", "ok\nKeyError: 'x'\n"),
                       {"role": "assistant", "content": [{"type": "text", "text": "It says KeyError: 'x' there."}]}])
    entry = LedgerEntry("drop", 2, "tool_result", "read_file", 30, None, ".task_outputs/tool-results/t1.txt", True,
                        tool_use_id="t1")
    placeholder = user([{"type": "tool_result", "tool_use_id": "t1",
                         "content": "[Earlier tool result saved at .task_outputs/tool-results/t1.txt]"}])
    assert index.apply((Splice(2, 1, (placeholder,)),), [(-1, [entry])]) == ()  # the reply still quotes it
    changed = index.apply((Splice(3, 1, ()),))
    assert [(f.text, f.visible, f.path) for f in changed] == [("KeyError: 'x'", False, entry.path)]
    changed = index.apply((Splice(3, 0, (user("what does KeyError: 'x' mean?"),)),))
    assert [(f.text, f.visible, f.path) for f in changed] == [("KeyError: 'x'", True, None)]


def test_a_fact_no_step_took_is_in_the_fallback_file() -> None:
    index = FactIndex([user("Never push to main."), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}],
                      fallback=".ctxtui/sessions/s.jsonl")
    fact, = index.apply((Splice(0, 1, ()),))
    assert (fact.kind, fact.source, fact.visible, fact.path) == ("constraint", "messages.0", False,
                                                                 ".ctxtui/sessions/s.jsonl")


def test_new_facts_are_reported_once_with_where_they_first_appeared() -> None:
    index = FactIndex()
    first = index.apply((Splice(0, 0, (user("hi"), *read("t1", "a.py", "FAILED test_x"))),))
    assert [(f.kind, f.text, f.source) for f in first] == [("path", "a.py", "messages.1"),
                                                           ("error", "FAILED test_x", "messages.2")]
    assert index.apply((Splice(3, 0, (user("again: a.py"),)),)) == ()  # known and visible: nothing changed
    assert index.holders("path", "a.py") == [1, 3]


def test_a_splice_that_adds_a_message_a_later_splice_removes_holds_nothing() -> None:
    index = FactIndex([user("Always run the tests."), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    marker = user("[2 messages archived at .transcripts/t.jsonl]")
    quote = user("they said: Always run the tests")
    changed = index.apply((Splice(0, 2, (quote, marker)), Splice(0, 1, ())))
    assert [(f.text, f.visible) for f in changed] == [("Always run the tests", False)]
