"""core/engines/replay.py and the prompt cache it prices with (core/engines/pricing.py): the file's
clock (timed), the bootstrap interval, which files a folder holds, loading a real trajectory; the
cache going cold past its TTL and the memo computing each message's text once; and, by property over
small generated trajectories replayed with low limits, that what the client engines take stays
recoverable and that no engine ever sends more than the `none` baseline for the same call."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import random
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.engines.pricing as pricing
from core.compaction.settings import CompactionSettings
from core.config import Settings
from core.engines.compare import Replay, run_engine
from core.engines.pricing import MIN_CACHEABLE, Memo, PrefixCache
from core.engines.replay import (
    DEFAULT_GAP,
    ReplayError,
    find_files,
    interval,
    load,
    replay_recorded,
    summarise,
    timed,
)
from core.engines.sources import Recorded, split_calls
from core.history.sizes import estimate_chars
from core.history.tokens import TokenCounter
from core.sessions.inspection import Inspected
from core.trajectories import read_trajectory
from core.trajectories.model import HistoryBuilder

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories" / "swe-agent"
NAMES = sorted(path.name for path in FIXTURES.glob("*.traj.json.gz"))
Message = dict[str, Any]


# --- the clock --------------------------------------------------------------------------------------------


def test_timed_keeps_the_files_times_and_fills_the_gaps() -> None:
    assert timed([None, None]) == []
    assert timed([]) == []
    assert timed([100.0, None, 50.0, 200.0]) == [100.0, 100.0 + DEFAULT_GAP, 100.0 + 2 * DEFAULT_GAP, 200.0]
    assert timed([10, 20, 20, 30]) == [10.0, 20.0, 20.0, 30.0]
    result = [value for value in timed([5.0, None, None, 1000.0, 999.0]) if value is not None]
    assert len(result) == 5
    assert all(a <= b for a, b in itertools.pairwise(result))
    assert result[-1] == 1000.0 + DEFAULT_GAP


@pytest.mark.parametrize("name", NAMES)
def test_load_a_real_trajectory(name: str) -> None:
    recorded = load(FIXTURES / name)
    trajectory = read_trajectory(FIXTURES / name)
    assert trajectory is not None
    assert len(recorded.calls) == trajectory.calls
    assert recorded.model == "deepseek-chat"
    assert recorded.system == trajectory.system
    assert recorded.times == trajectory.times
    assert [call.reply for call in recorded.calls] == [m for m in trajectory.messages if m["role"] == "assistant"]
    assert recorded.inspected.kind == "swe-agent"


def test_load_refuses_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.traj.json"
    path.write_bytes(gzip.decompress((FIXTURES / NAMES[0]).read_bytes())[:3000])
    with pytest.raises(ReplayError) as caught:
        load(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


# --- files ------------------------------------------------------------------------------------------------


def test_find_files_searches_folders_sorted(tmp_path: Path) -> None:
    for name in ("b.traj.json", "a.json", "c.jsonl", "d.traj", "e.json.gz", "f.traj.gz", "notes.txt", "g.gz",
                 "sub/h.json", ".ctxtui/x.json", "sub/.ctxtui/y.jsonl"):
        path = tmp_path / "runs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    single = tmp_path / "single.log"
    single.write_text("{}")
    files, problems = find_files([tmp_path / "runs", single, tmp_path / "missing", tmp_path / "runs" / "a.json"])
    relative = [str(path.relative_to(tmp_path)) for path in files]
    assert relative == ["runs/a.json", "runs/b.traj.json", "runs/c.jsonl", "runs/d.traj", "runs/e.json.gz",
                        "runs/f.traj.gz", "runs/sub/h.json", "single.log"]
    assert problems == [f"{tmp_path / 'missing'}: no such file or folder"]


# --- the bootstrap ----------------------------------------------------------------------------------------


def test_interval_brackets_the_share_and_is_seeded() -> None:
    rng = random.Random(7)
    none = [rng.uniform(1000, 5000) for _ in range(12)]
    engine = [value * rng.uniform(0.5, 1.1) for value in none]
    share = 1 - sum(engine) / sum(none)
    low, high = interval(engine, none, seed=3)
    assert low <= round(share, 4) <= high and low < high
    assert interval(engine, none, seed=3) == [low, high]
    assert interval(engine, none, seed=4) != [low, high]
    assert interval(none, none, seed=0) == [0.0, 0.0]
    assert interval([], [], seed=0) == [0.0, 0.0]


def record(name: str, billed: dict[str, float]) -> dict[str, Any]:
    row = {"calls": 2, "input_chars": 10, "input_tokens": 5, "billed_input_tokens": 0.0, "cost_usd": 0.01,
           "peak_tokens": 3, "sum_tokens": 5, "steps": {}, "summaries": 0, "removed": 0, "referenced_later": 0,
           "anchors": {"kept": 1, "recoverable": 0, "lost": 0}}
    return {"file": name, "calls": 2, "engines": {engine: {**row, "billed_input_tokens": value}
                                                  for engine, value in billed.items()}}


def test_summarise_shares_against_none() -> None:
    records = [record("a", {"none": 100.0, "client": 50.0}), record("b", {"none": 300.0, "client": 330.0})]
    data = summarise(records, ["none", "client"], seed=0)
    assert data["trajectories"] == 2 and data["calls"] == 4
    assert data["engines"]["none"]["saved_vs_none"] == {"share": 0.0, "ci95": [0.0, 0.0]}
    client = data["engines"]["client"]["saved_vs_none"]
    assert client["share"] == round(1 - 380 / 400, 4)
    assert client["ci95"][0] <= client["share"] <= client["ci95"][1]
    assert [row["file"] for row in data["per_trajectory"]] == ["a", "b"]
    assert data["per_trajectory"][1]["engines"]["client"]["billed_input_tokens"] == 330.0


# --- the prompt cache: TTL ---------------------------------------------------------------------------------


class Counting:
    """A token counter that counts its calls: one token per 4 characters."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def count_text(self, text: str) -> int:
        self.calls[text] += 1
        return len(text) // 4


