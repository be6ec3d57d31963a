"""The permission dialog as a new user met it (issue 18): at 80x24 and 120x40 the buttons stay on
screen whatever the call's size, the call and its diff scroll with the keys and the wheel, what is
not shown is said at the top, and a real control byte looks unlike text that merely reads like one.

Every test drives the real CtxApp on the real offline agent (Pilot)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.content import Content
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, Static

from core.agent import Agent
from core.config import Settings
from core.events import PermissionRequested
from tests.support.pilot import settled, wait_for
from tui import messages as msg
from tui.app import CtxApp
from tui.screens.permission import ESCAPE_STYLE, PermissionScreen

SIZES = [(80, 24), (120, 40), (60, 24)]  # 60 columns: the buttons stack (side by side, Deny was cut)
OLD = "".join(f"old line {index}\n" for index in range(30))
NEW = "".join(f"new line {index}\n" for index in range(30))
COMMAND = "echo " + "x" * 51_615  # 51,620 chars, as the user's


def make_app(workdir: Path) -> tuple[Agent, CtxApp]:
    (workdir / "a.txt").write_text(OLD, encoding="utf-8")
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True))
    return agent, CtxApp(agent)


async def ask(pilot: Pilot[Any], app: CtxApp, tool: str, tool_input: dict[str, Any]) -> asyncio.Future[str]:
    """A PermissionRequested as the turn worker posts it; returns its reply future."""
    reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    app.main.post_message(msg.PermissionRequested(PermissionRequested("toolu_ask", tool, tool_input, reply)))
    await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
    await pilot.pause()
    return reply


def on_screen(app: CtxApp, widget: Widget) -> bool:
    """The widget is what the terminal shows at every cell of its first row (not clipped, not covered)."""
    region = widget.region
    if not region.area:
        return False
    return all(app.screen.get_widget_at(x, region.y)[0] is widget for x in range(region.x, region.right))


async def write_the_user_did(pilot: Pilot[Any], app: CtxApp) -> None:
    """A 30-line write of an existing 30-line file, typed into the prompt."""
    app.chat.input.insert("write a.txt\n" + NEW)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
    await pilot.pause()


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
async def test_a_thirty_line_write_keeps_the_buttons_on_screen_and_scrolls_the_diff(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    agent, app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await write_the_user_did(pilot, app)
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        for button in screen.query(Button):
            assert on_screen(app, button), f"{button.id} is not on screen at {size}"
        body = screen.body
        assert body.max_scroll_y > 0  # the diff is longer than the room it has
        await pilot.press("end")
        await wait_for(pilot, lambda: body.scroll_y == body.max_scroll_y)
        diff = screen.query_one("#permission-diff", Static)
        assert diff.region.bottom <= screen.query_one("#permission-buttons").region.y  # its end is above the buttons
        await pilot.press("home")
        await wait_for(pilot, lambda: body.scroll_y == 0)
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: body.scroll_y > 0)
        for button in screen.query(Button):
            assert on_screen(app, button)
        await pilot.press("n")
        await settled(pilot, app, 1)
        assert (tmp_path / "a.txt").read_text(encoding="utf-8") == OLD
    await agent.aclose()


@pytest.mark.parametrize("size", SIZES)
async def test_a_huge_command_keeps_the_buttons_and_says_what_is_cut_at_the_top(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    agent, app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        reply = await ask(pilot, app, "bash", {"command": COMMAND, "timeout": 30})
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        for button in screen.query(Button):
            assert on_screen(app, button), f"{button.id} is not on screen at {size}"
        notice = screen.query_one("#permission-hidden", Static)
        assert on_screen(app, notice)
        assert "11,620 of 51,620 chars" in str(notice.render())
        assert notice.region.y < screen.query_one("#permission-text").region.y  # above the command
        # the wheel scrolls the call; the warning and the buttons stay where they are
        body = screen.body
        at = notice.region.y
        for _ in range(3):
            body.post_message(events.MouseScrollDown(body, 1, 1, 0, 1, 0, False, False, False))
        await wait_for(pilot, lambda: body.scroll_y > 0)
        assert notice.region.y == at and on_screen(app, notice)
        await pilot.press("end")
        await wait_for(pilot, lambda: body.scroll_y == body.max_scroll_y)
        assert "timeout: 30" in str(screen.query_one("#permission-text", Static).render())
        for button in screen.query(Button):
            assert on_screen(app, button)
        await pilot.click("#deny")
        await wait_for(pilot, lambda: reply.done() and len(app.screen_stack) == 1)
        assert reply.result() == "deny"
    await agent.aclose()


async def test_a_real_escape_is_styled_apart_from_the_same_text_typed(tmp_path: Path) -> None:
    agent, app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        # a real ESC, then the four characters backslash x 1 b, as the model might type them
        await ask(pilot, app, "bash", {"command": "printf '\x1b[2K' && echo typed:\\x1b[2K"})
        shown = app.screen.query_one("#permission-text", Static).content
        assert isinstance(shown, Content)
        assert shown.plain == "printf '\\x1b[2K' && echo typed:\\x1b[2K"
        real = shown.plain.index("\\x1b")
        typed = shown.plain.index("\\x1b", real + 1)
        marked = [span for span in shown.spans if span.style == ESCAPE_STYLE]
        assert [(span.start, span.end) for span in marked] == [(real, real + 4)]
        assert not any(span.start <= typed < span.end for span in shown.spans)
        await pilot.press("n")
    await agent.aclose()


async def test_the_title_uses_the_right_article(tmp_path: Path) -> None:
    agent, app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ask(pilot, app, "edit_file", {"path": "a.txt", "old_text": "old", "new_text": "new"})
        title = str(app.screen.query_one(".dialog--title", Static).render())
        assert "run an edit_file call" in title
        await pilot.press("n")
    await agent.aclose()
