"""A notification fits the terminal (issue 30, item 21): Textual's quit toast (ctrl+c) and ctxtui's own
are whole, inside the screen and above the footer, down to 40x12, and nothing of what lies under them
shows beside them at the right edge."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widget import Widget

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui.app import CtxApp
from tui.widgets.keys_footer import KeysFooter

LONG = "Saved screenshot to /home/someone/Downloads/ctxtui_2026-12-05T00_12_34_123456.svg"


def toasts(app: CtxApp) -> list[Widget]:
    return list(app.query("Toast"))


def assert_whole(app: CtxApp, toast: Widget) -> None:
    region = toast.region
    footer = app.main.query_one(KeysFooter).region
    assert app.screen.region.contains_region(region) and region.bottom <= footer.y, (region, app.size)
    assert region.height == toast.virtual_size.height  # every line of it shown
    for x, y in ((region.x, region.y), (region.right - 1, region.y), (region.x, region.bottom - 1),
                 (region.right - 1, region.bottom - 1)):
        assert app.screen.get_widget_at(x, y)[0] is toast
    assert region.right >= app.size.width - 1  # at the right edge: no cell of the chat beside it


@pytest.mark.parametrize("size", [(80, 24), (60, 20), (40, 12)])
@pytest.mark.parametrize("which", ["quit", "long"])
async def test_a_notification_is_whole_on_screen(tmp_path: Path, size: tuple[int, int], which: str) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=size, notifications=True) as pilot:
        await pilot.pause()
        if which == "quit":
            await pilot.press("ctrl+c")  # Textual's "Do you want to quit?"
        else:
            app.notify(LONG, title="Screenshot", markup=False)
        await wait_for(pilot, lambda: len(toasts(app)) == 1 and toasts(app)[0].region.area > 0)
        await pilot.pause()
        assert_whole(app, toasts(app)[0])
    await agent.aclose()


async def test_two_notifications_fit_at_40x12(tmp_path: Path) -> None:
    """Half of 40 columns wrapped the screenshot's notice into nine rows: with the quit toast above it,
    the quit toast went off the top of the screen."""
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(40, 12), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+c")
        app.notify(LONG, title="Screenshot", markup=False)
        await wait_for(pilot, lambda: len(toasts(app)) == 2 and all(toast.region.area for toast in toasts(app)))
        await pilot.pause()
        for toast in toasts(app):
            assert_whole(app, toast)
    await agent.aclose()