def big(tag: str, tokens: int = 1100) -> Message:
    return {"role": "user", "content": tag + "." * (tokens * 4 - len(tag))}


def cache(ttl: str = "5m") -> tuple[PrefixCache, Counting]:
    counter = Counting()
    return PrefixCache(counter, None, ttl), counter  # type: ignore[arg-type]


def step(prefix: PrefixCache, messages: Sequence[Message], at: float | None) -> tuple[int, int, int]:
    """One request: the tokens it read from the cache, wrote, and sent uncached."""
    before = (prefix.bill.cache_read_tokens, prefix.bill.cache_write_tokens, prefix.bill.input_tokens)
    prefix.request("system prompt", [], messages, at=at)
    return (prefix.bill.cache_read_tokens - before[0], prefix.bill.cache_write_tokens - before[1],
            prefix.bill.input_tokens - before[2])


def test_within_the_ttl_the_shared_prefix_is_read() -> None:
    prefix, _ = cache()
    one, two, three = big("one"), big("two"), big("three")
    read, written, uncached = step(prefix, [one, two], at=1000.0)
    total = prefix.bill.sizes[-1]
    assert (read, uncached) == (0, 0) and written == total >= MIN_CACHEABLE
    read, written, uncached = step(prefix, [one, two, three], at=1000.0 + 299)
    assert read == total and written == prefix.bill.sizes[-1] - total and uncached == 0
    assert written == prefix.tokens_of(three)


def test_more_than_the_ttl_later_the_cache_is_cold() -> None:
    prefix, _ = cache()
    one, two, three = big("one"), big("two"), big("three")
    step(prefix, [one, two], at=1000.0)
    read, written, _ = step(prefix, [one, two, three], at=1000.0 + 301)
    assert read == 0 and written == prefix.bill.sizes[-1]


