"""The first frame: real and complete, painted before the heavy modules load, and a key
typed at once is never lost.

The module checks start `ctxtui` in a fresh interpreter (a subprocess: this test process has
imported everything already), headless, through the real command line (`tui.cli.main`). The app's
Ready event comes right after its first layout and paint; there the driver writes down
`sys.modules` and the screen as it stands (a screenshot of the real compositor), then waits for the
deferred work (the welcome, the tiktoken estimate) so that a module which never loads cannot pass
for one that loads late.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.agent.launch import Launch
from core.config import Settings
from core.sessions.log import SessionLog
from tests.support.pilot import settled, wait_for
from tests.support.tmux import TMUX, Tmux, wait_until
from tui.app import CtxApp
from tui.screens.front import front_of, welcome_text
from tui.screens.main import MainScreen
from tui.startup import YOUNG_THRESHOLD, collector_paused, pause_collector, resume_collector
from tui.widgets.chat_blocks import AssistantBlock, NoticeLine, UserBlock

ROOT = Path(__file__).resolve().parents[2]
REPLAY_NOTICE = "the chat shows the conversation"
HEAVY = ("anthropic", "tiktoken", "markdown_it", "pydantic", "textual.widgets._markdown", "tui.widgets.assistant_block",
         "core.agent.agent", "core.compaction.pipeline", "core.tools.toolbox", "core.archive", "hashlib",
         "tui.cli.proxy", "core.engines", "core.history.categories")
"""Not imported before the first frame: the SDK, the tokenizer, Markdown, the agent and its pipeline,
tools and archive (built after it), hashlib, the sub-commands' modules and the breakdown's counting."""

DRIVER = r"""
import asyncio, gc, html, json, re, sys, time
from pathlib import Path

import tui.cli
from tui.app import CtxApp

seen = {}
original_run, original_ready = CtxApp.run, CtxApp.on_ready

def run(self, *args, **kwargs):
    return original_run(self, headless=True, size=(160, 48))

def on_ready(self):
    seen["at_first_frame"] = sorted(sys.modules)
    seen["collector_at_first_frame"] = gc.isenabled()
    svg = self.export_screenshot()  # the compositor's frame as it stands; its text, unescaped
    seen["screen"] = html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
    original_ready(self)
    self.run_worker(later(self), exit_on_error=False)

async def later(app):
    # the deferred work must really happen: the welcome in the chat, the estimate counted
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        welcome = [block for block in app.chat.transcript.children if block.has_class("welcome")]
        agent = app.built_agent  # a fresh session's agent is built after the first frame
        if welcome and agent is not None and agent.tokens.loaded:
            break
        await asyncio.sleep(0.05)
    seen["later"] = sorted(sys.modules)
    seen["collector_later"] = gc.isenabled()
    seen["welcome"] = [getattr(block, "source", "") for block in app.chat.transcript.children if block.has_class("welcome")]
    await app.action_quit()

