"""Every key and paste meant for the prompt reaches it, intact and in order, whichever widget has focus
(issue 30, item 16). A terminal delivers fast typing and a paste as a burst: the app has every event
of it in its queue before the first is handled. These tests post such a burst at once, as the driver
does, while the message tree has focus."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

from textual import events
from textual.pilot import Pilot

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import settled, wait_for
from tui.app import CtxApp

SIZE = (160, 48)


def key_event(character: str) -> events.Key:
    """The Key event a terminal's byte makes (the key names Textual gives them)."""
    if character == "\r":
        return events.Key("enter", "\r")
    if character.isalnum():
        return events.Key(character, character)
    name = unicodedata.name(character).lower().replace("-", "_").replace(" ", "_")
    return events.Key(name, character)


def burst(app: CtxApp, *parts: str | events.Paste) -> None:
    """Post every key of `parts` (and each paste) to the app in one go, as a terminal's burst arrives."""
    for part in parts:
        if isinstance(part, events.Paste):
            app.post_message(part)
        else:
            for character in part:
                app.post_message(key_event(character))


def user_texts(agent: Agent) -> list[str]:
    return [message["content"] for message in agent.messages
            if message["role"] == "user" and isinstance(message["content"], str)]


async def tree_focused(pilot: Pilot[Any], app: CtxApp) -> None:
    await pilot.press("ctrl+t")
    await wait_for(pilot, lambda: app.message_tree.has_focus)


async def test_fast_typing_with_the_tree_focused_sends_each_message_as_typed(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.chat.input.insert("hello")
        await pilot.press("enter")
        await settled(pilot, app, 1)
        await tree_focused(pilot, app)
        burst(app, "Never deploy on Fridays. Only use staging.\r", "ok next\r")
        await settled(pilot, app, 2)
        # sent while the first turn still ran, it is refused and given back to the prompt whole (not lost)
        await wait_for(pilot, lambda: "ok next" in user_texts(agent) or app.chat.input.text == "ok next")
        if app.chat.input.text == "ok next":
            await pilot.press("enter")
        await settled(pilot, app, 3)
        assert user_texts(agent)[1:] == ["Never deploy on Fridays. Only use staging.", "ok next"]
        assert app.chat.input.text == ""
    await agent.aclose()


async def test_a_paste_with_the_tree_focused_goes_to_the_prompt_in_order(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await tree_focused(pilot, app)
        burst(app, events.Paste("Never deploy on Fridays.\nOnly use staging."))
        await wait_for(pilot, lambda: app.chat.input.has_focus)
        assert app.chat.input.text == "Never deploy on Fridays.\nOnly use staging."
        await tree_focused(pilot, app)
        burst(app, "then: ", events.Paste("pasted"), " and typed")
        await wait_for(pilot, lambda: app.chat.input.text.endswith("typed"))
        assert app.chat.input.text == "Never deploy on Fridays.\nOnly use staging.then: pasted and typed"
    await agent.aclose()


async def test_the_trees_own_keys_still_work_when_nothing_is_being_typed(tmp_path: Path) -> None:
    """space expands the selected message, enter opens a block: only keys that follow typed text go to the prompt."""
    (tmp_path / "one.txt").write_text("just one line\n", encoding="utf-8")
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.chat.input.insert("read one.txt")
        await pilot.press("enter")
        await settled(pilot, app, 1)
        await tree_focused(pilot, app)
        tree = app.message_tree
        node = tree.entries[1][1]  # the assistant's message: text and a tool call
        tree.move_cursor(node)
        await pilot.pause()
        assert not node.is_expanded
        await pilot.press("space")
        await wait_for(pilot, lambda: node.is_expanded)
        assert tree.has_focus and app.chat.input.text == ""
    await agent.aclose()


async def test_a_paste_into_the_prompt_is_inserted_once(tmp_path: Path) -> None:
    """The prompt takes its own paste; the screen, which takes the pastes no widget took, adds nothing."""
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.chat.input.has_focus)
        burst(app, "a ", events.Paste("pasted"), " b")
        await wait_for(pilot, lambda: app.chat.input.text.endswith("b"))
        await pilot.pause()
        assert app.chat.input.text == "a pasted b"
    await agent.aclose()
