"""The prompt cache's accounts, without a model: prices by TTL and band, the prefix fingerprint, the
miss causes, what a change costs and the break-even formula of DESIGN.md."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.events import CacheMiss, CompactionStep
from core.usage.cache import CacheTracker, break_even_calls
from core.usage.fingerprint import Fingerprinter
from core.usage.prices import Price, Usage, price_for

SONNET_5_5 = price_for("claude-sonnet-5-5")
TOOLS = [{"name": "read_file", "description": "read", "input_schema": {"type": "object"}}]


def history(n: int, big: int = 400) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"reading {i}"},
                                                          {"type": "tool_use", "id": f"t{i}", "name": "read_file",
                                                           "input": {"path": f"f{i}"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                       "content": f"{i} " * big}]})
    return messages


# --------------------------------------------------------------------------- prices


def test_cost_parts_price_each_part_and_the_write_by_its_ttl() -> None:
    assert SONNET_5_5 is not None
    usage = Usage(input_tokens=1_000, output_tokens=2_000, cache_read_tokens=10_000, cache_creation_tokens=4_000)
    five = SONNET_5_5.parts(usage, "5m")
    assert five.input == pytest.approx(1_000 * 2.0 / 1e6)
    assert five.cache_write == pytest.approx(4_000 * 2.50 / 1e6)
    assert five.cache_read == pytest.approx(10_000 * 0.10 / 1e6)
    assert five.output == pytest.approx(2_000 * 10.0 / 1e6)
    assert five.total == pytest.approx(SONNET_5_5.cost(usage, "5m"))
    hour = SONNET_5_5.parts(usage, "1h")
    assert hour.cache_write == pytest.approx(4_000 * 4.0 / 1e6)  # 2x input
    # the API's own TTL split wins over the TTL asked for
    split = Usage(cache_creation_tokens=4_000, cache_write_1h_tokens=1_000)
    assert SONNET_5_5.parts(split, "5m").cache_write == pytest.approx((1_000 * 4.0 + 3_000 * 2.5) / 1e6)


def test_usage_reads_the_nested_figures_the_model_flattened() -> None:
    usage = Usage.from_mapping({"input_tokens": 5, "output_tokens": 40, "cache_read_input_tokens": 0,
                                "cache_creation_input_tokens": 100, "ephemeral_5m_input_tokens": 30,
                                "ephemeral_1h_input_tokens": 70, "thinking_tokens": 25})
    assert (usage.cache_write_1h_tokens, usage.thinking_tokens) == (70, 25)


def test_long_context_band_above_200k_for_sonnet_4_5_only() -> None:
    price = price_for("claude-sonnet-4-5-20250929")
    assert price is not None
    short = Usage(input_tokens=150_000, cache_read_tokens=50_000, output_tokens=1_000)
    long = Usage(input_tokens=150_001, cache_read_tokens=50_000, output_tokens=1_000)
    assert price.cost(short) == pytest.approx((150_000 * 3 + 50_000 * 0.30 + 1_000 * 15) / 1e6)
    assert price.cost(long) == pytest.approx((150_001 * 6 + 50_000 * 0.60 + 1_000 * 22.50) / 1e6)
    assert price.long_prompt is not None and price.long_prompt.write("1h") == 12.0
    flat = price_for("claude-sonnet-4-6")
    assert flat is not None and flat.long_prompt is None  # the 4.6+ models: one rate over the whole window


def test_one_hour_writes_are_twice_input_on_every_row() -> None:
    for name in ("claude-fable-5-2", "claude-fable-5-1", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-4-5"):
        price = price_for(name)
        assert price is not None and price.write("1h") == 2 * price.input and price.source


def test_break_even_is_the_contract_formula() -> None:
    # the example: 31k cached tokens re-written to save 4.1k tokens, at 1.25x / 0.1x
    price = Price(1.0, 5.0, 1.25, 0.10)
    calls = break_even_calls(31_000, 4_100, price, "5m")
    assert calls == pytest.approx(31_000 * (1.25 - 0.10) / (4_100 * 0.10))
    assert round(calls or 0) == 87
    assert break_even_calls(31_000, 4_100, price, "1h") == pytest.approx(31_000 * (2.0 - 0.10) / (4_100 * 0.10))
    assert break_even_calls(31_000, 0, price, "5m") is None  # nothing saved
    assert break_even_calls(31_000, 4_100, None, "5m") is None  # offline: no price
    step = CompactionStep("micro_compact", 20_000, 4_049, 3, cache_invalidated_tokens=31_000,
                          break_even_calls=calls, saved_tokens=4_100)
    assert step.cost_line() == ("micro_compact saved 15,951 chars (4.1k tokens), re-writes 31.0k cached tokens: "
                                "pays back after 87 calls")
    assert step.describe().endswith("files: -")  # the -p line keeps its shape; -v adds the cost line


# --------------------------------------------------------------------------- fingerprint


def test_fingerprint_finds_the_first_differing_block_and_names_it() -> None:
    prints = Fingerprinter()
    old = history(3)
    base = prints.print("m", "system", TOOLS, old)
    assert base.first_difference(prints.print("m", "system", TOOLS, [*old, {"role": "assistant", "content": "x"}])) is None
    changed = [dict(message) for message in old]
    changed[4] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "[saved]"}]}
    index = base.first_difference(prints.print("m", "system", TOOLS, changed))
    block = base.block_at(index) if index is not None else None
    assert block is not None and block.path == "messages.4.content.0"
    system = base.block_at(base.first_difference(prints.print("m", "other", TOOLS, old)) or 0)
    assert system is not None and system.path == "system"
    assert base.first_difference(prints.print("other-model", "system", TOOLS, old)) == 0
    assert base.first_difference(prints.print("m", "system", TOOLS, old[:3])) == base.index_of((3, 0))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.data())
def test_a_change_is_found_where_it_is(n: int, data: st.DataObject) -> None:
    old = history(n, big=5)
    base = Fingerprinter().print("m", "s", TOOLS, old)
    index = data.draw(st.integers(0, len(old) - 1))
    changed = [*old[:index], {"role": old[index]["role"], "content": "changed"}, *old[index + 1:]]
    found = base.first_difference(Fingerprinter().print("m", "s", TOOLS, changed))
    assert found == base.index_of((index, 0))


# --------------------------------------------------------------------------- the tracker


def answered(tracker: CacheTracker, messages: list[dict[str, Any]], at: float, tokens: int = 10_000) -> Any:
    request = Fingerprinter().print("m", "system", TOOLS, messages)
    tracker.answered(request, Usage(input_tokens=10, cache_creation_tokens=tokens), at)
    return request


def test_miss_causes_and_what_made_them() -> None:
    tracker = CacheTracker(ttl="5m")
    old = history(4)
    request = Fingerprinter().print("m", "system", TOOLS, old)
    assert tracker.miss(request, 0.0) == CacheMiss("first_call", None, None, None)
    answered(tracker, old, at=100.0)
    grown = [*old, {"role": "assistant", "content": "ok"}]
    assert tracker.miss(Fingerprinter().print("m", "system", TOOLS, grown), 200.0) is None
    assert tracker.miss(Fingerprinter().print("m", "system", TOOLS, grown), 401.0) == CacheMiss(
        "ttl_expired", None, None, 10_000)
    other = tracker.miss(Fingerprinter().print("m2", "system", TOOLS, grown), 200.0)
    assert other is not None and other.cause == "model_changed" and other.tokens == 10_000
    tools = tracker.miss(Fingerprinter().print("m", "system", [{"name": "x"}], grown), 200.0)
    assert tools is not None and (tools.cause, tools.path, tools.tokens) == ("tools_changed", "tools", 10_000)

    edited = [dict(message) for message in grown]
    edited[6] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "[saved]"}]}
    tracker.change((6, 0), "micro_compact")
    miss = tracker.miss(Fingerprinter().print("m", "system", TOOLS, edited), 200.0)
    assert miss is not None and (miss.cause, miss.by, miss.path) == ("messages_changed", "micro_compact",
                                                                    "messages.6.content.0")
    share = request.chars_from(request.index_of((6, 0))) / request.chars
    assert miss.tokens == round(10_000 * share)


def test_a_change_costs_the_cached_tail_once_and_nothing_when_cold() -> None:
    tracker = CacheTracker(ttl="5m")
    price = Price(1.0, 5.0, 1.25, 0.10)
    request = answered(tracker, history(4), at=0.0)
    ratio = 10_000 / request.chars
    late, saved = tracker.cost((6, 0), 1_000, price, 10.0)
    assert late == round(request.chars_from(request.index_of((6, 0))) * ratio)
    assert late is not None and saved == pytest.approx(late * 1.15 / (1_000 * ratio * 0.10))
    tracker.change((6, 0), "micro_compact")
    assert tracker.cost((8, 0), 500, price, 10.0)[0] == 0  # inside what was already given up
    early, _ = tracker.cost((2, 0), 500, price, 10.0)
    assert early == round(request.chars_from(request.index_of((2, 0))) * ratio) - late
    assert tracker.cost((2, 0), 500, price, 301.0)[0] == 0  # the cache went cold: nothing to lose
    appended = tracker.cost((9, 0), 500, price, 10.0)
    assert appended[0] == 0  # the messages after the last request were never cached


def test_hit_rate_is_the_share_of_prompt_tokens_read() -> None:
    tracker = CacheTracker()
    request = Fingerprinter().print("m", "s", TOOLS, history(1))
    tracker.answered(request, Usage(input_tokens=100, cache_creation_tokens=900), 0.0)
    tracker.answered(request, Usage(input_tokens=100, cache_read_tokens=900), 1.0)
    assert tracker.hit_rate == pytest.approx(900 / 2_000)
    assert tracker.expires_at == 301.0
