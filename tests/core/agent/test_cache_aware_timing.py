"""The cache-aware compaction timing, over the real SDK and the fake's prompt cache on the test's clock.

While the cache is warm and the next request is under the ceiling, the steps that would rewrite the
cached prefix wait (a CompactionHeld says which and what they would cost) unless they pay back within
the calls the session is likely to make; they run together once they pay back, once the cache has gone
cold (costing the cache nothing), once the ceiling is reached, or when the person compacts. "eager"
runs them before every call, as the seed does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.compaction import CompactionSettings
from core.events import AgentEvent, CompactionHeld, CompactionStep, NextCallPreview
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import FakeAnthropicServer, FakeClock, text_reply, tool_reply
from tests.support.permission import run

MODEL = "claude-sonnet-5-5"
LIMIT = CompactionSettings(context_char_limit=9_000, keep_recent_results=1, micro_min_chars=50,
                           fit_preview_chars=400, persisted_preview_chars=500, large_result_char_limit=3_000)


@pytest.fixture
def clock(anthropic_env: FakeAnthropicServer) -> FakeClock:
    return anthropic_env.use_clock(FakeClock())


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Build]:
    for name in ("a.txt", "b.txt", "c.txt"):
        line = f"{name} holds this line\n"
        (tmp_path / name).write_text((line * 200)[:3_500])
    defaults = {"model": MODEL, "compaction": LIMIT, "compaction_timing": "cache-aware", "cache_ceiling_tokens": 100_000}
    async with sdk_agents(tmp_path, defaults=defaults, clock=clock) as make:
        yield make


def script_three_reads(server: FakeAnthropicServer) -> None:
    server.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
        tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
        tool_reply([("toolu_c", "read_file", {"path": "c.txt"})]),
        text_reply("read all three"),
    )


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def fired(events: list[AgentEvent]) -> list[CompactionStep]:
    return [step for step in of(events, CompactionStep) if step.saved > 0]


async def test_steps_wait_while_the_cache_is_warm_and_run_for_free_once_it_is_cold(
    build: Build, anthropic_env: FakeAnthropicServer, clock: FakeClock
) -> None:
    script_three_reads(anthropic_env)
    agent = build()
    events = await run(agent, "read a, b and c")
    assert not fired(events)  # eager would have run micro_compact before the last call
    (held,) = of(events, CompactionHeld)
    assert [step.step for step in held.steps] == ["micro_compact"] and held.steps[0].cache_invalidated_tokens
    assert held.ceiling == 100_000 and held.tokens and held.tokens < held.ceiling
    assert held.cache_expires_at == agent.timeline[-2].cache_expires_at
    last = agent.timeline[-1]
    assert last.held == ("micro_compact",) and last.timing == "cache-aware"
    assert last.cache_miss is None and last.chars_after > LIMIT.context_char_limit  # the warm prefix was read
    assert held.describe().startswith("cache-aware: micro_compact waits while the cache is warm (")

    preview, _measured, _count = [item async for item in agent.forecast()]  # preview, figures, size
    assert isinstance(preview, NextCallPreview) and preview.timing == "cache-aware"
    assert [step.step for step in preview.held] == ["micro_compact"]
    assert not [step for step in preview.steps if step.saved > 0]

    clock.advance(301)  # the person went away: the cache went cold
    anthropic_env.script(text_reply("back"))
    events = await run(agent, "go on")
    assert not of(events, CompactionHeld)
    (step,) = fired(events)
    assert step.step == "micro_compact" and step.cache_invalidated_tokens == 0  # nothing cached to lose
    after = agent.timeline[-1]
    assert after.cache_miss is not None and after.cache_miss.cause == "ttl_expired"
    assert after.chars_after <= LIMIT.context_char_limit and after.held == ()


async def test_the_ceiling_runs_the_steps_while_the_cache_is_warm(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    script_three_reads(anthropic_env)
    agent = build(cache_ceiling_tokens=2_500)
    events = await run(agent, "read a, b and c")
    assert not of(events, CompactionHeld)
    (step,) = fired(events)
    assert step.step == "micro_compact" and step.cache_invalidated_tokens  # run warm: it re-writes the cache
    assert max(sample.prompt_tokens or 0 for sample in agent.timeline) < 2_500 + 1_500


async def test_eager_runs_every_step_before_every_call(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    script_three_reads(anthropic_env)
    agent = build(compaction_timing="eager")
    events = await run(agent, "read a, b and c")
    assert not of(events, CompactionHeld)
    assert [step.step for step in fired(events)] == ["micro_compact"]
    assert all(sample.timing == "eager" for sample in agent.timeline)


async def test_the_person_compacting_runs_at_once_and_the_default_ceiling_is_80_percent_of_the_window(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.models[MODEL] = 50_000
    script_three_reads(anthropic_env)
    agent = build(cache_ceiling_tokens=0)
    events = await run(agent, "read a, b and c")
    (held,) = of(events, CompactionHeld)
    assert held.ceiling == 40_000
    anthropic_env.script(text_reply("A summary of reading three files."))
    compacted = [event async for event in agent.compact()]
    assert [step.step for step in of(compacted, CompactionStep)] == ["compact_history"]


async def test_a_step_that_pays_back_within_the_calls_made_runs_while_the_cache_is_warm(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    """Payback: after many calls a step that frees most of what it rewrites runs warm; the same step
    after a few calls (the session may end soon) waits."""
    (tmp_path / "big.txt").write_text("a large file's line\n" * 1_000)  # ~20k chars
    small = [tool_reply([(f"toolu_s{n}", "glob", {"pattern": "*.md"})]) for n in range(40)]
    anthropic_env.script(*small, tool_reply([("toolu_big", "read_file", {"path": "big.txt"})]),
                         tool_reply([("toolu_g", "glob", {"pattern": "*.txt"})]),
                         tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]), text_reply("done"))
    limit = CompactionSettings(context_char_limit=32_000, keep_recent_results=1, micro_min_chars=50,
                               fit_preview_chars=400, persisted_preview_chars=500, large_result_char_limit=25_000,
                               snip_trigger_messages=500, snip_target_messages=300)
    agent = build(compaction=limit)
    events = await run(agent, "look around, then read big.txt and a.txt")
    assert not of(events, CompactionHeld)
    (step,) = fired(events)
    assert step.step == "micro_compact" and step.cache_invalidated_tokens  # run warm: it rewrote the cache
    assert step.break_even_calls is not None and step.break_even_calls <= len(agent.timeline)

    few = build(compaction=replace(limit, context_char_limit=22_000))  # over it at the same point
    anthropic_env.script(tool_reply([("toolu_big2", "read_file", {"path": "big.txt"})]),
                         tool_reply([("toolu_g2", "glob", {"pattern": "*.txt"})]),
                         tool_reply([("toolu_a2", "read_file", {"path": "a.txt"})]), text_reply("done"))
    events = await run(few, "read big.txt and a.txt")
    (held,) = of(events, CompactionHeld)  # the same step after two calls: it would not pay back yet
    assert [held_step.step for held_step in held.steps] == ["micro_compact"]
    assert not fired(events)
