"""The prompt cache, thinking and cost in the real app, online against the loopback fake API and its
prompt cache on the test's clock: the gauge's cache clock (run down by its timer, not by asking the
agent) and hit rate, the timing and what waits, the timeline's colours, misses and diff, a step's
cost line in the chat, the log and the preview, and thinking collapsed in the chat."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style

from core.agent import Agent
from core.compaction import CompactionSettings
from core.events import cache_cost_line
from tests.support.fakeapi import (
    FakeAnthropicServer,
    FakeClock,
    MessageReply,
    settings_for,
    text_reply,
    tool_reply,
)
from tests.support.pilot import send, wait_for
from tui.app import CtxApp
from tui.screens.preview import PreviewScreen
from tui.widgets.chat_blocks import CompactionNotice, NoticeLine
from tui.widgets.compaction_log import CompactionLog
from tui.widgets.thinking_block import ThinkingBlock
from tui.widgets.timeline import CHART_ROWS

MODEL = "claude-sonnet-5-5"
SIZE = (170, 50)
LIMIT = CompactionSettings(context_char_limit=9_000, keep_recent_results=1, micro_min_chars=50,
                           fit_preview_chars=400, persisted_preview_chars=500, large_result_char_limit=3_000)
Build = Callable[..., Agent]


@pytest.fixture
def clock(anthropic_env: FakeAnthropicServer) -> FakeClock:
    return anthropic_env.use_clock(FakeClock())


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Build]:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text((f"{name} holds this line\n" * 200)[:3_500])
    agents: list[Agent] = []

    def make(**overrides: Any) -> Agent:
        values = {"model": MODEL, "compaction": LIMIT, **overrides}
        agent = Agent.from_settings(settings_for(tmp_path, **values))
        agent.state.clock = clock
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()


def script_three_reads(server: FakeAnthropicServer) -> None:
    server.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
        tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
        tool_reply([("toolu_c", "read_file", {"path": "c.txt"})]),
        text_reply("read all three"),
    )


def gauge_text(app: CtxApp) -> str:
    app.gauge.flush()
    return app.gauge.render().plain


async def test_the_gauge_runs_the_caches_clock_down_on_its_own_timer(
        build: Build, anthropic_env: FakeAnthropicServer, clock: FakeClock) -> None:
    agent = build()
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        app.gauge.clock = clock
        await send(pilot, app, "hello")
        await send(pilot, app, "and again")
        sample = agent.timeline[-1]
        assert sample.cache_expires_at is not None and sample.hit_rate is not None
        text = gauge_text(app)
        assert "cache warm: cold in 5:00 (5m TTL)" in text
        assert f"hit rate {sample.hit_rate:.0%}" in text and "timing: eager" in text
        asked = len(anthropic_env.requests)
        clock.advance(301)  # nothing happens in the app: only its timer can notice the cache went cold
        await wait_for(pilot, lambda: "cache cold for 0:01" in app.gauge.render().plain)
        assert len(anthropic_env.requests) == asked  # nobody asked the API (or the agent) anything
    await agent.aclose()


async def test_a_step_that_rewrites_the_warm_cache_says_what_it_costs_and_the_next_call_shows_the_miss(
        build: Build, anthropic_env: FakeAnthropicServer) -> None:
    script_three_reads(anthropic_env)
    agent = build()
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a, b and c")
        notice = next(block for block in app.chat.query(CompactionNotice) if block.step.step == "micro_compact")
        step = notice.step
        assert step.cache_invalidated_tokens and step.break_even_calls is not None
        cost = cache_cost_line(step.cache_invalidated_tokens, step.break_even_calls)
        assert cost.startswith("re-writes ") and ": pays back after " in cost
        assert step.cost_line() in str(notice.render())  # the chat's line says it
        log = app.main.query_one("#steps", CompactionLog)
        assert cost in str(log.get_option_at_index(log.steps.index(step)).prompt)
        # the call after the step missed the cache, by the step: the timeline marks it and names it
        missed = next(sample for sample in agent.timeline if sample.cache_miss and sample.cache_miss.by)
        assert (missed.cache_miss.cause, missed.cache_miss.by) == ("messages_changed", "micro_compact")
        await app.submit("/timeline")
        view = app.main.timeline_view
        view.select(agent.timeline.index(missed))
        await pilot.pause()
        lines = view.render().plain.splitlines()
        assert "✗" in lines[CHART_ROWS + 1]
        details = "\n".join(lines[CHART_ROWS + 2:])
        assert f"cache miss: messages changed at {missed.cache_miss.path} by micro_compact" in details
        assert missed.prefix_change is not None and f"changed at {missed.prefix_change.path}: was " in details
        assert f"✗ call {missed.call} messages changed by micro_compact" in details
        assert "■ cache read" in details and "■ cache write" in details
        # each call's bar is coloured by what of its prompt was read, written and uncached
        bar = view.render().spans
        colours = {str(span.style.color.name) for span in bar
                   if isinstance(span.style, Style) and span.style.color is not None}
        assert {"gold1", "dark_orange"} <= colours
    await agent.aclose()


async def test_cache_aware_timing_shows_what_waits_and_the_preview_prices_it(
        build: Build, anthropic_env: FakeAnthropicServer) -> None:
    script_three_reads(anthropic_env)
    agent = build(compaction_timing="cache-aware", cache_ceiling_tokens=100_000)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a, b and c")
        held = next(line for line in app.chat.query(NoticeLine) if line.text.startswith("cache-aware: "))
        assert "micro_compact waits while the cache is warm" in held.text
        await wait_for(pilot, lambda: "waiting for the cache: micro_compact" in gauge_text(app))
        assert "timing: cache-aware" in gauge_text(app)
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        screen = app.screen
        assert isinstance(screen, PreviewScreen)
        assert screen.timing == "cache-aware" and [step.step for step in screen.held] == ["micro_compact"]
        text = " ".join(str(static.render()) for static in screen.query("Static"))
        assert "Compaction timing: cache-aware." in text and "cache: re-writes " in text
    await agent.aclose()


async def test_thinking_is_shown_collapsed_in_the_chat(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.models[MODEL] = 1_000_000
    anthropic_env.thinking[MODEL] = ("adaptive", "disabled")
    anthropic_env.script(MessageReply([{"type": "thinking", "thinking": "First [b]look[/b] at the files."},
                                       {"type": "text", "text": "Done thinking."}]))
    agent = build()
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "think about it")
        block = app.chat.query_one(ThinkingBlock)
        assert block.collapsed and block.text == "First [b]look[/b] at the files."
        assert block.title == f"thinking · {len(block.text)} chars"
        children = list(app.chat.transcript.children)
        assert children.index(block) < len(children) - 1  # before the text it led to
    await agent.aclose()
