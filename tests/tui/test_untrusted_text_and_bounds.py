"""Pilot tests of untrusted text and bounds in the TUI: terminal escapes shown as text, the permission
dialog, bounded views, resize, focus and the gauge's labels; and a resumed session's chat.

Every test drives the real CtxApp on the real offline agent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from core.agent import Agent
from core.config import Settings
from core.events import CompactionStep, ContextMeasured, PermissionRequested
from core.history import pairing_problems
from core.history.messages import INTERRUPTED
from tests.support.pilot import GaugeApp, send, settled, wait_for
from tui import messages as msg
from tui.app import CtxApp
from tui.screens.archive import ArchiveScreen
from tui.screens.permission import PermissionScreen
from tui.widgets.chat_blocks import AssistantBlock, NoticeLine, UserBlock
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.title_bar import TitleBar
from tui.widgets.tool_block import ToolBlock

OSC_TITLE = "\x1b]2;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"
CURSOR = "\x1b[2A\x1b[2K\r"
EVIL = f"first {OSC_TITLE}line\nclip {OSC_CLIPBOARD}\nmove {CURSOR}done\n"


def make_agent(workdir: Path, **kwargs: Any) -> Agent:
    (workdir / "a.txt").write_text("hello world\n", encoding="utf-8")
    return Agent.from_settings(Settings(workdir=workdir, offline=True), **kwargs)


def plain(widget: Static) -> str:
    return str(widget.render())


async def screen_text(pilot: Pilot[Any], app: CtxApp) -> str:
    """Every character the chat side of the screen would send to the terminal (its exported SVG).

    The inspector is hidden first: the message tree's labels are escaped by the tree itself
    (tui/widgets/message_tree.py, tested with the tree)."""
    if app.main.inspector_visible:
        app.main.action_toggle_inspector()
        await pilot.pause()
    return app.export_screenshot()


# --- terminal escapes ---------------------------------------------------------------------------


async def test_escapes_in_file_text_are_shown_as_visible_escapes(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    (tmp_path / "evil.txt").write_text(EVIL, encoding="utf-8")
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read evil.txt")
        block = app.chat.transcript.query(ToolBlock).last()
        block.expanded = True
        await pilot.pause()
        output = plain(block.query_one(".tool--output", Static))
        summary = plain(block.query_one(".tool--summary", Static))
        assert "\\x1b]2;pwned\\x07" in output and "\\x1b]52;c;cHduZWQ=\\x07" in output
        assert "\\x1b[2A\\x1b[2K" in output  # (reading a file turns the \\r into a newline)
        assert "\\x1b]2;pwned" in summary
        # the offline model quotes the first line in its Markdown reply
        replies = [reply.source for reply in app.chat.transcript.query(AssistantBlock)]
        assert any("\\x1b]2;pwned" in reply for reply in replies)
        assert not any("\x1b" in reply for reply in replies)
        shown = (await screen_text(pilot, app))
        assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
        assert "pwned" in shown
    await agent.aclose()


async def test_escapes_in_user_text_notices_and_errors(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, f"hello {OSC_TITLE}")
        await app.chat.add_notice(f"notice {OSC_CLIPBOARD}")
        await app.chat.add_error(f"error {CURSOR}x", "api")
        await pilot.pause()
        user = app.chat.transcript.query(UserBlock).last()
        assert "\\x1b]2;pwned\\x07" in str(user.render())
        notice = app.chat.transcript.query(NoticeLine).last()
        assert "\\x1b]52;" in str(notice.render())
        assert "\x1b" not in (await screen_text(pilot, app))
    await agent.aclose()


async def test_title_bar_shows_an_escaped_workdir(tmp_path: Path) -> None:
    workdir = tmp_path / f"dir{OSC_TITLE}"
    workdir.mkdir()
    agent = make_agent(workdir)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert "dir\\x1b]2;pwned\\x07" in app.screen.query_one(TitleBar).render().plain
        assert "\x1b" not in (await screen_text(pilot, app))
    await agent.aclose()


# --- the permission dialog ------------------------------------------------------------------------


async def test_permission_dialog_shows_cursor_movement_as_escapes(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        app.chat.input.insert(f"$ rm -rf junk {CURSOR}ls -la")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
        text = plain(app.screen.query_one("#permission-text", Static))
        assert "rm -rf junk \\x1b[2A\\x1b[2K" in text and text.rstrip().endswith("ls -la")
        assert "\x1b" not in (await screen_text(pilot, app))
        await pilot.press("n")
        await settled(pilot, app, 1)
    await agent.aclose()


async def test_permission_dialog_bounds_a_huge_command_and_says_so(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    command = "echo start " + "x" * 10_000_000 + " end"
    async with app.run_test(size=(160, 48)) as pilot:
        reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        event = PermissionRequested("toolu_huge", "bash", {"command": command, "timeout": 30}, reply)
        app.main.post_message(msg.PermissionRequested(event))
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
        text = plain(app.screen.query_one("#permission-text", Static))
        assert text.startswith("echo start xxx") and "x end\ntimeout: 30" in text
        hidden = len(command) - 40_000
        assert f"{hidden:,} of {len(command):,} chars in the middle are not shown" in text
        assert len(text) < 50_000
        await pilot.press("n")
        await wait_for(pilot, lambda: reply.done() and len(app.screen_stack) == 1)
        assert reply.result() == "deny"
    await agent.aclose()


async def test_permission_dialog_shows_the_preview_and_answers_the_future(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-hello world\n+hello " + OSC_TITLE + "\n"
    async with app.run_test(size=(160, 48)) as pilot:
        reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        event = PermissionRequested("toolu_w", "write_file", {"path": "a.txt", "content": "hello"}, reply, diff)
        app.main.post_message(msg.PermissionRequested(event))
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
        screen = app.screen
        shown = plain(screen.query_one("#permission-diff", Static))
        assert "+hello \\x1b]2;pwned\\x07" in shown and "-hello world" in shown
        assert '"path": "a.txt"' in plain(screen.query_one("#permission-text", Static))
        await pilot.press("a")
        await wait_for(pilot, lambda: reply.done() and len(app.screen_stack) == 1)
        assert reply.result() == "session"
    await agent.aclose()


async def test_permission_dialog_closes_itself_when_the_turn_is_closed(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        app.chat.input.insert("$ echo never")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
        app.main.action_cancel_turn()  # what ctrl+q and a cancelled worker do
        await settled(pilot, app, 1)
        await wait_for(pilot, lambda: len(app.screen_stack) == 1)
        assert pairing_problems(agent.messages) == []
        assert agent.messages[-1]["content"][0]["content"] == INTERRUPTED
    await agent.aclose()


async def test_expanded_tool_block_with_ten_megabytes_is_bounded(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    big = "y" * 10_000_000
    async with app.run_test(size=(160, 48)) as pilot:
        await app.chat.add_tool("toolu_big", "write_file", {"path": "big.txt", "content": big})
        await app.chat.finish_tool("toolu_big", "write_file", {}, "z\n" * 5_000_000, 10_000_000, 0.1, False)
        block = app.chat.tools["toolu_big"]
        block.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert block.expanded
        shown_input = plain(block.query_one(".tool--input", Static))
        shown_output = plain(block.query_one(".tool--output", Static))
        assert len(shown_input) < 10_000 and f"{10_000_000 - 6_000:,} more chars of input not shown" in shown_input
        assert len(shown_output) < 5_000 and "more chars not shown" in shown_output
    await agent.aclose()


# --- resize and focus -------------------------------------------------------------------------------


async def test_shrinking_the_terminal_lays_out_for_the_new_size(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        inspector = app.screen.query_one("#inspector")
        assert inspector.display
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not inspector.display
        assert app.chat.outer_size.width == 80
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert inspector.display and inspector.outer_size.width == 64
    await agent.aclose()


async def test_typing_with_the_tree_focused_goes_to_the_prompt(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read a.txt")
        tree = app.message_tree
        unfocused = tree.styles.border_top
        await pilot.press("ctrl+t")
        assert app.focused is tree
        assert tree.styles.border_top != unfocused  # focus is visible
        await pilot.press("down", "space")  # the tree's own keys still work
        assert app.focused is tree
        await pilot.press(*"/help")
        assert app.focused is app.chat.input and app.chat.input.text == "/help"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.chat.transcript.query("AssistantBlock.help")))
        assert not any(isinstance(screen, ArchiveScreen) for screen in app.screen_stack)
    await agent.aclose()


# --- labels ------------------------------------------------------------------------------------------


async def test_offline_gauge_shows_no_api_figure_and_says_why_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    agent = make_agent(tmp_path)
    assert agent.model.offline and agent.model.label == "offline model (--offline)"
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        assert "chars (0%, empty history)" in app.gauge.render().plain
        await send(pilot, app, "read a.txt")
        text = app.gauge.render().plain
        assert "API" not in text
        assert "--offline" in app.screen.query_one(TitleBar).badge
        assert "no API key" not in (await screen_text(pilot, app))
    await agent.aclose()


async def test_gauge_figures_plural_percent_and_the_last_call() -> None:
    app = GaugeApp(offline=False)
    async with app.run_test(size=(160, 48)) as pilot:
        gauge = app.query_one("#gauge", ContextGauge)
        gauge.history_changed(50_137, 1)
        gauge.flush()
        await pilot.pause()
        text = gauge.render().plain
        assert "50,137 / 50,000 chars (100.2%)" in text and "(100%)" not in text
        assert "1 message ·" in text
        gauge.history_changed(49_990, 3)
        assert "(99%)" in gauge.figure
        gauge.measured(ContextMeasured(chars=49_990, limit=50_000, messages=3, tokens=9_000, input_tokens=6_927))
        assert "last call: API input 6,927" in gauge.render().plain
        gauge.step(CompactionStep("compact_history", 49_990, 2_000, 3))
        gauge.measured(ContextMeasured(chars=2_000, limit=50_000, messages=1, tokens=400, input_tokens=6_927))
        assert "API input" not in gauge.render().plain  # it described the history before the compaction
        gauge.measured(ContextMeasured(chars=2_300, limit=50_000, messages=3, tokens=450, input_tokens=512))
        assert "last call: API input 512" in gauge.render().plain


# --- a resumed session -------------------------------------------------------------------------------


async def test_a_resumed_session_shows_its_conversation_and_prompt_history(tmp_path: Path) -> None:
    first = make_agent(tmp_path, allow_all=True)
    for request in ("read a.txt", "compact the read"):
        async for _ in first.run_turn(request):
            pass
    async for _ in first.run_turn("$ echo replayed-output"):
        pass
    await first.aclose()

    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, resume=True))
    assert len(agent.messages) > 2
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot, app)
        await wait_for(pilot, lambda: any("resumed" in line.text for line in app.chat.transcript.query(NoticeLine)))
        chat = app.chat.transcript
        # the notice is there as soon as the replay's blocks are; a Markdown block has its text once mounted
        await wait_for(pilot, lambda: any(reply.source.strip() for reply in chat.query(AssistantBlock)
                                          if not reply.has_class("welcome")))
        assert [block.text for block in chat.query(UserBlock)][-1] == "$ echo replayed-output"
        tools = list(chat.query(ToolBlock))
        assert tools and tools[-1].tool_name == "bash" and tools[-1].finished
        assert tools[-1].output is not None and "replayed-output" in tools[-1].output
        assert any(reply.source.strip() for reply in chat.query(AssistantBlock) if not reply.has_class("welcome"))
        assert any("compact_history" in line.text for line in chat.query(NoticeLine))
        await pilot.press("up")
        assert app.chat.input.text == "$ echo replayed-output"
    await agent.aclose()
