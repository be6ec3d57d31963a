"""Pilot tests of sessions in the TUI: a session resumed by id shows the chat it had when
it was closed, `ctxtui sessions` lists it, and the session picker resumes a chosen session in the
running app (chat, prompt history, inspector)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from textual.widgets import OptionList

from core.agent import Agent
from core.config import Settings
from core.sessions.listing import list_sessions
from core.sessions.log import SessionLog, session_id
from tests.support.cli import ctxtui
from tests.support.pilot import settled, wait_for
from tui.app import CtxApp
from tui.screens.sessions import SessionsScreen
from tui.widgets.chat_blocks import AssistantBlock, NoticeLine, UserBlock
from tui.widgets.tool_block import ToolBlock


def chat_shown(app: CtxApp) -> list[tuple[str, str]]:
    """The conversation the chat shows: user text, assistant replies, tool calls with their output."""
    shown: list[tuple[str, str]] = []
    for block in app.chat.transcript.children:
        if isinstance(block, UserBlock):
            shown.append(("user", block.text))
        elif isinstance(block, AssistantBlock) and not block.has_class("welcome") and not block.has_class("help"):
            shown.append(("assistant", block.source.strip()))
        elif isinstance(block, ToolBlock):
            shown.append((f"tool {block.tool_name}", block.output or ""))
    return shown


async def run_session(workdir: Path, requests: list[str]) -> tuple[list[tuple[str, str]], Path]:
    """Type `requests` into a fresh app, quit it; the chat it showed and its session file."""
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True), allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        for number, request in enumerate(requests, start=1):
            app.chat.input.insert(request)
            await pilot.press("enter")
            await settled(pilot, app, number)
        shown = chat_shown(app)
        assert agent.session is not None
        path = agent.session.path
        await app.action_quit()
    return shown, path


async def test_a_session_resumed_by_id_shows_the_same_chat_and_is_listed(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha line\n", encoding="utf-8")
    before, path = await run_session(tmp_path, ["read a.txt", "$ echo resumed-by-id"])
    assert [kind for kind, _ in before].count("user") == 2 and any(k == "tool bash" for k, _ in before)
    await run_session(tmp_path, ["glob *.txt"])  # a newer session: --resume ID must not take it

    listing = ctxtui("sessions", "--workdir", str(tmp_path))
    assert listing.returncode == 0, listing.stderr
    assert session_id(path) in listing.stdout and "read a.txt" in listing.stdout

    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, resume=True, resume_id=session_id(path)))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: any("resumed" in line.text for line in app.chat.transcript.query(NoticeLine)))
        # the notice is in the transcript as soon as the replay's blocks are; a Markdown block has its
        # text once mounted: wait for that (a chat that never matches fails the assert below, with its diff)
        with contextlib.suppress(AssertionError):
            await wait_for(pilot, lambda: chat_shown(app) == before, limit=10)
        assert chat_shown(app) == before
        await pilot.press("up")
        assert app.chat.input.text == "$ echo resumed-by-id"
    await agent.aclose()


async def test_the_picker_resumes_the_chosen_session(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha line\n", encoding="utf-8")
    before, path = await run_session(tmp_path, ["read a.txt", "$ echo picked \x1b]2;pwned\x07"])
    await run_session(tmp_path, ["glob *.txt \x1b]2;evil\u202e"])
    recorded = path.read_bytes()

    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True), allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        app.chat.input.insert("help")
        await pilot.press("enter")
        await settled(pilot, app, 1)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        picker: Any = app.screen
        ids = [info.id for info in picker.sessions]
        assert ids == [info.id for info in list_sessions(tmp_path / ".ctxtui")]  # newest first, as listed
        assert agent.session is not None and ids[0] == session_id(agent.session.path)
        options = picker.query_one(OptionList)
        assert options.get_option_at_index(0).disabled  # the running session cannot be chosen
        shown = "\n".join(str(options.get_option_at_index(i).prompt) for i in range(options.option_count))
        assert "glob *.txt \\x1b]2;evil\\u202e" in shown and "read a.txt" in shown
        assert "\x1b" not in shown and "\u202e" not in shown
        wanted = ids.index(session_id(path))
        options.focus()
        options.highlighted = wanted
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SessionsScreen))
        await wait_for(pilot, lambda: any("resumed" in line.text for line in app.chat.transcript.query(NoticeLine)))
        await settled(pilot, app)
        with contextlib.suppress(AssertionError):  # the replayed Markdown blocks have their text once mounted
            await wait_for(pilot, lambda: chat_shown(app) == before, limit=10)
        assert chat_shown(app) == before
        assert agent.resumed_from == str(path)
        resumed = len(agent.messages)
        assert agent.messages == SessionLog.load(path) and resumed == 8  # two turns of four messages
        assert [message["content"] for message in agent.messages if message["role"] == "user"
                and isinstance(message["content"], str)][:1] == ["read a.txt"]
        assert len(app.message_tree.root.children) == len(agent.messages)  # the inspector follows
        assert app.gauge is not None and not app.busy
        await pilot.press("up")
        assert app.chat.input.text == "$ echo picked \x1b]2;pwned\x07"
        # the next turn continues the chosen session, recorded in a new session file
        app.chat.input.clear()
        app.chat.input.insert("glob *.txt")
        await pilot.press("enter")
        await settled(pilot, app, 2)
    await agent.aclose()
    newest = list_sessions(tmp_path / ".ctxtui")[0]
    assert newest.first_request == "read a.txt" and newest.messages == resumed + 4
    assert newest.path != path and path.read_bytes() == recorded  # a new file records it; the old one is untouched


async def test_the_picker_shows_sessions_whose_created_stamp_is_not_a_time(tmp_path: Path) -> None:
    """NaN, infinity or 1e300 as `created` fall back to the file's time."""
    folder = tmp_path / ".ctxtui" / "sessions"
    folder.mkdir(parents=True)
    for number, created in enumerate(("NaN", "Infinity", "1e300")):
        lines = ['{"type": "meta", "created": ' + created + "}",
                 json.dumps({"type": "message", "message": {"role": "user", "content": f"stamped {number}"}})]
        (folder / f"session_2024010{number}-000000-1-00000{number}.jsonl").write_text("\n".join(lines) + "\n")
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen) and bool(app.screen.query(OptionList)))
        options = app.screen.query_one(OptionList)
        shown = "\n".join(str(options.get_option_at_index(i).prompt) for i in range(options.option_count))
        assert all(f"stamped {number}" in shown for number in range(3))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SessionsScreen))
    await agent.aclose()


async def test_a_start_without_a_request_leaves_no_empty_session(tmp_path: Path) -> None:
    """Opening the app and quitting (or ctrl+n before typing) must not add an "(empty)" row to `ctxtui sessions`."""
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True), allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(120, 40)) as pilot:
        await settled(pilot, app)
        await pilot.press("ctrl+n")
        app.chat.input.insert("help")
        await pilot.press("enter")
        await settled(pilot, app, 1)
        await pilot.press("ctrl+n")
        await settled(pilot, app, 1)
        await app.action_quit()
    infos = list_sessions(tmp_path / ".ctxtui")
    assert [(info.first_request, info.messages) for info in infos] == [("help", 2)]
    listing = ctxtui("sessions", "--workdir", str(tmp_path))
    assert listing.returncode == 0 and "(empty)" not in listing.stdout and "help" in listing.stdout
