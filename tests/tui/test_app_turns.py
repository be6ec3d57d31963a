"""Pilot tests of the chat side of the app: turns, streaming, the gauge, cancel, permission, actions.

Every test drives the real CtxApp with the real offline agent (no network, no API key).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot

from core.agent import Agent
from core.config import Settings
from core.history import estimate_chars, pairing_problems
from core.history.messages import INTERRUPTED
from core.model.offline import OfflineModel
from core.tools import PERMISSION_DENIED
from tests.support.pilot import palette_highlights, settled, wait_for
from tui import messages as msg
from tui.app import CtxApp
from tui.screens.compact_prompt import CompactPromptScreen
from tui.screens.permission import PermissionScreen
from tui.screens.summary_review import SummaryReviewScreen
from tui.widgets.chat_blocks import AssistantBlock, NoticeLine, UserBlock
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.title_bar import TitleBar
from tui.widgets.tool_block import ToolBlock


def make_agent(workdir: Path, **kwargs: Any) -> Agent:
    (workdir / "a.txt").write_text("hello world\nsecond line\n", encoding="utf-8")
    return Agent.from_settings(Settings(workdir=workdir, offline=True), **kwargs)


async def type_and_send(pilot: Pilot[Any], text: str, *, keys: bool = False) -> None:
    """Put `text` in the prompt (key by key if `keys`) and press Enter."""
    if keys:
        await pilot.press(*text)
    else:
        app = pilot.app
        assert isinstance(app, CtxApp)
        app.chat.input.insert(text)
    await pilot.press("enter")


async def allow_all(tool_name: str, tool_input: dict[str, Any]) -> bool:
    return True


async def test_read_turn_streams_markdown_and_gauge_is_exact(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    seen: list[Message] = []
    async with app.run_test(size=(160, 48), message_hook=seen.append) as pilot:
        assert app.focused is app.chat.input
        await type_and_send(pilot, "read a.txt", keys=True)
        await settled(pilot, app, 1)

        users = list(app.chat.transcript.query(UserBlock))
        assert [block.text for block in users] == ["read a.txt"]
        assert any(isinstance(message, msg.TextDelta) for message in seen)
        replies = [block.source for block in app.chat.transcript.query(AssistantBlock)]
        assert any("read_file" in reply and "a.txt" in reply for reply in replies)
        tools = list(app.chat.transcript.query(ToolBlock))
        assert len(tools) == 1 and tools[0].finished and not tools[0].is_error
        assert tools[0].output is not None and "hello world" in tools[0].output

        gauge = app.query_one("#gauge", ContextGauge)
        exact = estimate_chars(agent.messages)
        assert gauge.chars == exact
        assert gauge.figure.startswith(f"{exact:,} / 50,000 chars")
        assert gauge.figure in gauge.render().plain
        assert f"{len(agent.messages)} messages" in gauge.render().plain
        # the title bar says which model runs, and that it is the offline one
        assert "OFFLINE · offline model" in app.query_one(TitleBar).render().plain
    await agent.aclose()


async def test_narrow_terminal_hides_inspector_and_toggles_it(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(80, 24)) as pilot:
        inspector = app.query_one("#inspector")
        mini = app.query_one("#mini-gauge", ContextGauge)
        assert not inspector.display and mini.display
        await type_and_send(pilot, "read a.txt")
        await settled(pilot, app, 1)
        assert mini.state.chars == estimate_chars(agent.messages)
        await pilot.press("ctrl+b")
        assert inspector.display and not mini.display
        await pilot.press("ctrl+t")
        assert app.focused is app.message_tree
        await pilot.press("ctrl+t")
        assert app.focused is app.chat.input
        width = inspector.outer_size.width
        await pilot.press("f9")
        await pilot.pause()
        assert inspector.outer_size.width > width
    await agent.aclose()


async def test_escape_mid_stream_cancels_cleanly(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, model=OfflineModel(chunk_delay=0.05))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        assert app.check_action("cancel_turn", ()) is False  # hidden while idle
        await type_and_send(pilot, "help")
        await wait_for(pilot, lambda: bool(app.chat.transcript.query(AssistantBlock)))
        assert app.busy and app.check_action("cancel_turn", ()) is True
        await pilot.press("escape")
        await settled(pilot, app, 1)
        assert pairing_problems(agent.messages) == []
        assert [message["role"] for message in agent.messages] == ["user"]  # no partial assistant text
        notices = [line.text for line in app.chat.transcript.query(NoticeLine)]
        assert "[cancelled]" in notices
        assert not app.busy
    await agent.aclose()


async def test_escape_during_bash_answers_the_tool_use(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        # the sleep is what is interrupted: the command must still run when escape comes
        await type_and_send(pilot, "$ touch started.txt; sleep 5; touch finished.txt")
        await wait_for(pilot, lambda: (tmp_path / "started.txt").exists())  # the command runs
        await pilot.press("escape")
        await settled(pilot, app, 1)
        assert not (tmp_path / "finished.txt").exists()  # the command was stopped, not waited for
        assert pairing_problems(agent.messages) == []
        last = agent.messages[-1]
        assert last["role"] == "user" and last["content"][0]["content"] == INTERRUPTED
        block = next(iter(app.chat.tools.values()))
        assert block.is_error and block.output == INTERRUPTED
    await agent.aclose()


async def test_a_running_command_shows_its_output_and_escape_keeps_it(tmp_path: Path) -> None:
    """What bash prints shows while it runs, and Esc keeps it: the block and the tool result both hold it."""
    agent = make_agent(tmp_path, allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await type_and_send(pilot, "$ echo first line; echo second line; sleep 5; touch finished.txt")
        await wait_for(pilot, lambda: bool(app.chat.tools))
        block = next(iter(app.chat.tools.values()))
        await wait_for(pilot, lambda: "second line" in str(block._summary.render()))  # live, before it ends
        assert not block.finished
        await pilot.press("escape")
        await settled(pilot, app, 1)
        assert not (tmp_path / "finished.txt").exists()
        assert pairing_problems(agent.messages) == []
        result = agent.messages[-1]["content"][0]["content"]
        assert result.startswith(INTERRUPTED) and "first line\nsecond line\n" in result
        assert block.is_error and block.output is not None and "first line\nsecond line" in block.output
    await agent.aclose()


async def test_permission_deny_then_allow_for_session(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    assert app.permission_mode == "ask"
    seen: list[Message] = []
    async with app.run_test(size=(160, 48), message_hook=seen.append) as pilot:
        await type_and_send(pilot, "$ echo hi")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
        assert "echo hi" in str(app.screen.query_one("#permission-text").render())
        await pilot.press("n")
        await settled(pilot, app, 1)
        finished = [m.event for m in seen if isinstance(m, msg.ToolCallFinished)]
        assert finished[-1].output == PERMISSION_DENIED and finished[-1].is_error
        assert agent.messages[-2]["content"][0]["content"] == PERMISSION_DENIED

        await type_and_send(pilot, "$ echo one")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
        await pilot.press("a")
        await settled(pilot, app, 2)
        finished = [m.event for m in seen if isinstance(m, msg.ToolCallFinished)]
        assert "one" in finished[-1].output and not finished[-1].is_error

        await type_and_send(pilot, "$ echo two")
        await settled(pilot, app, 3)
        assert not any(isinstance(screen, PermissionScreen) for screen in app.screen_stack)
        finished = [m.event for m in seen if isinstance(m, msg.ToolCallFinished)]
        assert "two" in finished[-1].output and not finished[-1].is_error
    await agent.aclose()


async def test_preset_permission_is_kept(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, allow_all=True)
    app = CtxApp(agent)
    assert app.permission_mode == "preset"
    async with app.run_test(size=(160, 48)) as pilot:
        await type_and_send(pilot, "$ echo preset")
        await settled(pilot, app, 1)
        assert "preset" in agent.messages[-2]["content"][0]["content"]
    await agent.aclose()


async def test_compact_binding_asks_for_focus_and_compacts(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    seen: list[Message] = []
    async with app.run_test(size=(160, 48), message_hook=seen.append) as pilot:
        await type_and_send(pilot, "read a.txt")
        await settled(pilot, app, 1)
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: isinstance(app.screen, CompactPromptScreen))
        await pilot.press(*"notes", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryReviewScreen))  # summary first
        await pilot.press("ctrl+s")
        await settled(pilot, app, 2)
        steps = [m.event for m in seen if isinstance(m, msg.CompactionStep)]
        assert [step.step for step in steps] == ["compact_history"]
        assert steps[0].detail == "focus: notes"
        assert len(agent.messages) == 1
        assert app.gauge.chars == estimate_chars(agent.messages)
        assert "compact_history" in app.gauge.render().plain  # "last: compact_history saved ..."
        assert app.message_tree.entries[0][1].data is not None
        assert app.message_tree.entries[0][1].data.kind == "compacted"
    await agent.aclose()


async def test_new_session_clears_chat_tree_and_history(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await type_and_send(pilot, "read a.txt")
        await settled(pilot, app, 1)
        assert app.message_tree.entries
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: not app.message_tree.syncing)
        await pilot.pause()
        assert agent.messages == []
        assert app.message_tree.entries == [] and not app.message_tree.root.children
        assert not app.chat.transcript.query(UserBlock)
        assert app.gauge.chars == 2  # "[]"
    await agent.aclose()


async def test_quit_cancels_the_running_turn_and_closes_the_agent(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await type_and_send(pilot, "$ sleep 5")  # a command still running when ctrl+q comes
        await wait_for(pilot, lambda: bool(app.chat.tools))
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    assert pairing_problems(agent.messages) == []
    assert agent.messages[-1]["content"][0]["content"] == INTERRUPTED
    assert agent.session is not None and agent.session._closed


async def test_palette_offers_only_what_makes_sense(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, model=OfflineModel(chunk_delay=0.05))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        idle = {name for name, _, _ in app.palette_commands()}
        assert {"Compact context now…", "New session", "Toggle inspector", "Archived files", "Quit"} <= idle
        await type_and_send(pilot, "help")
        await wait_for(pilot, lambda: app.busy)
        busy = {name for name, _, _ in app.palette_commands()}
        assert "Cancel the running turn" in busy and "New session" not in busy
        assert app.check_action("new_session", ()) is None  # shown, but disabled
        await pilot.press("escape")
        await settled(pilot, app, 1)
    await agent.aclose()


@pytest.mark.parametrize("text", ["[Earlier tool result saved at x]", "[bold]not markup[/bold]"])
async def test_text_is_never_parsed_as_markup(tmp_path: Path, text: str) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await type_and_send(pilot, text)
        await settled(pilot, app, 1)
        block = app.chat.transcript.query(UserBlock).first()
        assert str(block.render()) == text
    await agent.aclose()


async def test_prompt_newline_and_history_recall(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        prompt = app.chat.input
        await pilot.press("g", "l", "o", "b", "ctrl+j", "x")
        assert prompt.text == "glob\nx"
        prompt.clear()
        for number, text in enumerate(["help", "glob *.txt"], start=1):
            await type_and_send(pilot, text)
            await settled(pilot, app, number)
        await pilot.press("up")
        assert prompt.text == "glob *.txt"
        await pilot.press("up")
        assert prompt.text == "help"
        await pilot.press("down", "down")
        assert prompt.text == ""
    await agent.aclose()


async def test_tool_blocks_expand_by_key_and_old_blocks_are_pruned(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        app.chat.max_blocks = 6
        for number in range(1, 4):
            await type_and_send(pilot, "read a.txt")
            await settled(pilot, app, number)
        assert len(app.chat.transcript.children) <= 6 and app.chat.pruned > 0
        assert len(agent.messages) == 12  # the history is not pruned, only widgets
        block = app.chat.transcript.query(ToolBlock).last()
        block.focus()
        await pilot.press("enter")
        assert block.expanded and block.has_class("-expanded")
        await pilot.press("ctrl+g")  # collapse every tool block
        assert not block.expanded
        await pilot.press("ctrl+g")
        assert all(tool.expanded for tool in app.chat.transcript.query(ToolBlock))
    await agent.aclose()


async def test_palette_command_runs_the_action(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        assert app.query_one("#inspector").display
        await pilot.press("ctrl+p")
        await pilot.press(*"Toggle inspector")
        await palette_highlights(pilot, "Toggle inspector")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.query_one("#inspector").display)
        assert app.query_one("#mini-gauge").display
    await agent.aclose()
