"""Text in the archive viewer can be selected with the mouse and copied (issue 18): the real app, a
real drag, ctrl+c; what reaches the clipboard is the text as shown (escapes visible)."""

from __future__ import annotations

from pathlib import Path

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui.app import CtxApp
from tui.screens.archive import ArchiveScreen

TEXT = "".join(f"line {number:02d}: archived output \x1b[2K here\n" for number in range(40))


async def open_viewer(app: CtxApp) -> ArchiveScreen:
    screen = ArchiveScreen("⇲ tool result", TEXT, path=".task_outputs/tool-results/toolu_1.txt")
    await app.push_screen(screen)
    return screen


async def test_a_dragged_selection_is_copied_as_shown(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_viewer(app)
        await wait_for(pilot, lambda: screen.is_mounted)
        await pilot.pause()
        view = screen.text_area
        gutter = len("40") + 3
        # drag from "archived" on line 3 to the colon of "line 04:" on line 5 (rows 2 and 4; the end cell counts)
        start = (gutter + len("line 02: "), 2)
        end = (gutter + len("line 04"), 4)
        assert await pilot.mouse_down(view, offset=start)
        assert await pilot.hover(view, offset=end)
        assert await pilot.mouse_up(view, offset=end)
        await pilot.pause()
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: bool(app.clipboard))
        assert app.clipboard == "archived output \\x1b[2K here\nline 03: archived output \\x1b[2K here\nline 04:"
        assert "\x1b" not in app.clipboard
        assert isinstance(app.screen, ArchiveScreen)  # ctrl+c copied; it did not quit or close anything
    await agent.aclose()


async def test_with_nothing_selected_ctrl_c_copies_the_whole_text(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_viewer(app)
        await wait_for(pilot, lambda: screen.is_mounted)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: bool(app.clipboard))
        assert app.clipboard == TEXT.replace("\x1b", "\\x1b")
    await agent.aclose()
