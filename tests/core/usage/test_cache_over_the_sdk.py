"""Why each call missed the prompt cache, and what each change cost it: over the real SDK and the
loopback fake, whose cache works by prefix with TTLs on the test's clock and answers diagnostics as
the API documents (tests/support/fake_cache.py).

Each test builds the agent with `Agent.from_settings` (AnthropicModel -> AsyncAnthropic -> HTTP on
127.0.0.1) on a priced model, and checks the samples, steps and steering events against what the
fake cache did and what the formulas of DESIGN.md ("Cache, thinking and cost truth") say.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.events import (
    AgentEvent,
    CacheMiss,
    CompactionStep,
    ContextSampled,
    NextCallPreview,
    Notice,
    TurnFinished,
)
from core.usage.prices import price_for
from core.usage.timeline import describe_sample
from core.values.samples import TokenCount
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import (
    FakeAnthropicServer,
    FakeClock,
    MessageReply,
    error_reply,
    text_reply,
    tool_reply,
)
from tests.support.permission import run

MODEL = "claude-sonnet-5-5"
PRICE = price_for(MODEL)


@pytest.fixture
def clock(anthropic_env: FakeAnthropicServer) -> FakeClock:
    return anthropic_env.use_clock(FakeClock())


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Build]:
    async with sdk_agents(tmp_path, defaults={"model": MODEL}, clock=clock) as make:
        yield make


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def streamed(server: FakeAnthropicServer) -> list[dict[str, Any]]:
    return [body for body in server.message_requests() if body.get("stream") is True]


def n(value: int | None) -> int:
    """A usage figure the API gave (online, answered: never None)."""
    assert value is not None
    return value


def turns(agent: Agent) -> list[Any]:
    return [sample for sample in agent.timeline if sample.kind == "turn"]


def write(tmp_path: Path, name: str, chars: int) -> None:
    line = f"{name} has a line of text here\n"
    (tmp_path / name).write_text((line * (chars // len(line) + 1))[:chars])


def small_limit(limit: int = 9_000) -> CompactionSettings:
    return CompactionSettings(context_char_limit=limit, keep_recent_results=1, micro_min_chars=50,
                              fit_preview_chars=400, persisted_preview_chars=500, large_result_char_limit=3_000)


# --------------------------------------------------------------------------- every call priced


async def test_first_call_then_the_prefix_is_read_and_every_part_is_priced(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n" * 50)
    anthropic_env.script(tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]), text_reply("done"))
    agent = build()
    events = await run(agent, "read a.txt")
    assert of(events, TurnFinished)[0].error is None
    first, second = agent.timeline
    assert first.cache_miss == CacheMiss("first_call", None, None, None)
    assert second.cache_miss is None and n(second.cache_read_tokens) == n(first.cache_creation_tokens) > 0
    for sample in (first, second):
        parts = sample.cost_parts
        assert parts is not None and PRICE is not None and sample.cost == pytest.approx(parts.total)
        assert parts.input == pytest.approx(n(sample.input_tokens) * PRICE.input / 1e6)
        assert parts.cache_write == pytest.approx(n(sample.cache_creation_tokens) * PRICE.cache_write / 1e6)
        assert parts.cache_read == pytest.approx(n(sample.cache_read_tokens) * PRICE.cache_read / 1e6)
        assert parts.output == pytest.approx(n(sample.output_tokens) * PRICE.output / 1e6)
        assert sample.cache_ttl == "5m" and sample.timing == "eager"
        assert sample.cache_expires_at == pytest.approx((sample.started_at or 0) + 300)
    total = n(first.prompt_tokens) + n(second.prompt_tokens)
    assert second.hit_rate == pytest.approx(n(second.cache_read_tokens) / total)
    # diagnostics: the first request opts in without a previous id, the second names the first reply
    bodies = streamed(anthropic_env)
    assert bodies[0]["diagnostics"] == {"previous_message_id": None}
    assert str(bodies[1]["diagnostics"]["previous_message_id"]).startswith("msg_fake_")
    assert (first.api_miss_reason, second.api_miss_reason) == (None, "none")
    assert of(events, ContextSampled)[-1].session_cost == pytest.approx((first.cost or 0) + (second.cost or 0))
    assert "cache miss: first call" in describe_sample(first)


# --------------------------------------------------------------------------- both TTLs


async def test_five_minutes_later_the_cache_is_cold(build: Build, anthropic_env: FakeAnthropicServer,
                                                    clock: FakeClock) -> None:
    anthropic_env.script(text_reply("one"), text_reply("two"), text_reply("three"))
    agent = build()
    await run(agent, "first " * 50)
    clock.advance(120)
    await run(agent, "second")
    warm = agent.timeline[1]
    assert warm.cache_miss is None and warm.cache_read_tokens
    clock.advance(301)
    await run(agent, "third")
    cold = agent.timeline[2]
    assert cold.cache_miss == CacheMiss("ttl_expired", None, None,
                                        n(warm.cache_read_tokens) + n(warm.cache_creation_tokens))
    assert cold.cache_read_tokens == 0 and cold.cache_creation_tokens  # the fake's cache expired too
    assert cold.api_miss_reason == "none"  # the API's diagnosis compares structure only: it agrees


async def test_one_hour_ttl_is_sent_kept_for_an_hour_and_priced_at_twice_input(
    build: Build, anthropic_env: FakeAnthropicServer, clock: FakeClock
) -> None:
    anthropic_env.script(text_reply("one"), text_reply("two"), text_reply("three"))
    agent = build(cache_ttl="1h")
    await run(agent, "first " * 50)
    clock.advance(40 * 60)
    await run(agent, "second")
    body = streamed(anthropic_env)[1]
    assert body["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    first, second = agent.timeline
    assert second.cache_miss is None and second.cache_read_tokens == first.cache_creation_tokens
    assert PRICE is not None and first.cost_parts is not None
    assert first.cost_parts.cache_write == pytest.approx(n(first.cache_creation_tokens) * 2 * PRICE.input / 1e6)
    assert second.cache_expires_at == pytest.approx((second.started_at or 0) + 3600)
    clock.advance(3601)
    await run(agent, "third")
    assert agent.timeline[2].cache_miss is not None and agent.timeline[2].cache_miss.cause == "ttl_expired"


# --------------------------------------------------------------------------- what changed the prefix


async def test_a_step_that_rewrites_the_prefix_names_itself_and_its_cost(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        write(tmp_path, name, 3_500)
    anthropic_env.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
        tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
        tool_reply([("toolu_c", "read_file", {"path": "c.txt"})]),
        text_reply("done"),
    )
    agent = build(compaction=small_limit())
    events = await run(agent, "read the three files")
    (step,) = [event for event in of(events, CompactionStep) if event.step == "micro_compact"]
    assert step.changed_at == (2, 0)  # the oldest read result
    after = next(sample for sample in agent.timeline if "micro_compact" in sample.steps)
    miss = after.cache_miss
    assert miss is not None
    assert (miss.cause, miss.by, miss.path) == ("messages_changed", "micro_compact", "messages.2.content.0")
    assert miss.api_reason == "messages_changed" and miss.agrees
    assert step.cache_invalidated_tokens == miss.tokens and miss.tokens
    before = agent.timeline[agent.timeline.index(after) - 1]
    cached = n(before.cache_read_tokens) + n(before.cache_creation_tokens)
    assert miss.tokens < cached
    assert n(after.cache_read_tokens) < cached  # the fake missed too
    assert PRICE is not None and step.saved_tokens
    assert step.break_even_calls == pytest.approx(
        miss.tokens * (PRICE.cache_write - PRICE.cache_read) / (step.saved_tokens * PRICE.cache_read), rel=1e-3)
    assert "micro_compact saved" in step.cost_line() and "pays back after" in step.cost_line()
    # the diff from the previous request, as the timeline shows it for the selected call
    change = after.prefix_change
    assert change is not None and change.path == "messages.2.content.0"
    assert change.before.startswith("user tool_result toolu_a 'a.txt has a line")
    assert change.after.startswith("user tool_result toolu_a '[Earlier tool result saved at .task_outputs/")


async def test_system_tools_and_model_changes_are_named_and_the_api_agrees(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(*(text_reply(f"reply {n}") for n in range(4)))
    agent = build()
    await run(agent, "one " * 40)
    agent.system_prompt += "\nBe brief."
    await run(agent, "two")
    agent.toolbox._tools.pop("glob")  # a tool set that changed between two calls
    await run(agent, "three")
    agent.model.name = "claude-sonnet-5"
    await run(agent, "four")
    _, system, tools, model = agent.timeline
    assert system.cache_miss is not None and tools.cache_miss is not None and model.cache_miss is not None
    assert (system.cache_miss.cause, system.cache_miss.path, system.cache_miss.by) == ("system_changed", "system", None)
    assert (tools.cache_miss.cause, tools.cache_miss.path) == ("tools_changed", "tools")
    assert model.cache_miss.cause == "model_changed"
    assert system.prefix_change is not None and system.prefix_change.path == "system"
    assert model.prefix_change is not None and model.prefix_change.before == MODEL
    misses = [system.cache_miss, tools.cache_miss, model.cache_miss]
    assert [miss.api_reason for miss in misses] == ["system_changed", "tools_changed", "model_changed"]
    assert all(miss.tokens for miss in misses)


async def test_the_apis_diagnosis_is_shown_beside_ours_and_a_disagreement_is_said(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    told = MessageReply([{"type": "text", "text": "two"}],
                        diagnostics=(True, {"cache_miss_reason": {"type": "tools_changed",
                                                                  "cache_missed_input_tokens": 500}}))
    anthropic_env.script(text_reply("one"), told, text_reply("three"))
    agent = build()
    await run(agent, "one " * 40)
    events = await run(agent, "two")
    sample = agent.timeline[1]
    assert sample.cache_miss is None and sample.api_miss_reason == "tools_changed"
    (notice,) = [n for n in of(events, Notice) if n.message.startswith("cache:")]
    assert "whole cached prefix reused" in notice.message and "tools_changed" in notice.message
    assert "API reports a cache miss (tools_changed)" in describe_sample(sample)
    anthropic_env.cache_diagnostics.pending = True
    agent.system_prompt += " (changed)"
    events = await run(agent, "three")
    third = agent.timeline[2]
    assert third.cache_miss is not None and third.cache_miss.cause == "system_changed"
    assert third.api_miss_reason is None and third.cache_miss.api_reason is None  # pending: no judgement
    assert not [n for n in of(events, Notice) if n.message.startswith("cache:")]


# --------------------------------------------------------------------------- steering actions


async def test_drop_restore_and_undo_say_what_they_cost_and_the_next_miss_names_them(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    for name in ("a.txt", "b.txt"):
        write(tmp_path, name, 3_000)
    anthropic_env.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
        tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
        text_reply("read both"), text_reply("after drop"), text_reply("after restore"),
    )
    agent = build()
    await run(agent, "read a and b")
    dropped = await agent.drop("toolu_a")
    assert dropped is not None and dropped.cache_invalidated_tokens and dropped.break_even_calls
    await run(agent, "go on")
    miss = turns(agent)[-1].cache_miss
    assert miss is not None and (miss.cause, miss.by, miss.path) == ("messages_changed", "drop", "messages.2.content.0")
    assert miss.tokens == dropped.cache_invalidated_tokens
    path = agent.archive.expected_tool_result_path("toolu_a")
    restored = await agent.restore(path)
    assert restored is not None and restored.cache_invalidated_tokens
    assert restored.break_even_calls is None  # a restore saves nothing: it never pays back
    await run(agent, "and again")
    miss = turns(agent)[-1].cache_miss
    assert miss is not None and miss.by == "restore"


async def test_an_undo_is_named_and_a_pin_says_what_it_spares(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        write(tmp_path, name, 3_500)
    anthropic_env.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"}), ("toolu_b", "read_file", {"path": "b.txt"}),
                    ("toolu_c", "read_file", {"path": "c.txt"})]),
        text_reply("three read"), text_reply("compacted"), text_reply("undone"),
    )
    agent = build(compaction=small_limit(), auto_compact=False)
    await run(agent, "read a, b and c")
    agent.auto_compact = True
    # the next call would micro-compact toolu_a, the oldest: pinned, it shortens a later result instead
    pinned = await agent.pin("toolu_a")
    assert pinned.cache_invalidated_tokens is not None and pinned.cache_invalidated_tokens < 0
    unpinned = await agent.unpin("toolu_a")
    assert unpinned.cache_invalidated_tokens == -pinned.cache_invalidated_tokens
    assert unpinned.break_even_calls is not None and unpinned.break_even_calls > 0
    await run(agent, "go on")
    assert agent.compactions
    undone = await agent.undo_compaction()
    assert undone is not None and undone.cache_invalidated_tokens
    agent.auto_compact = False  # else the next prepare would compact the same results again
    await run(agent, "and on")
    miss = turns(agent)[-1].cache_miss
    assert miss is not None and miss.by == "undo" and miss.tokens == undone.cache_invalidated_tokens


async def test_the_preview_prices_a_step_as_it_will_cost(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        write(tmp_path, name, 3_500)
    anthropic_env.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"}), ("toolu_b", "read_file", {"path": "b.txt"}),
                    ("toolu_c", "read_file", {"path": "c.txt"})]),
        text_reply("read"), text_reply("next"),
    )
    agent = build(compaction=small_limit(), auto_compact=False)
    await run(agent, "read all")
    agent.auto_compact = True
    (preview,) = [step for step in await agent.preview() if step.step == "micro_compact"]
    forecast, _measured, count = [item async for item in agent.forecast()]  # preview, figures, size
    assert isinstance(forecast, NextCallPreview) and isinstance(count, TokenCount) and count.tokens
    assert forecast.steps and forecast.timing == "eager" and forecast.held == ()
    events = await run(agent, "next")
    (ran,) = [step for step in of(events, CompactionStep) if step.step == "micro_compact"]
    assert preview.cache_invalidated_tokens == ran.cache_invalidated_tokens and ran.cache_invalidated_tokens
    assert preview.break_even_calls == pytest.approx(ran.break_even_calls)
    assert [step.cache_invalidated_tokens for step in forecast.steps if step.step == "micro_compact"] == [
        ran.cache_invalidated_tokens]


async def test_an_endpoint_that_refuses_the_diagnostics_field_is_asked_again_without_it(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(error_reply(400, "invalid_request_error", "diagnostics: Extra inputs are not permitted"),
                         text_reply("answered"), text_reply("again"))
    agent = build()
    events = await run(agent, "hello")
    assert of(events, TurnFinished)[0].error is None and of(events, TurnFinished)[0].text == "answered"
    refused, retried = streamed(anthropic_env)
    assert "diagnostics" in refused and "diagnostics" not in retried
    await run(agent, "more")
    assert "diagnostics" not in streamed(anthropic_env)[2]  # not asked for again in this session
    assert agent.timeline[-1].api_miss_reason is None
