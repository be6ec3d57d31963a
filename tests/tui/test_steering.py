"""Steering in the real app (Pilot): every action from the tree's keys, the palette and slash commands,
the live preview of the next call, and the summary reviewed before a compact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets.tree import TreeNode

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.markers import parse_marker
from tests.support.pilot import ends_a_turn, palette_highlights, screen_ready, send, settled, wait_for
from tui.app import CtxApp
from tui.screens.archive import ArchiveScreen
from tui.screens.archive_list import ArchiveListScreen
from tui.screens.preview import PreviewScreen
from tui.screens.summary_review import SummaryReviewScreen
from tui.widgets.chat_blocks import NoticeLine
from tui.widgets.message_tree import NodeInfo

TEXT = "line of the big file\n" * 200


def make_agent(workdir: Path, **compaction: Any) -> Agent:
    for number in range(1, 5):
        (workdir / f"f{number}.txt").write_text(f"{number} {TEXT}", encoding="utf-8")
    return Agent.from_settings(Settings(workdir=workdir, offline=True, compaction=CompactionSettings(**compaction)))


def results(agent: Agent) -> dict[str, Any]:
    return {block["tool_use_id"]: block["content"] for message in agent.messages
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"] if block.get("type") == "tool_result"}


def result_node(app: CtxApp, tool_use_id: str) -> TreeNode[NodeInfo]:
    for message, node in app.message_tree.entries:
        content = message.get("content")
        if isinstance(content, list) and any(block.get("tool_use_id") == tool_use_id for block in content):
            return node
    raise AssertionError(f"no node for {tool_use_id}")


def label(app: CtxApp, tool_use_id: str) -> str:
    return str(result_node(app, tool_use_id).label)


async def select(pilot: Pilot[Any], app: CtxApp, tool_use_id: str) -> None:
    if not app.message_tree.has_focus:
        await pilot.press("ctrl+t")
    app.message_tree.move_cursor(result_node(app, tool_use_id))
    await pilot.pause()


async def test_tree_keys_pin_drop_restore_and_undo(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read f1.txt")
        (tool_use_id, text), = results(agent).items()
        await select(pilot, app, tool_use_id)
        await pilot.press("f6")
        await wait_for(pilot, lambda: agent.pinned == {tool_use_id} and "📌" in label(app, tool_use_id))
        await pilot.press("f6")
        await wait_for(pilot, lambda: not agent.pinned and "📌" not in label(app, tool_use_id))
        await pilot.press("f7")
        await wait_for(pilot, lambda: (parse_marker(results(agent)[tool_use_id]) or parse_marker("")) is not None)
        await settled(pilot, app)
        assert "↩" in label(app, tool_use_id)
        assert app.gauge.chars == agent.chars
        await select(pilot, app, tool_use_id)
        await pilot.press("f7")
        await wait_for(pilot, lambda: results(agent)[tool_use_id] == text)
        await settled(pilot, app)
        assert "↩" not in label(app, tool_use_id)
        before = list(agent.messages)
        async with ends_a_turn(pilot, app):  # the compaction runs as a turn
            await app.main.run_action("compact_now")
        assert len(agent.messages) == 1
        app.message_tree.focus()
        await pilot.press("f3")
        await wait_for(pilot, lambda: agent.messages == before)
        await settled(pilot, app)
        assert len(app.message_tree.entries) == len(before)
    await agent.aclose()


async def test_typing_while_the_tree_has_focus_never_steers(tmp_path: Path) -> None:
    """As the new user did: the tree had focus and they typed. Every letter goes to the prompt."""
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read f1.txt")
        await app.main.run_action("compact_now")
        await settled(pilot, app, 2)
        await send(pilot, app, "read f2.txt")
        (tool_use_id, _), = results(agent).items()
        await select(pilot, app, tool_use_id)
        assert app.message_tree.has_focus
        before, compactions = list(agent.messages), len(agent.compactions)
        typed = "drop it, undo, pin, restore: pdru PDRU"
        await pilot.press(*typed)
        await pilot.pause(0.3)
        await settled(pilot, app)
        assert agent.messages == before and not agent.pinned and len(agent.compactions) == compactions
        assert app.chat.input.text == typed and app.chat.input.has_focus
    await agent.aclose()


async def test_palette_and_slash_commands_steer_the_context(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read f1.txt")
        (tool_use_id, text), = results(agent).items()
        await select(pilot, app, tool_use_id)
        await pilot.press("ctrl+p")
        await pilot.press(*"Pin/unpin the selected")
        await palette_highlights(pilot, "Pin/unpin the selected")
        await pilot.press("enter")
        await wait_for(pilot, lambda: agent.pinned == {tool_use_id})
        assert await app.submit(f"/unpin {tool_use_id}")
        await wait_for(pilot, lambda: not agent.pinned)
        assert await app.submit(f"/drop {tool_use_id}")
        await wait_for(pilot, lambda: parse_marker(results(agent)[tool_use_id]) is not None)
        marker = parse_marker(results(agent)[tool_use_id])
        assert marker is not None
        assert await app.submit(f"/restore {marker.path}")
        await wait_for(pilot, lambda: results(agent)[tool_use_id] == text)
        assert await app.submit("/pause")
        await wait_for(pilot, lambda: not agent.auto_compact and "paused" in app.gauge.render().plain)
        assert await app.submit("/pause")
        await wait_for(pilot, lambda: agent.auto_compact and "paused" not in app.gauge.render().plain)
        app.chat.input.focus()
        await pilot.press("f5")  # the key, from the prompt
        await wait_for(pilot, lambda: not agent.auto_compact and "paused" in app.gauge.render().plain)
        await pilot.press("f5")
        await wait_for(pilot, lambda: agent.auto_compact)
        assert await app.submit("/preview")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PreviewScreen))
        assert await app.submit("/pin toolu_nope")
        await wait_for(pilot, lambda: any("no tool result" in n.message for n in app._notifications))
        assert await app.submit("/undo")
        await wait_for(pilot, lambda: any("no compaction to undo" in n.message for n in app._notifications))
    await agent.aclose()


async def test_restore_from_the_archive_viewer(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read f1.txt")
        (tool_use_id, text), = results(agent).items()
        await app.main.action_drop(tool_use_id)  # the screen routes its HistoryChanged to the tree
        await wait_for(pilot, lambda: "↩" in label(app, tool_use_id))
        await select(pilot, app, tool_use_id)
        node = result_node(app, tool_use_id)
        node.expand()
        await pilot.pause()
        app.message_tree.move_cursor(node.children[0])
        await pilot.press("enter")
        await screen_ready(pilot, ArchiveScreen)
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: results(agent)[tool_use_id] == text)
    await agent.aclose()


async def test_the_preview_warns_before_a_summary_and_marks_what_it_shortens(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, context_char_limit=9_000)
    agent.auto_compact = False
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        for number in (1, 2, 3):
            await send(pilot, app, f"read f{number}.txt")
        ids = list(results(agent))
        assert await app.submit("/pause")  # resume: the preview now says what the next call does
        await wait_for(pilot, lambda: "next call:" in app.gauge.render().plain)
        assert "fit tool results" in app.gauge.preview_line and not app.gauge.preview_warning
        await wait_for(pilot, lambda: "✂ next call shortens" in label(app, ids[0]))
        assert await app.submit(f"/pin {ids[0]}")
        await wait_for(pilot, lambda: "📌" in label(app, ids[0]) and "✂" not in label(app, ids[0]))
        agent.compactor.settings.context_char_limit = 2_000  # now only a summary could fit it
        app.main.inspector.refresh_forecast(debounce=0.0)
        await wait_for(pilot, lambda: app.gauge.preview_warning and "SUMMARISE" in app.gauge.preview_line)
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        screen = app.screen
        assert isinstance(screen, PreviewScreen)
        assert any(step.step == "compact_history" for step in screen.steps)
    await agent.aclose()


async def test_compact_shows_the_summary_first_and_uses_the_edited_text(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read f1.txt")
        before = list(agent.messages)
        await pilot.press("ctrl+o", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryReviewScreen))
        await pilot.press("escape")  # cancel: nothing changes
        await wait_for(pilot, lambda: any("compact cancelled" in line.text for line in app.chat.transcript.query(NoticeLine)))
        assert not isinstance(app.screen, SummaryReviewScreen)
        assert agent.messages == before and not app.busy and app.turns_completed == 1  # no compaction started
        assert await app.submit("/compact the big file")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryReviewScreen))
        screen = app.screen
        assert isinstance(screen, SummaryReviewScreen)
        area = screen.query_one("#summary-text")
        area.text = "My own summary: f1.txt was read."  # type: ignore[attr-defined]
        async with ends_a_turn(pilot, app):
            await pilot.press("ctrl+s")
        marker = parse_marker(agent.messages[0]["content"])
        assert len(agent.messages) == 1 and marker is not None
        assert marker.summary == "My own summary: f1.txt was read."
        app.chat.input.focus()
        await pilot.press("f3")  # undo, from the prompt: right after a compact, the list before it
        await wait_for(pilot, lambda: agent.messages == before)
    await agent.aclose()


async def test_restore_from_the_archive_list(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read f1.txt")
        (tool_use_id, text), = results(agent).items()
        assert await app.submit(f"/drop {tool_use_id}")
        await wait_for(pilot, lambda: parse_marker(results(agent)[tool_use_id]) is not None)
        await pilot.press("ctrl+r")
        await screen_ready(pilot, ArchiveListScreen)
        await pilot.press("down", "ctrl+e")  # highlight the one file, restore it
        await wait_for(pilot, lambda: results(agent)[tool_use_id] == text)
        assert not isinstance(app.screen, ArchiveListScreen)
    await agent.aclose()


async def test_a_user_message_is_pinned_from_the_tree_and_stays_after_a_compact(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    rule = "Keep the public names exactly as they are."
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, rule)
        await send(pilot, app, "read f1.txt")

        def rule_node() -> TreeNode[NodeInfo]:
            return next(node for message, node in app.message_tree.entries if message.get("content") == rule)

        await pilot.press("ctrl+t")
        app.message_tree.move_cursor(rule_node())
        await pilot.pause()
        await pilot.press("f6")
        await wait_for(pilot, lambda: len(agent.pinned) == 1 and "📌" in str(rule_node().label))
        (key,) = agent.pinned
        assert key.startswith("user:")
        async with ends_a_turn(pilot, app):  # the compaction runs as a turn: wait for it, not for the two before
            await app.main.run_action("compact_now")
        # carried after the summary, byte-exact, and the current request after it, read last
        assert [m["content"] for m in agent.messages[1:]] == [rule, "read f1.txt"]
        assert "📌" in str(rule_node().label)
        app.message_tree.focus()
        app.message_tree.move_cursor(rule_node())
        await pilot.pause()
        await pilot.press("f6")
        await wait_for(pilot, lambda: not agent.pinned and "📌" not in str(rule_node().label))
    await agent.aclose()
