"""Recall as the person sees it, in the real app: the inspector's Search view (type a query, see the
hits as plain text, enter opens the archived file at the hit's line), `/search QUERY`, the chat's
lines for the model's `search_context` and `note` calls (through the SDK against the loopback fake
API), the notes under the gauge and the notes message as its own node in the tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.style import Style

from core.agent import Agent
from core.config import Settings
from core.markers import notes_message
from tests.support.fakeapi import FakeAnthropicServer, settings_for, text_reply, tool_reply
from tests.support.pilot import send, wait_for
from tui.app import CtxApp
from tui.screens.archive import ArchiveScreen
from tui.widgets.node_labels import NodeLabels
from tui.widgets.search_view import SearchView
from tui.widgets.tool_block import ToolBlock

SIZE = (170, 50)
HOSTILE = "[bold]needle_zebra[/bold] \x1b[31mred\x1b[0m [link=http://x]click[/link]"


def _archive_file(tmp_path: Path) -> None:
    lines = [f"filler line {number}" for number in range(1, 120)]
    lines[76] = HOSTILE  # line 77 of the file
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _read_id(agent: Agent) -> str:
    return next(
        block["id"]
        for message in agent.messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "read_file"
    )


def _rows(view: SearchView) -> list[str]:
    hits = view.hit_list
    return [str(hits.get_option_at_index(index).prompt) for index in range(hits.option_count)]


async def test_the_search_view_finds_an_archived_result_shows_hostile_text_plain_and_opens_it_at_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _archive_file(tmp_path)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")
        await app.submit(f"/drop {_read_id(agent)}")
        await wait_for(pilot, lambda: len(agent.ledger) == 1)

        await app.submit("/search needle_zebra")  # the slash command shows the view with the query run
        view = app.main.inspector.search_view
        await wait_for(pilot, lambda: app.main.views.current == "search" and bool(view.hits))
        assert view.query_input.value == "needle_zebra"
        hit = view.hits[0]
        assert hit.path.startswith(".task_outputs/") and "needle_zebra" in hit.snippet
        row = _rows(view)[0]
        assert row.startswith(f"{hit.path}:{hit.line}")
        assert "[bold]needle_zebra[/bold]" in row and "\\x1b[31m" in row and "\x1b" not in row
        assert "[link=http://x]click[/link]" in row  # markup shown as the text it is, never obeyed

        view.query_input.value = ""  # typing in the view runs a query on enter
        view.query_input.focus()
        await pilot.press(*"filler", "enter")
        await wait_for(pilot, lambda: view.query_text == "filler" and bool(view.hits))
        await pilot.press(*"zzz_nothing", "enter")
        await wait_for(pilot, lambda: view.query_text == "fillerzzz_nothing" and not view.hits)
        assert "no match" in str(view.query_one("#search-status").render())

        view.run_query("needle_zebra")
        await wait_for(pilot, lambda: view.query_text == "needle_zebra" and bool(view.hits))
        view.query_input.focus()
        await pilot.press("down")  # from the box on to the hits
        await wait_for(pilot, lambda: app.focused is view.hit_list)
        await pilot.press("enter")  # the archived file at the hit's line, highlighted
        await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
        screen = app.screen
        assert isinstance(screen, ArchiveScreen)
        await wait_for(pilot, lambda: screen.text_area.highlight is not None)
        found = screen.text_area.highlight
        assert found is not None and found.line == hit.line - 1
        assert "needle_zebra" in screen.source.line(found.line)
        assert screen.text_area.scroll_y > 0  # line 77 is scrolled into view
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main)
    await agent.aclose()


async def test_the_palette_and_f2_reach_the_search_view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await app.main.action_show_view("facts")
        await app.main.action_next_view()
        await wait_for(pilot, lambda: app.main.views.current == "search")
        view = app.main.inspector.search_view
        await wait_for(pilot, lambda: app.focused is view.query_input)
        await app.submit("/tree")
        await wait_for(pilot, lambda: app.main.views.current == "tree")
        await app.main.run_action("search")  # what the palette entry runs
        await wait_for(pilot, lambda: app.main.views.current == "search")
        await pilot.press("enter")  # an empty query: said, nothing searched
        await wait_for(pilot, lambda: "type a query" in str(view.query_one("#search-status").render()))
    await agent.aclose()


async def test_the_chat_shows_each_search_context_and_note_call_and_the_inspector_the_notes(
    anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    _archive_file(tmp_path)
    anthropic_env.script(
        tool_reply([("toolu_r", "read_file", {"path": "a.txt"})]),
        text_reply("read it"),
        tool_reply([("toolu_s", "search_context", {"query": "needle_zebra"})]),
        text_reply("found it"),
        tool_reply([("toolu_n", "note", {"text": "the [bold]needle[/bold] is at line 77"})]),
        text_reply("noted"),
        tool_reply([("toolu_x", "search_context", {"query": "nothing_like_this_anywhere"})]),
        text_reply("none"),
        tool_reply([("toolu_m", "note", {"remove": 1})]),
        text_reply("forgotten"),
    )
    agent = Agent.from_settings(settings_for(tmp_path))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")
        await app.submit("/drop toolu_r")
        await wait_for(pilot, lambda: len(agent.ledger) == 1)
        await send(pilot, app, "where was the needle?")
        block = app.chat.tools["toolu_s"]
        await wait_for(pilot, lambda: block.finished)
        summary = str(block.query_one(".tool--summary").render())
        path = agent.ledger[0].path
        assert summary == f'└ "needle_zebra" → 1 hit: {path}:77', summary

        await send(pilot, app, "remember it")
        note = app.chat.tools["toolu_n"]
        line = app.main.inspector.notes_line
        await wait_for(pilot, lambda: line.display)
        text = "the [bold]needle[/bold] is at line 77"
        assert str(note.query_one(".tool--summary").render()) == (
            f'└ ✎ added note 1: "{text}" · 1 note, {len(text)} / 4,000 chars'
        )
        assert line.text == f"✎ notes: 1 ({len(text)} chars / 4,000) · newest: {text}"
        assert agent.view.notes == (text,)

        await send(pilot, app, "and this?")
        empty = app.chat.tools["toolu_x"]
        await wait_for(pilot, lambda: empty.finished)
        assert str(empty.query_one(".tool--summary").render()) == '└ "nothing_like_this_anywhere" → no hits'
        assert all(isinstance(block, ToolBlock) for block in app.chat.tools.values())

        await send(pilot, app, "forget it")
        removed = app.chat.tools["toolu_m"]
        await wait_for(pilot, lambda: not line.display)  # no notes: the line is hidden
        assert str(removed.query_one(".tool--summary").render()) == (
            f'└ ✎ removed note 1: "{text}" · 0 notes, 0 / 4,000 chars'
        )
    await agent.aclose()


def test_the_notes_message_is_its_own_node_in_the_tree() -> None:
    labels = NodeLabels(lambda name: Style(), lambda path: None)
    text = notes_message(["keep the [red]API[/red] stable", "port is 8080"])
    info = labels.message(3, {"role": "user", "content": text})
    assert info.kind == "notes" and info.leaf
    assert info.body is not None
    plain = info.body.plain
    assert plain.startswith("✎ notes · 2 notes, kept through every compaction")
    assert '"port is 8080"' in plain
    other = labels.message(4, {"role": "user", "content": json.dumps({"x": 1})})
    assert other.kind == "message"