def test_exactly_the_ttl_later_is_still_warm_and_each_request_refreshes_it() -> None:
    prefix, _ = cache()
    history: list[Message] = [big("start")]
    step(prefix, history, at=0.0)
    for number, at in enumerate((300.0, 590.0, 880.0, 1170.0)):  # each within 300 s of the one before
        previous = list(history)
        history = [*history, big(f"m{number}")]
        read, written, _ = step(prefix, history, at=at)
        assert read == prefix.tokens_of([]) + prefix.tokens_of("system prompt") \
            + sum(prefix.tokens_of(message) for message in previous), at
        assert written == prefix.tokens_of(history[-1]), at


def test_one_hour_ttl_and_no_clock() -> None:
    prefix, _ = cache("1h")
    one, two = big("one"), big("two")
    step(prefix, [one], at=0.0)
    assert step(prefix, [one, two], at=3000.0)[0] > 0
    assert step(prefix, [one, two], at=3000.0 + 3601)[0] == 0
    no_clock, _ = cache()
    step(no_clock, [one], at=None)
    assert step(no_clock, [one, two], at=None)[0] > 0  # no time recorded: within the TTL


def test_a_short_request_is_uncached_and_leaves_the_cache_empty() -> None:
    prefix, _ = cache()
    small = {"role": "user", "content": "hi"}
    read, written, uncached = step(prefix, [small], at=0.0)
    assert (read, written) == (0, 0) and uncached == prefix.bill.sizes[-1] < MIN_CACHEABLE
    one = big("one")
    read, written, _ = step(prefix, [small, one], at=1.0)
    assert read == 0 and written == prefix.bill.sizes[-1]


def test_billed_input_prices_reads_and_writes() -> None:
    prefix, _ = cache()
    one, two = big("one"), big("two")
    step(prefix, [one], at=0.0)
    step(prefix, [one, two], at=10.0)
    bill = prefix.bill
    assert bill.cache_read_tokens > 0 and bill.cache_write_tokens > 0
    assert bill.billed_input("5m") == pytest.approx(bill.input_tokens + 1.25 * bill.cache_write_tokens
                                                    + 0.1 * bill.cache_read_tokens)
    assert bill.billed_input("1h") == pytest.approx(bill.input_tokens + 2.0 * bill.cache_write_tokens
                                                    + 0.1 * bill.cache_read_tokens)


# --- the memo ---------------------------------------------------------------------------------------------


def test_memo_computes_each_messages_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    dumped: Counter[int] = Counter()
    real = pricing.dumps

    def counting_dumps(value: Any) -> str:
        dumped[id(value)] += 1
        return real(value)

    monkeypatch.setattr(pricing, "dumps", counting_dumps)
    counter = Counting()
    memo = Memo(counter)  # type: ignore[arg-type]
    first = PrefixCache(counter, None, "5m", memo)  # type: ignore[arg-type]
    second = PrefixCache(counter, None, "5m", memo)  # type: ignore[arg-type]
    tools: list[Any] = [{"name": "bash"}]
    history: list[Message] = []
    calls = 25
    for number in range(calls):
        history.append(big(f"message {number}", tokens=60))
        first.request("system", tools, history, at=number * 10.0)
        second.request("system", tools, history[-5:], at=number * 10.0)
    # every message object dumped once (the tools list too), however many requests carried it
    assert sum(dumped.values()) == calls + 1
    assert set(dumped.values()) == {1}
    # every distinct text counted once: the messages, the tools, the system prompt
    assert sum(counter.calls.values()) == calls + 2
    assert set(counter.calls.values()) == {1}


