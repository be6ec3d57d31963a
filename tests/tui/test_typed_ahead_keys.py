"""Keys typed before the prompt can take them reach it, in order (issue 34). A person who starts typing
right after running `ctxtui` types while the app is still starting: the driver sends those keys to the
app before the main screen is composed, while it mounts, and once it has painted. The app holds them
until the prompt is focused and then hands them on in the order typed, through the same routing as
every later key. (tests/e2e/test_typeahead_in_tmux.py types them into a real terminal.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import events
from textual.screen import Screen

import tui.app
from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tests.tui.test_typing_reaches_the_prompt import SIZE, key_event, user_texts
from tui.app import CtxApp
from tui.screens.main import MainScreen

CSS = str(Path(tui.app.__file__).with_name(CtxApp.CSS_PATH))  # a subclass here reads it from tui/
TEXT = "typed ahead, while it mounts, and after the first frame"


class SlowMount(MainScreen):
    """The main screen, with its mount held up (a slow machine): keys keep coming meanwhile."""

    async def on_mount(self) -> None:  # Textual runs this one, then MainScreen's
        await asyncio.sleep(0.3)


class TypingAtOnce(CtxApp):
    """The app, with a person typing from before its first screen exists, one key every few ms."""

    CSS_PATH = CSS

    def get_default_screen(self) -> Screen[None]:
        self._main = SlowMount(self._given)
        for character in TEXT[:12]:  # in the queue before the screen is even composed
            self.post_message(key_event(character))
        self.set_interval(0.02, self._type_one)
        self._left = list(TEXT[12:])
        return self._main

    def _type_one(self) -> None:
        if self._left:
            self.post_message(key_event(self._left.pop(0)))


async def test_keys_typed_while_the_app_starts_reach_the_prompt_in_order(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = TypingAtOnce(agent)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: not app._left, limit=20)
        await wait_for(pilot, lambda: app.chat.input.text == TEXT, limit=10)
        assert app.focused is app.chat.input
        await pilot.press("enter")
        await wait_for(pilot, lambda: TEXT in user_texts(agent), limit=20)
        assert user_texts(agent) == [TEXT]
    await agent.aclose()


async def test_a_paste_and_keys_typed_ahead_keep_their_order(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))

    class PasteAhead(CtxApp):
        CSS_PATH = CSS

        def get_default_screen(self) -> Screen[None]:
            self._main = SlowMount(self._given)
            for part in ("one ", events.Paste("two\nthree"), " four"):
                if isinstance(part, events.Paste):
                    self.post_message(part)
                else:
                    for character in part:
                        self.post_message(key_event(character))
            return self._main

    app = PasteAhead(agent)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.chat.input.text.endswith("four"), limit=20)
        assert app.chat.input.text == "one two\nthree four"
    await agent.aclose()
