"""`/compare` in the app: the running session's log replayed under every engine, on its own screen;
before anything is recorded, one line says why there is nothing to compare."""

from __future__ import annotations

from pathlib import Path

from core.agent import Agent
from core.config import Settings
from core.engines.compare import compare_file
from tests.support.pilot import send, wait_for
from tui.app import CtxApp
from tui.screens.compare import CompareScreen
from tui.widgets.compare_view import CompareView, EngineTimeline


async def test_compare_before_anything_is_recorded_says_why(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(120, 36)) as pilot:
        assert await app.submit("/compare")
        await wait_for(pilot, lambda: any("nothing has been recorded" in n.message for n in app._notifications))
        assert not isinstance(app.screen, CompareScreen) and not agent.messages
    await agent.aclose()


async def test_compare_replays_the_running_session_log(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a file to read\n" * 20)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, yes=True))
    app = CtxApp(agent)
    async with app.run_test(size=(120, 36)) as pilot:
        await send(pilot, app, "read notes.txt")
        assert agent.session is not None
        path = agent.session.path
        assert await app.submit("/compare")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        view = app.screen.query_one(CompareView)
        await wait_for(pilot, lambda: len(view.query(EngineTimeline)) == 4)
        expected = await compare_file(path, agent.settings)
        assert view.data is not None
        assert [(row["engine"], row["calls"], row["sizes"], row["cost"]) for row in view.data["engines"]] == \
            [(row["engine"], row["calls"], row["sizes"], row["cost"]) for row in expected["engines"]]
        assert all(row["calls"] >= 1 for row in view.data["engines"])
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))
    await agent.aclose()