CtxApp.run, CtxApp.on_ready = run, on_ready
code = tui.cli.main(sys.argv[1:])
Path(sys.argv[-1]).with_name("seen.json").write_text(json.dumps(seen))
sys.exit(code)
"""


def start_headless(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ctxtui (headless) through the driver; what it saw at the first frame and after."""
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("ANTHROPIC_", "CTXTUI_"))}
    environ.update(XDG_CONFIG_HOME=str(tmp_path / "config"), **(env or {}))
    done = subprocess.run([sys.executable, "-c", DRIVER, *flags, "--workdir", str(workdir)],
                          cwd=ROOT, env=environ, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads((tmp_path / "seen.json").read_text(encoding="utf-8"))
    return seen


def loaded(modules: list[str], name: str) -> bool:
    return name in modules


def check_first_frame(seen: dict[str, Any], workdir: str) -> None:
    """Heavy modules absent at the first frame, present after; the frame shows the whole layout."""
    first, later = seen["at_first_frame"], seen["later"]
    assert [name for name in HEAVY if loaded(first, name)] == []
    assert loaded(later, "markdown_it") and loaded(later, "tiktoken")  # the deferred work did run
    assert loaded(later, "core.agent.agent")
    assert seen["welcome"] and "inspector" in seen["welcome"][0]
    # the cyclic collector waits for the first frame (tui/startup.py), then runs again
    assert seen["collector_at_first_frame"] is False and seen["collector_later"] is True
    screen = seen["screen"]
    for text in ("Message the agent", "Context", "50,000", "Messages", workdir, "Quit"):  # the footer too
        assert text in screen, text


def test_the_first_frame_comes_before_the_heavy_imports_offline(tmp_path: Path) -> None:
    seen = start_headless(tmp_path, "--offline")
    check_first_frame(seen, "work")
    assert not loaded(seen["later"], "anthropic")  # offline never needs the SDK


@pytest.mark.slow
def test_with_an_api_key_the_sdk_loads_after_the_first_frame(tmp_path: Path) -> None:
    # a closed loopback port: the count and the window lookup fail at once, nothing leaves the machine
    seen = start_headless(tmp_path, env={"ANTHROPIC_API_KEY": "sk-test-not-used", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    check_first_frame(seen, "work")
    assert "claude" in seen["screen"]  # the title bar names the real model


def test_a_config_file_is_read_without_pydantic_before_the_first_frame(tmp_path: Path) -> None:
    config = tmp_path / "config" / "ctxtui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('theme = "textual-dark"\n[compaction]\ncontext_char_limit = 60000\n', encoding="utf-8")
    seen = start_headless(tmp_path, "--offline")
    assert not loaded(seen["at_first_frame"], "pydantic")
    assert "60,000" in seen["screen"]  # the file took effect


def test_a_bad_setting_still_gets_its_one_line_error(tmp_path: Path) -> None:
    """The fast path never swallows an error: a value that needs converting goes through pydantic."""
    environ = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path), CTXTUI_CONTEXT_CHAR_LIMIT="lots")
    done = subprocess.run([sys.executable, "-m", "tui.cli", "config"], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "CTXTUI_CONTEXT_CHAR_LIMIT needs a whole number, got 'lots'" in done.stderr


def test_the_collector_pause_is_undone_once_and_only_if_it_paused() -> None:
    if not gc.isenabled():
        pytest.skip("the collector is off in this process")
    thresholds = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # Python's own
    pause_collector()
    try:
        assert not gc.isenabled() and collector_paused()
    finally:
        resume_collector()
    try:
        assert gc.isenabled() and not collector_paused()
        assert gc.get_freeze_count() > 0  # what the start allocated is left out of later passes
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)  # young objects get time to die first
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    gc.disable()  # switched off by someone else: resume leaves it so
    try:
        resume_collector()
        assert not gc.isenabled()
    finally:
        gc.enable()


# --- keys typed at once ------------------------------------------------------------------------------


async def test_keys_typed_at_once_reach_the_prompt(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True), allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press(*"hello there")  # before the welcome, the views, the count are in place
        await wait_for(pilot, lambda: bool(app.chat.transcript.query(".welcome")))
        assert app.chat.input.text == "hello there"
        await app.action_quit()


def hold_the_first_frame_work(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Make the work after the first frame wait for the returned event (a slow machine, stretched)."""
    gate = asyncio.Event()
    original = MainScreen.after_first_frame

    async def held(self: MainScreen) -> None:
        await gate.wait()
        await original(self)

    monkeypatch.setattr(MainScreen, "after_first_frame", held)
    return gate


async def test_a_message_sent_at_once_comes_after_the_welcome_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sent before the welcome is there: the turn runs at once, the welcome goes above it, nothing twice."""
    (tmp_path / "a.txt").write_text("alpha line\n", encoding="utf-8")
    gate = hold_the_first_frame_work(monkeypatch)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True), allow_all=True)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press(*"read a.txt", "enter")
        await settled(pilot, app, 1)
        assert not app.chat.transcript.query(".welcome")  # the turn did not wait for it
        gate.set()
        await wait_for(pilot, lambda: bool(app.chat.transcript.query(".welcome")))
        blocks = list(app.chat.transcript.children)
        assert blocks[0].has_class("welcome")
        assert [block.text for block in blocks if isinstance(block, UserBlock)] == ["read a.txt"]
        assert not any("resumed" in line.text for line in app.chat.transcript.query(NoticeLine))
        await app.action_quit()


