"""The diff between two requests of a conversation: exact splices, honest classes, shared messages."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.proxy.diff import MessageDiff, MessageKeys, _aligned, apply_splices, diff_messages

MARK = {"type": "ephemeral"}


def user(text: str, *, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = dict(MARK)
    return {"role": "user", "content": [block]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def result(tool_id: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": text}]}


def kinds(result: MessageDiff) -> dict[str, Any]:
    return {"added": result.added, "removed": result.removed, "changed": result.changed, "remarked": result.remarked}


def diff(previous: list[Any], current: list[Any]) -> tuple[list[Any], Any, dict[str, Any]]:
    result = diff_messages(previous, current)
    return result.interned, result.changes, kinds(result)


def full_alignment(previous: list[Any], current: list[Any]) -> MessageDiff:
    """The slow path on its own (diff_messages takes it only when the fast one does not fit)."""
    return _aligned(previous, MessageKeys.of(previous), list(current), MessageKeys.of(current))


def test_appended_messages_are_added_and_the_rest_is_shared() -> None:
    previous = [user("fix the bug")]
    current = [*copy.deepcopy(previous), assistant("done"), user("thanks")]
    interned, changes, kinds = diff(previous, current)
    assert kinds == {"added": (1, 2), "removed": (), "changed": (), "remarked": ()}
    assert interned[0] is previous[0], "an equal message is the previous request's own object"
    assert apply_splices(previous, changes) == current


def test_a_moved_cache_mark_is_not_an_edit() -> None:
    previous = [user("fix the bug", marked=True)]
    current = [user("fix the bug"), assistant("done"), user("thanks", marked=True)]
    _, changes, kinds = diff(previous, current)
    assert kinds["remarked"] == (0,) and kinds["added"] == (1, 2) and not kinds["changed"]
    assert apply_splices(previous, changes) == current  # the splice still carries the mark's move


def test_one_cleared_result_in_a_long_history_is_one_change() -> None:
    previous = [user("go")] + [m for n in range(6) for m in (assistant(f"call {n}"), result(f"t{n}", "x" * 50))]
    current = copy.deepcopy(previous)
    current[4] = result("t1", "[Old tool result content cleared]")
    current += [assistant("next"), result("t9", "y")]
    _, changes, kinds = diff(previous, current)
    assert kinds["changed"] == ((4, 4),)
    assert kinds["added"] == (len(previous), len(previous) + 1) and not kinds["removed"]
    assert apply_splices(previous, changes) == current
    assert diff_messages(previous, current).first_change == 4


def test_a_snip_removes_and_the_prefix_reports_where() -> None:
    previous = [user("a"), assistant("b"), user("c"), assistant("d"), user("e")]
    current = [previous[0], previous[3], previous[4]]
    _, changes, kinds = diff(previous, copy.deepcopy(current))
    assert kinds["removed"] == (1, 2) and not kinds["added"]
    assert apply_splices(previous, changes) == current
    assert diff_messages(previous, current).first_change == 1
    assert diff_messages(previous, [*previous, user("f")]).first_change is None


texts = st.sampled_from(["a", "b", "c", "long " * 5])
messages = st.builds(lambda role, text, marked: user(text, marked=marked) if role == "user" else assistant(text),
                     st.sampled_from(["user", "assistant"]), texts, st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, max_size=12), st.lists(messages, max_size=12))
def test_splices_turn_the_previous_request_into_the_next(previous: list[Any], current: list[Any]) -> None:
    for result in (diff_messages(previous, current), full_alignment(previous, current)):
        assert result.interned == current
        assert apply_splices(previous, result.changes) == current
        assert len(previous) - len(result.removed) + len(result.added) == len(current)
        new_places = {j for change in result.changes for j in range(change.start, change.start + len(change.added))}
        for index, message in enumerate(result.interned):
            if index not in new_places:
                assert any(message is old for old in previous), "a message no splice brings is shared, not copied"
        starts = [change.start for change in result.changes]
        assert starts == sorted(starts)
        for index, message in enumerate(result.interned):
            if any(message is old for old in previous):
                continue
            assert index in new_places


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=10), st.lists(messages, max_size=4), st.data())
def test_the_fast_path_agrees_with_the_full_alignment_on_appends(previous: list[Any], appended: list[Any],
                                                                   data: st.DataObject) -> None:
    current = [copy.deepcopy(message) for message in previous] + appended
    if previous and data.draw(st.booleans()):  # the client moved its cache mark off the last message
        current[len(previous) - 1] = without_marks(current[len(previous) - 1])
    fast, full = diff_messages(previous, current), full_alignment(previous, current)
    assert (fast.added, fast.removed, fast.changed, fast.remarked) == (full.added, full.removed, full.changed,
                                                                       full.remarked)
    assert fast.first_change is None


def without_marks(message: dict[str, Any]) -> dict[str, Any]:
    from core.proxy.diff import without_cache_marks

    result: dict[str, Any] = without_cache_marks(message)
    return result
