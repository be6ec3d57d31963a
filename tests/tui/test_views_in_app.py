"""The inspector's views in the real app: the gauge's exact count, the breakdown and timeline, the
compaction log's tokens and summaries. Pilot drives CtxApp; online tests use the real SDK against
the loopback fake API (tests/support/fakeapi.py), which implements count_tokens."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import OptionList

from core.agent import Agent
from core.config import Settings
from core.history.categories import CATEGORIES, breakdown
from core.markers import parse_marker
from tests.support.fakeapi import FakeAnthropicServer, estimate_tokens, rate_limited, settings_for
from tests.support.pilot import send, wait_for
from tui.app import CtxApp
from tui.screens.archive import ArchiveScreen
from tui.screens.summary_review import SummaryReviewScreen
from tui.widgets.breakdown import BreakdownView
from tui.widgets.compaction_log import CompactionLog
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.timeline import CHART_ROWS

SIZE = (170, 50)


def offline_agent(workdir: Path) -> Agent:
    (workdir / "a.txt").write_text("hello world\nsecond line\n" * 40, encoding="utf-8")
    return Agent.from_settings(Settings(workdir=workdir, offline=True))


def gauge_text(app: CtxApp) -> str:
    app.gauge.flush()
    return app.gauge.render().plain


# --------------------------------------------------------------------------- the gauge, online


async def test_the_gauge_shows_the_servers_exact_count_after_a_change(
    anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    agent = Agent.from_settings(settings_for(tmp_path, model="claude-haiku-4-5"))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.gauge.state.count is not None and app.gauge.state.window is not None)
        await send(pilot, app, "hello there, a request long enough to count " * 5)
        # the count after the change is the server's figure for the history as it is now
        await wait_for(pilot, lambda: any(b["messages"] == list(agent.messages) for b in anthropic_env.count_requests()))
        await app.workers.wait_for_complete()
        body = next(b for b in reversed(anthropic_env.count_requests()) if b["messages"] == list(agent.messages))
        state = app.gauge.state
        assert state.count is not None and state.count.exact
        assert state.count.tokens == estimate_tokens(body)
        text = gauge_text(app)
        assert f"next {_short(state.count.tokens)} / 200k tok" in text and "· exact" in text
        assert "window: table" in text  # the fake's Models API does not know the model: the table's figure
        # the last call's cache figures and the session's cost, from its sample
        sample = agent.timeline[-1]
        assert state.sample == sample and sample.cache_read_tokens is not None
        assert f"cache read {_short(sample.cache_read_tokens)}" in text
        assert sample.cost is not None and f"session ${sample.cost:.4f}" in text
    await agent.aclose()


async def test_a_429_on_count_tokens_shows_the_labelled_estimate(
    anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    anthropic_env.script_count(*[rate_limited(retry_after_ms=5_000)] * 20)
    agent = Agent.from_settings(settings_for(tmp_path))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.gauge.state.count is not None)
        await app.workers.wait_for_complete()
        state = app.gauge.state
        assert state.count is not None and not state.count.exact
        assert state.count_label == "estimate (count_tokens rate limited)"
        assert "estimate (count_tokens rate limited)" in gauge_text(app)
        assert anthropic_env.count_requests()  # it did ask
    await agent.aclose()


async def test_offline_the_gauge_says_estimate_and_shows_no_cost(tmp_path: Path) -> None:
    agent = offline_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")
        await app.workers.wait_for_complete()
        text = gauge_text(app)
        assert "estimate (offline)" in text and "cache, cost: none offline" in text and "$" not in text
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: app.main.query_one("#mini-gauge").display)
        mini = app.main.query_one("#mini-gauge", ContextGauge)
        mini.flush()
        line = mini.render().plain
        assert f"{agent.chars:,}/50k ch" in line and "tok est" in line and "$" not in line
    await agent.aclose()


def _short(value: int) -> str:
    from tui.format import short_count

    return short_count(value)


# --------------------------------------------------------------------------- breakdown


def shown_figures(view: BreakdownView) -> dict[str, int]:
    return {name: value for name, value in view.figures.items() if name in CATEGORIES}


async def test_the_breakdown_follows_the_history_and_equals_breakdown_of_the_messages(tmp_path: Path) -> None:
    agent = offline_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")  # the next view after the tree
        await pilot.pause()
        assert app.main.views.current == "breakdown"
        view = app.main.breakdown_view
        await send(pilot, app, "read a.txt")
        assert shown_figures(view) == breakdown(agent.messages)
        assert view.figures["system"] == len(agent.system_prompt)
        await send(pilot, app, "glob *.txt")
        assert shown_figures(view) == breakdown(agent.messages)
        table = view.query_one("#breakdown-table", OptionList)
        rows = [str(table.get_option_at_index(i).prompt) for i in range(table.option_count)]
        results = next(row for row in rows if row.startswith("■ tool results"))
        assert f"{breakdown(agent.messages)['tool_result']:,} chars" in results
    await agent.aclose()


async def test_selecting_a_breakdown_item_moves_the_tree_cursor_to_it(tmp_path: Path) -> None:
    agent = offline_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")
        await send(pilot, app, "hello")
        await app.submit("/breakdown")
        await pilot.pause()
        view = app.main.breakdown_view
        table = view.query_one("#breakdown-table", OptionList)
        assert app.focused is table
        item = view.items["tool_result"][0]
        index = next(i for i in range(table.option_count) if table.get_option_at_index(i).id == "item:tool_result:0")
        table.highlighted = index
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.main.views.current == "tree")
        await pilot.pause()
        await pilot.pause()
        node = app.message_tree.cursor_node
        assert node is not None and node.data is not None
        assert (node.data.index, node.data.block) == (item.message, item.block)
        assert agent.messages[item.message]["content"][item.block]["type"] == "tool_result"
        assert app.focused is app.message_tree
    await agent.aclose()


# --------------------------------------------------------------------------- timeline


async def test_the_timeline_has_one_column_per_model_call(tmp_path: Path) -> None:
    agent = offline_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")  # a tool call, then the answer: two model calls
        await send(pilot, app, "hello")
        await pilot.press("f2", "f2")  # tree -> breakdown -> timeline
        await pilot.pause()
        view = app.main.timeline_view
        assert app.main.views.current == "timeline" and app.focused is view
        assert view.samples == agent.timeline and len(view.samples) == 3
        marks_row = view.render().plain.splitlines()[CHART_ROWS]
        assert marks_row.split("  steps")[0].split() == ["·"] * 3  # one column per call, none compacted
        # selecting an earlier call shows its sample
        await pilot.press("left")
        assert view.current == agent.timeline[1]
        assert f"call 2/3 · sent {agent.timeline[1].chars_after:,} chars" in view.render().plain
    await agent.aclose()


# --------------------------------------------------------------------------- the compaction log


async def test_a_summary_step_shows_tokens_of_the_call_after_it_and_opens_the_decoded_summary(tmp_path: Path) -> None:
    agent = offline_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")
        await app.submit("/compact the \"quoted\" focus")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryReviewScreen))
        await pilot.press("ctrl+s")  # accept the drafted summary as it is
        log = app.main.query_one("#steps", CompactionLog)
        await wait_for(pilot, lambda: any(step.step == "compact_history" for step in log.steps))
        index = next(i for i, step in enumerate(log.steps) if step.step == "compact_history")
        assert log.tokens_text(index) == "tokens: -"  # no call after it yet
        await send(pilot, app, "hello")
        sample = agent.timeline[-1]
        assert "compact_history" in sample.steps
        assert log.tokens_text(index) == f"tokens: -> {_short(sample.tokens or 0)} est (call {sample.call})"
        entry = str(log.get_option_at_index(index).prompt)
        assert "tokens: ->" in entry and f"{log.steps[index].chars_before:,}→{log.steps[index].chars_after:,}" in entry

        # Enter on the entry: the summary (decoded, not JSON-quoted) above the transcript it replaced
        summary = next(
            m.summary for m in (parse_marker(msg["content"]) for msg in agent.messages if isinstance(msg["content"], str))
            if m is not None and m.summary is not None
        )
        assert "\n" in summary or '"' in summary  # so that JSON quoting would show
        log.focus()
        log.highlighted = index
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
        screen = app.screen
        assert isinstance(screen, ArchiveScreen)
        text = screen.text
        assert summary in text and json.dumps(summary, ensure_ascii=False) not in text
        assert text.index(summary) < text.index("read a.txt")  # the summary first, then the transcript
    await agent.aclose()