async def test_a_message_sent_before_the_replay_comes_after_the_resumed_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("alpha line\n", encoding="utf-8")
    first = Agent.from_settings(Settings(workdir=tmp_path, offline=True), allow_all=True)
    async for _ in first.run_turn("read a.txt"):
        pass
    await first.aclose()
    assert first.session is not None
    recorded = SessionLog.load(first.session.path)

    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, resume=True), allow_all=True)
    assert agent.messages == recorded
    gate = hold_the_first_frame_work(monkeypatch)
    app = CtxApp(agent)

    def replayed() -> list[NoticeLine]:
        return [line for line in app.chat.transcript.query(NoticeLine) if REPLAY_NOTICE in line.text]

    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press(*"glob *.txt", "enter")
        await settled(pilot, app, 1)
        assert not replayed()  # the replay is still held
        gate.set()
        await wait_for(pilot, lambda: bool(replayed()))
        kinds = []
        for block in app.chat.transcript.children:
            if isinstance(block, UserBlock):
                kinds.append(f"user {block.text}")
            elif isinstance(block, NoticeLine) and REPLAY_NOTICE in block.text:
                kinds.append("replayed")
        assert kinds == ["user read a.txt", "replayed", "user glob *.txt"]
        assert f"resumed {len(recorded)} messages" in replayed()[0].text  # the history as it was at the start
        assert not app.chat.transcript.query(AssistantBlock).filter(".welcome")
        await app.action_quit()


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(60)
def test_in_a_real_terminal_keys_sent_with_the_first_frame_are_kept(tmp_path: Path) -> None:
    """tmux: the moment the first frame is on the pane, type a request and Enter; the request runs
    (its reply arrives), the welcome sits above it, and text typed next lands in the prompt."""
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"ctxtui-ff-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    root.mkdir(parents=True)
    workdir = root / "work"
    workdir.mkdir()
    (workdir / "a.txt").write_text("alpha line\n", encoding="utf-8")
    tmux = Tmux(root)
    try:
        tmux.start(f"{sys.executable} -m tui.cli --offline --workdir {workdir}")
        deadline = time.monotonic() + 20
        while not all(text in (screen := tmux.screen()) for text in ("Message the agent", "Messages")):
            assert time.monotonic() < deadline, f"no first frame; screen:\n{screen}"
            time.sleep(0.005)
        tmux.run("send-keys", "-t", tmux.session, "-l", "read a.txt", check=True)
        tmux.run("send-keys", "-t", tmux.session, "Enter", check=True)
        tmux.run("send-keys", "-t", tmux.session, "-l", "typed next", check=True)
        wait_until(lambda: "#4 assistant" in tmux.screen(), 15, "the reply in the tree", tmux)
        chat = "\n".join(line[:90] for line in tmux.screen().splitlines())  # the chat column
        assert "typed next" in chat and "Offline model" in chat
        assert chat.index("Offline model") < chat.index("read a.txt")  # the welcome first
        tmux.run("send-keys", "-t", tmux.session, "C-q", check=True)
        wait_until(lambda: not tmux.alive(), 8, "the app to exit after ctrl+q", tmux)
    finally:
        tmux.kill_server()
        subprocess.run(["rm", "-rf", str(root)], check=False)


# --- a fresh session's agent is built after the first frame (core/agent/launch.py) -----------------


