"""A dialog's buttons stand one under the other below 70 columns, side by side above (the app's
`-narrow` class, set only when the width crosses the line: tui/app.py `_fit_width`)."""

from __future__ import annotations

from pathlib import Path

from textual.containers import Horizontal

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui.app import CtxApp
from tui.screens.oversize import OversizeScreen


def layout_of_buttons(app: CtxApp) -> str:
    return app.screen.query_one(".dialog--buttons", Horizontal).styles.layout.name


async def test_dialog_buttons_stack_below_70_columns_and_follow_a_resize(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        assert app.has_class("-narrow")
        app.push_screen(OversizeScreen(90_000, 50_000))
        await wait_for(pilot, lambda: isinstance(app.screen, OversizeScreen))
        await pilot.pause()
        assert layout_of_buttons(app) == "vertical"
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: not app.has_class("-narrow"))
        await pilot.pause()
        assert layout_of_buttons(app) == "horizontal"
        await pilot.resize_terminal(69, 30)
        await wait_for(pilot, lambda: app.has_class("-narrow"))
        await pilot.pause()
        assert layout_of_buttons(app) == "vertical"
    await agent.aclose()
