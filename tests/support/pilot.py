"""Helpers shared by the Pilot tests: wait for the real app to reach a state."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.pilot import Pilot

from tui.app import CtxApp
from tui.widgets.context_gauge import ContextGauge


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], limit: float = 10.0, step: float = 0.02) -> None:
    """Let the app run until `condition()` holds; fail after `limit` seconds.

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


async def settled(pilot: Pilot[Any], app: CtxApp, turns: int = 0) -> None:
    """Wait until `turns` turns have completed and the message tree caught up."""
    await wait_for(pilot, lambda: app.turns_completed >= turns and not app.message_tree.syncing)
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
