"""Usage, prices, windows and the timeline without a network: offline everything is an estimate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import ContextSampled
from core.history import estimate_chars
from core.model.counting import estimate_request, model_window
from core.usage.prices import Price, Usage, price_for, window_for
from core.usage.timeline import Timeline, describe_sample, session_cost
from core.values.samples import ContextSample
from tests.support.permission import give_policy, run

pytestmark = pytest.mark.usefixtures("no_api_key")


async def allow(tool: str, tool_input: dict[str, Any]) -> bool:
    return True


async def test_offline_timeline_is_estimated_and_costs_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n" * 20)
    agent = give_policy(Agent.from_settings(Settings(workdir=tmp_path, offline=True,
                                                     compaction=CompactionSettings())), allow)
    try:
        events = await run(agent, "read a.txt")
        timeline = agent.timeline
        assert len(timeline) == 2  # the tool call, then the report on its result
        assert [event.sample for event in events if isinstance(event, ContextSampled)] == timeline
        for sample in timeline:
            assert sample.offline and sample.cost is None
            assert sample.input_tokens is None and sample.cache_read_tokens is None
            assert sample.estimated_tokens and sample.tokens == sample.estimated_tokens
            line = describe_sample(sample)
            assert "tiktoken estimate" in line and "no cost offline" in line
        assert timeline[0].chars_after == estimate_chars(agent.messages[:1])
        assert timeline[1].chars_after == estimate_chars(agent.messages[:3])

        count = await agent.count_next_request()
        assert count.source == "estimate" and count.reason == "offline"
        assert count.label == "estimated (tiktoken, offline)"
        assert count.tokens == estimate_request(
            agent.tokens, agent.system_prompt, agent.messages, agent.toolbox.schemas
        )
        window = await model_window(agent.model, setting=100_000)
        assert (window.tokens, window.source) == (100_000, "setting")
        agent.new_session()
        assert agent.timeline == []  # calls and cost are per session
        await run(agent, "help")
        assert [sample.call for sample in agent.timeline] == [1]
    finally:
        await agent.aclose()


def test_usage_from_the_api_dict() -> None:
    usage = Usage.from_mapping({"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 100,
                                "cache_creation_input_tokens": None})
    assert usage == Usage(input_tokens=10, output_tokens=3, cache_read_tokens=100, cache_creation_tokens=0)
    assert usage.prompt_tokens == 110


def test_prices_by_alias_snapshot_and_override() -> None:
    assert price_for("claude-haiku-4-5-20251001") == price_for("claude-haiku-4-5") == Price(1.0, 5.0, 1.25, 0.10)
    assert price_for("claude-sonnet-5-5[1m]") == price_for("claude-sonnet-5-5")
    assert price_for("claude-test") is None
    mine = Price(1.0, 1.0, 1.0, 1.0)
    assert price_for("claude-sonnet-5-5", override=mine) is mine


def test_haiku_5_5_long_prompts_pay_the_second_band() -> None:
    price = price_for("claude-haiku-5-5")
    assert price is not None
    short = Usage(input_tokens=50_000, output_tokens=1_000, cache_read_tokens=50_000)
    long = Usage(input_tokens=50_001, output_tokens=1_000, cache_read_tokens=50_000)
    assert price.cost(short) == pytest.approx((50_000 * 0.10 + 1_000 * 0.50 + 50_000 * 0.01) / 1e6)
    assert price.cost(long) == pytest.approx((50_001 * 0.50 + 1_000 * 2.50 + 50_000 * 0.05) / 1e6)


def test_windows_api_then_table_then_setting() -> None:
    assert window_for("claude-sonnet-5-5", api_tokens=900_000).source == "api"
    assert (window_for("claude-sonnet-5-5").tokens, window_for("claude-sonnet-5-5").source) == (1_000_000, "table")
    assert window_for("claude-opus-4-5-20251101").tokens == 200_000
    assert window_for("mystery", setting=8_000).source == "setting"
    assert window_for("mystery").tokens is None
    assert window_for("claude-sonnet-5-5").label == "1M window (table)"


def test_timeline_collects_steps_and_the_size_before_them() -> None:
    timeline = Timeline(price=Price(1.0, 2.0, 0.0, 0.0))
    timeline.note_before(900)
    timeline.note_before(800)  # only the first size since the last call counts
    timeline.note_step("micro_compact", 300)
    timeline.note_step("fit_tool_results", 100)
    sample = timeline.start(500, messages=7, estimated_tokens=120)
    assert (sample.call, sample.chars_before, sample.chars_after) == (1, 900, 500)
    assert (sample.steps, sample.saved) == (("micro_compact", "fit_tool_results"), (300, 100))
    done = timeline.finish({"input_tokens": 1_000_000, "output_tokens": 0})
    assert done.cost == pytest.approx(1.0) and timeline.samples == [done]
    second = timeline.start(600, messages=9)
    assert (second.call, second.chars_before, second.steps) == (2, 600, ())
    failed = timeline.finish(None, "boom")
    assert failed.error == "boom" and failed.cost is None
    assert timeline.session_cost == pytest.approx(1.0) == session_cost(timeline.samples)
    assert session_cost([]) is None


def test_describe_sample_is_one_line() -> None:
    sample = ContextSample(call=3, chars_before=60_000, chars_after=40_000, steps=("micro_compact",),
                           saved=(20_000,), input_tokens=100, cache_read_tokens=9_000,
                           cache_creation_tokens=400, output_tokens=50, cost=0.0123)
    line = describe_sample(sample)
    assert line == (
        "[call 3] · 60,000 -> 40,000 chars · after micro_compact -20,000 · 9,500 tokens "
        "(input 100, cache read 9,000, cache write 400) · output 50 · $0.0123"
    )
    failed = describe_sample(ContextSample(1, 5, 5, error="refused\n\x1b[31mred"))
    assert failed == "[call 1] · 5 chars · failed: refused \\x1b[31mred"
