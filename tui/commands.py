"""Command palette provider: the actions of `tui.actions`, offered only when they can run now."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui.actions import Action, palette_entries
from tui.screens.main import MainScreen


class CtxCommands(Provider):
    """Compact, inspector, archive, new session, quit… (run on the main screen the palette came from)."""

    def _entries(self) -> tuple[MainScreen | None, list[Action]]:
        screen = self.screen
        if not isinstance(screen, MainScreen):
            return None, []
        return screen, palette_entries(screen)

    def _run(self, screen: MainScreen, action: Action) -> Callable[[], Awaitable[object]]:
        target = self.app if action.app_wide else screen
        return partial(target.run_action, action.action)

    async def discover(self) -> Hits:
        screen, entries = self._entries()
        if screen is None:
            return
        for action in entries:
            assert action.palette is not None
            yield DiscoveryHit(action.palette, self._run(screen, action), help=action.help)

    async def search(self, query: str) -> Hits:
        screen, entries = self._entries()
        if screen is None:
            return
        matcher = self.matcher(query)
        for action in entries:
            assert action.palette is not None
            score = matcher.match(action.palette)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(action.palette), self._run(screen, action), help=action.help
                )
