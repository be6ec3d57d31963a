"""`core.history.categories`: characters by category that add up exactly to `estimate_chars`.

The property tests build random API-shaped histories together with what each category must hold
(the JSON length of every text, tool input and result placed in it), so they check the attribution
as well as the sum. `Breakdown` must follow any sequence of splices to the same figures.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.events import HistoryChanged, Splice
from core.history import breakdown, estimate_chars
from core.history.categories import CATEGORIES, Breakdown
from core.history.messages import splice_between
from core.markers import persisted_output, placeholder, snip_marker, summary_message

Message = dict[str, Any]


def jlen(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
paths = st.from_regex(r"\.task_outputs/tool-results/[a-z0-9_]{1,12}\.txt", fullmatch=True)
markers = st.one_of(
    paths.map(placeholder),
    st.tuples(paths, text).map(lambda args: persisted_output(*args)),
    st.tuples(st.integers(1, 99), paths).map(lambda args: snip_marker(*args)),
    st.tuples(st.sampled_from(["Compacted", "Reactive compact"]), text, text, paths).map(
        lambda args: summary_message(*args)
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)

# Each strategy yields (piece, expected): `expected` maps a category to the chars it must hold.
Expected = dict[str, int]


def _add(total: Expected, more: Expected) -> Expected:
    return {key: total.get(key, 0) + more.get(key, 0) for key in {*total, *more}}


@st.composite
def a_text(draw: st.DrawFn, category: str) -> tuple[str, Expected]:
    if draw(st.booleans()):
        value = draw(markers)
        return value, {"markers": jlen(value)}
    value = draw(text)
    return value, {category: jlen(value)}


@st.composite
def a_text_block(draw: st.DrawFn, category: str) -> tuple[Message, Expected]:
    value, expected = draw(a_text(category))
    block: Message = {"type": "text", "text": value}
    if draw(st.booleans()):
        block["cache_control"] = {"type": "ephemeral"}  # a key like any other: overhead
    return block, expected


@st.composite
def a_tool_use(draw: st.DrawFn) -> tuple[Message, Expected]:
    block = {
        "type": "tool_use",
        "id": draw(st.from_regex(r"toolu_[a-z0-9]{1,10}", fullmatch=True)),
        "name": draw(st.sampled_from(["bash", "read_file", "glob", "édit"])),
        "input": draw(st.dictionaries(text, json_values, max_size=3)),
    }
    return block, {"tool_use": jlen(block["id"]) + jlen(block["name"]) + jlen(block["input"])}


@st.composite
def a_tool_result(draw: st.DrawFn) -> tuple[Message, Expected]:
    tool_use_id = draw(st.from_regex(r"toolu_[a-z0-9]{1,10}", fullmatch=True))
    expected: Expected = {"tool_result": jlen(tool_use_id)}
    content: Any
    if draw(st.booleans()):
        content, more = draw(a_text("tool_result"))
        expected = _add(expected, more)
    else:  # a list of blocks: text blocks (maybe markers) and an image, all the result's
        content = []
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                value, more = draw(a_text("tool_result"))
                content.append({"type": "text", "text": value})
                expected = _add(expected, more)
            else:
                image = {"type": "image", "source": {"type": "base64", "data": draw(text)}}
                content.append(image)
                expected = _add(expected, {"tool_result": jlen(image)})
    block: Message = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if draw(st.booleans()):
        block["is_error"] = True
    return block, expected


@st.composite
def a_message(draw: st.DrawFn) -> tuple[Message, Expected]:
    role = draw(st.sampled_from(["user", "assistant"]))
    if draw(st.booleans()):
        content, expected = draw(a_text(role))
        return {"role": role, "content": content}, expected
    block_strategies = [a_text_block(role)]
    if role == "assistant":
        block_strategies.append(a_tool_use())
    else:
        block_strategies.append(a_tool_result())
    blocks: list[Message] = []
    expected = {}
    for _ in range(draw(st.integers(0, 4))):
        block, more = draw(st.one_of(block_strategies))
        blocks.append(block)
        expected = _add(expected, more)
    if role == "assistant" and draw(st.booleans()):
        # thinking blocks are their own category (DESIGN.md, "Cache, thinking and cost truth")
        thinking = {"type": "thinking", "thinking": draw(text), "signature": "sig"}
        blocks.append(thinking)
        expected = _add(expected, {"thinking": jlen(thinking["thinking"]) + jlen("sig")})
    if role == "assistant" and draw(st.booleans()):
        redacted = {"type": "redacted_thinking", "data": draw(text)}
        blocks.insert(0, redacted)
        expected = _add(expected, {"thinking": jlen(redacted["data"])})
    return {"role": role, "content": blocks}, expected


histories = st.lists(a_message(), max_size=12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(histories)
def test_breakdown_adds_up_and_puts_each_part_in_its_category(history: list[tuple[Message, Expected]]) -> None:
    messages = [message for message, _ in history]
    expected: Expected = {}
    for _, more in history:
        expected = _add(expected, more)

    figures = breakdown(messages)
    assert list(figures) == list(CATEGORIES)
    assert sum(figures.values()) == estimate_chars(messages) == len(json.dumps(messages, ensure_ascii=False))
    assert all(value >= 0 for value in figures.values())
    for category in CATEGORIES[:-1]:
        assert figures[category] == expected.get(category, 0), category


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=5))
def test_breakdown_of_anything_json_adds_up(values: list[Any]) -> None:
    """Not API-shaped at all (a bad session file): still exact, the unknown parts are overhead."""
    assert sum(breakdown(values).values()) == estimate_chars(values)


splices = st.lists(
    st.tuples(st.integers(0, 20), st.integers(0, 3), st.lists(a_message(), max_size=3)), max_size=8
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(histories, splices)
def test_the_accumulator_follows_splices(
    start: list[tuple[Message, Expected]], edits: list[tuple[int, int, list[tuple[Message, Expected]]]]
) -> None:
    messages = [message for message, _ in start]
    tracker = Breakdown(messages)
    for position, removed, added in edits:
        position = min(position, len(messages))
        removed = min(removed, len(messages) - position)
        new_messages = [message for message, _ in added]
        old = messages
        messages = [*old[:position], *new_messages, *old[position + removed :]]
        event = HistoryChanged(len(messages), estimate_chars(messages), splice_between(old, messages), "edit")
        tracker.apply(event.changes)
        assert tracker.totals == breakdown(messages)
        assert tracker.chars == estimate_chars(messages)


def test_largest_items_name_their_message_and_block() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "read both"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "ok"},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * 500},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": placeholder(".task_outputs/tool-results/t.txt")},
        ]},
        {"role": "user", "content": "y" * 50},
    ]
    tracker = Breakdown(messages)
    (biggest, second) = tracker.largest("tool_result", 2)
    assert (biggest.message, biggest.block, biggest.chars) == (2, 0, jlen("x" * 500) + jlen("toolu_1"))
    assert (second.message, second.block) == (2, 1)  # only its tool_use_id: the content is a marker
    (marker,) = tracker.largest("markers")
    assert (marker.message, marker.block) == (2, 1)
    users = tracker.largest("user")
    assert [(item.message, item.block) for item in users] == [(3, None), (0, None)]
    assert tracker.largest("overhead") == [] and tracker.largest("nonsense") == []
    calls = tracker.largest("tool_use")
    assert {(item.message, item.block) for item in calls} == {(1, 1), (1, 2)}
    assert all(item.label == "read_file" for item in calls)


def test_adding_one_message_walks_only_that_message() -> None:
    messages: list[Message] = [{"role": "user", "content": f"message {n}"} for n in range(50)]
    tracker = Breakdown(messages)
    new = {"role": "assistant", "content": [{"type": "text", "text": "the newest"}]}
    walked: list[Any] = []

    import core.history.categories as module

    original = module._walk_message

    def counting(message: Any) -> Any:
        walked.append(message)
        return original(message)

    module._walk_message = counting
    try:
        tracker.apply([Splice(len(messages), 0, (new,))])
    finally:
        module._walk_message = original
    assert walked == [new]
    assert tracker.totals == breakdown([*messages, new])