def test_memo_counts_equal_texts_of_distinct_objects_once() -> None:
    counter = Counting()
    memo = Memo(counter)  # type: ignore[arg-type]
    copies = [{"role": "user", "content": "same"} for _ in range(5)]
    assert {memo.tokens(copy) for copy in copies} == {len(json.dumps(copies[0])) // 4}
    assert sum(counter.calls.values()) == 1
    assert memo.tokens("plain text") == len("plain text") // 4
    assert memo.text("plain text") == "plain text"


# --- by property: small trajectories replayed with low limits ---------------------------------------------

CLIENTS = ("client", "client-cache-aware", "masking")
WORDS = ("alpha_function", "beta_variable_name", "src/app/main.py", "lib/util/helpers.py", "ok", "done", "x",
         "Error: bad input", "FAILED test_one", "Traceback (most recent call last):", "value", "a/b")


def low_settings(workdir: Path) -> Settings:
    return Settings(workdir=workdir, cache_ceiling_tokens=300, compaction=CompactionSettings(
        context_char_limit=2000, snip_trigger_messages=10, snip_target_messages=6, tool_result_batch_char_limit=3000,
        large_result_char_limit=1500, persisted_preview_chars=200, fit_preview_chars=100, keep_recent_results=1))


def text_of(seed: int, size: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS) + (f"_{rng.randrange(100)}" if rng.random() < 0.5 else "")
        parts.append(word)
        length += len(word) + 1
        if rng.random() < 0.1:
            parts.append("\n")
    return " ".join(parts)[:size]


ROUND = st.tuples(
    st.integers(0, 60),  # the assistant's text size
    st.lists(st.tuples(st.text("abcxyz_0123", min_size=1, max_size=5), st.integers(0, 2600)), max_size=2),  # calls
    st.integers(0, 400),  # a user turn after it (0: none)
    st.integers(0, 10**6),  # the seed of the texts
)


def trajectory_of(rounds: list[tuple[int, list[tuple[str, int]], int, int]]) -> list[Message]:
    builder = HistoryBuilder()
    builder.user_text("Fix the failing test in src/app/main.py; do not touch lib/util/helpers.py.")
    for number, (said, calls, typed, seed) in enumerate(rounds):
        uses = [(f"{name}-{number}-{index}", "bash", {"command": text_of(seed + index, 30)})
                for index, (name, _) in enumerate(calls)]
        builder.assistant(text_of(seed, said), uses)
        for index, ((use_id, _, _), (_, size)) in enumerate(zip(uses, calls, strict=True)):
            builder.tool_result(use_id, text_of(seed * 7 + index, size))
        if typed:
            builder.user_text(text_of(seed * 3, typed))
    builder.assistant("Done.")
    messages, _, _ = builder.finish()
    return messages


def recorded_of(messages: list[Message], workdir: Path) -> Recorded:
    inspected = Inspected(workdir / "generated.json", "messages", messages)
    return Recorded(inspected, calls=split_calls(messages), system="You fix bugs.", tools=[], model=None,
                    times=[])


async def chars_per_call(messages: list[Message], engines: Sequence[str], workdir: Path) -> dict[str, list[int]]:
    counter = TokenCounter()
    memo = Memo(counter)
    sizes = {}
    for name in engines:
        with tempfile.TemporaryDirectory(prefix="ctxtui-test-replay-") as scratch:
            replay = Replay(name, recorded_of(messages, workdir), low_settings(workdir), Path(scratch), counter, memo)
            await run_engine(name, replay)
            sizes[name] = replay.run.chars
    return sizes


def test_low_limits_make_every_client_engine_compact(tmp_path: Path) -> None:
    """The properties below are not vacuous: with these limits a modest trajectory is compacted by
    every client engine, and results are taken out of later requests."""
    rounds = [(40, [("a", 2400), ("b", 900)], 0, seed) for seed in range(6)]
    messages = trajectory_of(rounds)
    data = asyncio.run(replay_recorded(recorded_of(messages, tmp_path), low_settings(tmp_path),
                                       engines=("none", *CLIENTS)))
    for name in CLIENTS:
        engine = data["engines"][name]
        assert engine["steps"] and engine["removed"] > 0, (name, engine)
        assert engine["anchors"]["recoverable"] > 0 and engine["anchors"]["lost"] == 0, (name, engine["anchors"])
    assert data["engines"]["none"]["steps"] == {}


@settings(max_examples=30, deadline=None)
@given(st.lists(ROUND, min_size=1, max_size=12))
def test_client_engines_lose_no_anchor(rounds: list[tuple[int, list[tuple[str, int]], int, int]]) -> None:
    """What the client engines take out of the request stays recoverable (archive files, transcripts):
    no anchor of any tool result is nowhere at the end; the baseline removes nothing."""
    messages = trajectory_of(rounds)
    with tempfile.TemporaryDirectory(prefix="ctxtui-test-workdir-") as workdir:
        data = asyncio.run(replay_recorded(recorded_of(messages, Path(workdir)), low_settings(Path(workdir)),
                                           engines=("none", *CLIENTS)))
    engines = data["engines"]
    total = sum(engines["none"]["anchors"].values())
    assert engines["none"]["anchors"] == {"kept": total, "recoverable": 0, "lost": 0}
    assert engines["none"]["removed"] == 0 and engines["none"]["referenced_later"] == 0
    for name in CLIENTS:
        anchors = engines[name]["anchors"]
        assert anchors["lost"] == 0, (name, anchors, engines[name]["steps"])
        assert sum(anchors.values()) == total, name
        assert engines[name]["calls"] == data["calls"] == sum(1 for m in messages if m["role"] == "assistant")


@settings(max_examples=30, deadline=None)
@given(st.lists(ROUND, min_size=1, max_size=12))
def test_no_client_engine_sends_more_than_none(rounds: list[tuple[int, list[tuple[str, int]], int, int]]) -> None:
    """Call by call, what an engine sends is never larger than the whole conversation so far."""
    messages = trajectory_of(rounds)
    with tempfile.TemporaryDirectory(prefix="ctxtui-test-workdir-") as workdir:
        sizes = asyncio.run(chars_per_call(messages, ("none", *CLIENTS), Path(workdir)))
    calls = split_calls(messages)
    history: list[Message] = []
    expected = []
    for call in calls:
        history.extend(call.added)
        expected.append(estimate_chars(history))
        history.append(call.reply)  # type: ignore[arg-type]
    assert sizes["none"] == expected
    assert expected == [len(json.dumps(messages[: index], ensure_ascii=False))
                        for index, message in enumerate(messages) if message["role"] == "assistant"]
    for name in CLIENTS:
        assert len(sizes[name]) == len(calls), name
        larger = [(number, mine, base) for number, (mine, base) in enumerate(zip(sizes[name], sizes["none"],
                                                                                  strict=True), 1) if mine > base]
        assert not larger, (name, larger)


def test_reused_call_ids_do_not_make_the_baseline_remove_results(tmp_path: Path) -> None:
    """A file whose provider numbers calls per reply (`call_0` every turn): the `none` engine sends
    everything as recorded, so it cannot have removed a result, nor regret one."""
    builder = HistoryBuilder()
    builder.user_text("Fix the bug.")
    builder.assistant("Looking.", [("call_0", "bash", {"command": "ls"})])
    builder.tool_result("call_0", "found src/pkg/alpha_module.py")
    builder.assistant("Reading.", [("call_0", "bash", {"command": "cat"})])
    builder.tool_result("call_0", "beta_function_name is defined here")
    builder.assistant("Editing src/pkg/alpha_module.py now.")
    messages, _, _ = builder.finish()
    data = asyncio.run(replay_recorded(recorded_of(messages, tmp_path), Settings(workdir=tmp_path), engines=("none",)))
    none = data["engines"]["none"]
    assert none["removed"] == 0 and none["referenced_later"] == 0, none
    assert data["results"] == 2
    assert none["anchors"]["kept"] >= 3 and none["anchors"]["lost"] == 0, none["anchors"]
