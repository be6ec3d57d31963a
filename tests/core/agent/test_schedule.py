"""The schedule: the pipeline dry-run once per state of the history, its forecast equal to what a
prepare would do, and the agent's parts holding the conversation's state, never each other.

Over the real SDK and the fake's prompt cache on the test's clock (as test_cache_aware_timing.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.agent.economics import Economics
from core.agent.engine import EngineRunner
from core.agent.keeper import ContextKeeper
from core.agent.meter import ContextMeter
from core.agent.schedule import Schedule
from core.agent.state import ConversationState
from core.compaction import CompactionSettings
from core.events import CompactionHeld, NextCallPreview
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import FakeAnthropicServer, FakeClock, text_reply, tool_reply
from tests.support.permission import run

MODEL = "claude-sonnet-5-5"
LIMIT = CompactionSettings(context_char_limit=9_000, keep_recent_results=1, micro_min_chars=50,
                           fit_preview_chars=400, persisted_preview_chars=500, large_result_char_limit=3_000)
PARTS = (ContextKeeper, Economics, Schedule, EngineRunner, ContextMeter)


@pytest.fixture
def clock(anthropic_env: FakeAnthropicServer) -> FakeClock:
    return anthropic_env.use_clock(FakeClock())


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Build]:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text((f"{name} holds this line\n" * 200)[:3_500])
    defaults = {"model": MODEL, "compaction": LIMIT, "compaction_timing": "cache-aware",
                "cache_ceiling_tokens": 100_000}
    async with sdk_agents(tmp_path, defaults=defaults, clock=clock) as make:
        yield make


def three_reads(server: FakeAnthropicServer) -> None:
    server.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
        tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
        tool_reply([("toolu_c", "read_file", {"path": "c.txt"})]),
        text_reply("read all three"),
    )


async def forecast(agent) -> NextCallPreview:  # type: ignore[no-untyped-def]
    items = [item async for item in agent.forecast()]
    (preview,) = [item for item in items if isinstance(item, NextCallPreview)]
    return preview


async def test_the_pipeline_is_dry_run_once_per_state_of_the_history(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    three_reads(anthropic_env)
    agent = build()
    await run(agent, "read a, b and c")
    runs = agent.schedule.dry_runs
    first = await forecast(agent)
    assert agent.schedule.dry_runs == runs + 1  # the plan and the preview share one run
    again = await forecast(agent)
    assert agent.schedule.dry_runs == runs + 1 and again.held == first.held and again.steps == first.steps

    await agent.pin("toolu_b")  # the pins changed: the next prepare may differ
    assert agent.schedule.dry_runs == runs + 2  # before the pin: the forecast's run; after it: one more
    await forecast(agent)
    assert agent.schedule.dry_runs == runs + 2  # the pin's own run is the forecast's


async def test_the_forecast_of_a_held_prepare_is_what_a_held_dry_run_does(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    three_reads(anthropic_env)
    agent = build()
    await run(agent, "read a, b and c")
    preview = await forecast(agent)
    assert [step.step for step in preview.held] == ["micro_compact"]  # the cache is warm: it waits
    held = await agent.compactor.dry_run(agent.messages, agent.conversation.request, hold=True)
    assert [(step.step, step.saved, step.changed_at) for step in preview.steps] == [
        (step.step, step.saved, step.changed_at) for step in held
    ]


async def test_a_turn_plans_with_the_state_of_its_own_request(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    """The forecast's run is not reused for the turn's call (the turn's request changed the history):
    what waits is decided on the history the call sends."""
    three_reads(anthropic_env)
    agent = build()
    await run(agent, "read a, b and c")
    await forecast(agent)
    anthropic_env.script(text_reply("ok"))
    events = await run(agent, "and now?")
    (held,) = [event for event in events if isinstance(event, CompactionHeld)]
    assert held.steps and held.steps[0].chars_before == agent.timeline[-1].chars_before


async def test_each_part_holds_the_state_and_no_other_part(build: Build) -> None:
    agent = build()
    parts = [agent.keeper, agent.economics, agent.schedule, agent.engine, agent.meter]
    for part in parts:
        held = list(vars(part).values())
        assert agent.state in held or isinstance(part, ContextMeter)
        assert not [value for value in held if isinstance(value, PARTS)], type(part).__name__
    assert agent.meter.state is agent.state
    assert agent.compactor.pins is agent.state.pins  # one pin set: the state's, which the compactor reads
    assert isinstance(agent.state, ConversationState)
