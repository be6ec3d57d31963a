"""The gauge's figures are never left stale: after an undo, a new session (ctrl+n) and a session
resumed from the picker, the token figures are those of the history now (not "updating", not "not
counted yet"), and equal what the agent counts for the next request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import OptionList

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.sessions.log import SessionLog
from tests.support.pilot import ends_a_turn, send, settled, wait_for
from tui.app import CtxApp
from tui.screens.sessions import SessionsScreen

SIZE = (160, 48)


def make_agent(workdir: Path) -> Agent:
    settings = Settings(workdir=workdir, offline=True, compaction=CompactionSettings(context_char_limit=4_000))
    return Agent.from_settings(settings, allow_all=True)


def current(app: CtxApp, chars: int) -> bool:
    """The gauge shows figures of the history as it is (`chars`), counted, none marked stale."""
    state = app.gauge.state
    return (state.chars == chars and state.count is not None and not state.count_stale
            and state.tokens is not None and not state.tokens_stale)


async def counted_now(agent: Agent) -> int:
    return (await agent.count_next_request()).tokens


async def test_after_an_undo_the_figures_are_the_history_s_again(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"line {n} of a\n" for n in range(200)), encoding="utf-8")
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")
        await send(pilot, app, "hello")
        await wait_for(pilot, lambda: current(app, agent.chars))
        before = (agent.chars, app.gauge.state.count)
        async with ends_a_turn(pilot, app):
            await app.main.run_action("compact_now")
        await wait_for(pilot, lambda: current(app, agent.chars))
        assert agent.chars < before[0]
        app.message_tree.focus()
        await pilot.press("f3")
        await wait_for(pilot, lambda: agent.chars == before[0])
        await wait_for(pilot, lambda: current(app, agent.chars))
        count = app.gauge.state.count
        assert count is not None and before[1] is not None and count.tokens == before[1].tokens
        assert count.tokens == await counted_now(agent)
        assert "updating" not in str(app.gauge.render())
    await agent.aclose()


async def test_after_ctrl_n_the_new_session_is_counted(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello")
        await wait_for(pilot, lambda: current(app, agent.chars))
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: len(agent.messages) == 0)
        await settled(pilot, app)
        await wait_for(pilot, lambda: current(app, agent.chars))
        rendered = str(app.gauge.render())
        assert "not counted yet" not in rendered and "updating" not in rendered
        count = app.gauge.state.count
        assert count is not None and count.tokens == await counted_now(agent)
    await agent.aclose()


async def test_after_a_resume_from_the_picker_the_figures_are_the_resumed_history_s(tmp_path: Path) -> None:
    first = make_agent(tmp_path)
    app = CtxApp(first)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read nothing, just say hi")
        await send(pilot, app, "and once more")
    await first.aclose()
    assert first.session is not None
    old = first.session.path

    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "help")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        picker: Any = app.screen
        wanted = [info.path for info in picker.sessions].index(old)
        options = picker.query_one(OptionList)
        options.focus()
        options.highlighted = wanted
        await pilot.press("enter")
        await wait_for(pilot, lambda: agent.resumed_from == str(old))
        await settled(pilot, app)
        await wait_for(pilot, lambda: current(app, agent.chars))
        count = app.gauge.state.count
        assert count is not None and count.tokens == await counted_now(agent)
        assert agent.messages == SessionLog.load(old)
    await agent.aclose()
