"""Helpers shared by the Pilot tests: wait for the real app to reach a state, never for a fixed time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from textual.app import App, ComposeResult
from textual.command import CommandList, CommandPalette
from textual.css.query import NoMatches
from textual.message import Message
from textual.pilot import Pilot
from textual.screen import Screen

from tui.app import CtxApp
from tui.widgets.context_gauge import ContextGauge

M = TypeVar("M", bound=Message)
S = TypeVar("S", bound=Screen[Any])


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], limit: float = 30.0, step: float = 0.02) -> None:
    """Let the app run until `condition()` holds; fail after `limit` seconds.

    The limit only bounds a failure (a passing test goes on as soon as the condition holds): it is
    generous because on a loaded machine the app's first token count alone can take ten seconds.
    A condition that queries widgets not composed yet (the main screen composes after the app is
    ready) counts as not holding yet."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit

    def holds() -> bool:
        try:
            return condition()
        except NoMatches:
            return False

    while not holds():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(step)


def tree_shows_history(app: CtxApp) -> bool:
    """The message tree has caught up: no sync pending and one entry per message of the agent's history."""
    tree = app.message_tree
    return not tree.syncing and [message for message, _ in tree.entries] == list(app.agent.messages)


async def settled(pilot: Pilot[Any], app: CtxApp, turns: int = 0) -> None:
    """Wait until `turns` turns have completed and the message tree shows the agent's history.

    `turns` counts from the app's start: for a turn started now, use `ends_a_turn` (a count that has
    already been reached returns at once)."""
    await wait_for(pilot, lambda: app.turns_completed >= turns and tree_shows_history(app))
    await pilot.pause()


class GaugeApp(App[None]):
    """The context gauge alone, configured for a 50,000-char limit: what it shows is only what a test feeds it."""

    def __init__(self, *, offline: bool = True) -> None:
        super().__init__()
        self.offline = offline

    def compose(self) -> ComposeResult:
        yield ContextGauge(id="gauge")

    def on_mount(self) -> None:
        self.query_one(ContextGauge).configure(50_000, 0.8, offline=self.offline)


@asynccontextmanager
async def ends_a_turn(pilot: Pilot[Any], app: CtxApp) -> AsyncIterator[None]:
    """Around what starts a turn (a message sent, a compaction): on leaving the block, wait for one
    more turn than had completed on entering it, and for the tree to catch up."""
    before = app.turns_completed
    yield
    await settled(pilot, app, before + 1)


async def send(pilot: Pilot[Any], app: CtxApp, text: str) -> None:
    """Type `text` into the prompt, press Enter and wait for the turn it starts to end."""
    async with ends_a_turn(pilot, app):
        app.chat.input.focus()
        app.chat.input.insert(text)
        await pilot.press("enter")


def workers_idle(app: CtxApp, *groups: str) -> bool:
    """No worker of these groups is pending or running (on any screen of the app)."""
    return not any(worker.group in groups and not worker.is_finished for worker in app.workers)


async def screen_ready(pilot: Pilot[Any], kind: type[S], limit: float = 30.0) -> S:
    """Wait until the active screen is a `kind` that has focused one of its widgets (it is composed,
    mounted and takes keys); returns it."""
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, kind) and app.screen.focused is not None, limit)
    screen = app.screen
    assert isinstance(screen, kind)
    return screen


async def palette_highlights(pilot: Pilot[Any], text: str) -> None:
    """Wait until the command palette's highlighted entry starts with `text` (its search has caught up
    with what was typed), so that Enter runs that entry."""
    app = pilot.app

    def highlighted() -> bool:
        screen = app.screen
        if not isinstance(screen, CommandPalette):
            return False
        option = screen.query_one(CommandList).highlighted_option
        return option is not None and str(option.prompt).lower().startswith(text.lower())

    await wait_for(pilot, highlighted)


class Posted:
    """Every message the app's nodes received, in order: pass it as `run_test(message_hook=posted)`.

    Textual calls the hook as a node takes a message from its queue, before its handler runs."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def __call__(self, message: Message) -> None:
        self.messages.append(message)

    def of(self, kind: type[M]) -> list[M]:
        return [message for message in self.messages if isinstance(message, kind)]

    async def wait(self, pilot: Pilot[Any], kind: type[M], count: int = 1) -> list[M]:
        """Wait until `count` messages of `kind` have arrived and the app has handled them."""
        await wait_for(pilot, lambda: len(self.of(kind)) >= count)
        await pilot.pause()
        return self.of(kind)