def hold_the_build(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Make `Launch.build` wait for the returned event (a slow machine, stretched)."""
    gate = asyncio.Event()
    original = Launch.build

    async def held(self: Launch) -> Agent:
        await gate.wait()
        return await original(self)

    monkeypatch.setattr(Launch, "build", held)
    return gate


async def test_before_the_agent_is_built_the_screen_is_whole_and_a_message_waits_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("alpha line\n", encoding="utf-8")
    gate = hold_the_build(monkeypatch)
    app = CtxApp(Launch.of(Settings(workdir=tmp_path, offline=True, yes=True)))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: bool(app.chat.transcript.query(".welcome")))
        main = app.main
        assert main.starting and app.built_agent is None
        screen = html.unescape(re.sub(r"<[^>]+>", "", app.export_screenshot())).replace("\xa0", " ")
        for text in ("Message the agent", "Context", "50,000", "Messages", tmp_path.name, "offline model"):
            assert text in screen, text
        assert main.check_action("undo", ()) is None and main.check_action("toggle_inspector", ()) is True
        offered = {action for _, _, action in app.palette_commands()}
        assert "compact" not in offered and "sessions" not in offered and "toggle_inspector" in offered
        assert app.permission_mode == "preset"
        await pilot.press(*"read a.txt", "enter")
        await pilot.pause(0.2)
        assert app.turns_completed == 0 and not app.chat.transcript.query(UserBlock)  # it waits for the agent
        gate.set()
        await settled(pilot, app, 1)
        assert not main.starting and app.agent is app.built_agent
        assert main.check_action("undo", ()) is True
        assert "compact" in {action for _, _, action in app.palette_commands()}
        assert [block.text for block in app.chat.transcript.query(UserBlock)] == ["read a.txt"]
        assert [message["role"] for message in app.agent.messages][:1] == ["user"]
        assert main.front.inspector.archive is None  # the first frame had no archive (an empty history)
        # once built, the tree resolves through the agent's own archive and the opener opens from it
        assert app.message_tree.archive is app.agent.archive is main.inspector.opener.archive
        await app.action_quit()
    assert app.built_agent is not None and app.built_agent.session is not None
    assert app.built_agent.session.path.is_file()  # flushed when the app ended


async def test_an_agent_that_cannot_be_built_ends_the_app_with_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self: Launch) -> Agent:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Launch, "build", broken)
    app = CtxApp(Launch.of(Settings(workdir=tmp_path, offline=True)))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 1
    assert app.start_failure is not None and "No space left on device" in app.start_failure
    assert "\n" not in app.start_failure and app.built_agent is None


async def test_quitting_while_the_agent_is_built_closes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = hold_the_build(monkeypatch)
    closed: list[Agent] = []
    original_close = Agent.aclose

    async def recorded(self: Agent) -> None:
        closed.append(self)
        await original_close(self)

    monkeypatch.setattr(Agent, "aclose", recorded)
    app = CtxApp(Launch.of(Settings(workdir=tmp_path, offline=True)))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: bool(app.chat.transcript.query(".welcome")))
        quitting = asyncio.ensure_future(app.action_quit())
        await pilot.pause(0.1)
        gate.set()
        await quitting
    assert closed and closed[0] is app.built_agent


def test_the_welcome_shows_the_workdir_and_model_name_as_data(tmp_path: Path) -> None:
    """A directory or a model named with escape sequences cannot reach the terminal through the welcome."""
    front = front_of(Launch.of(Settings(workdir=tmp_path, offline=True)))
    hostile = dataclasses.replace(front, offline=False, workdir="/w/\x1b]2;pwned\x07", model_name="m\x1b[2J\u202e")
    text = welcome_text(hostile)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b]2;pwned\\x07" in text and "m\\x1b[2J\\u202e" in text
    offline = welcome_text(dataclasses.replace(front, label="offline model \x1b[31m"))
    assert "\x1b" not in offline and "\\x1b[31m" in offline
