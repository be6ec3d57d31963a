"""Command palette provider: the app's actions, offered only when they make sense now."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from tui.app import CtxApp


class CtxCommands(Provider):
    """Compact, inspector, archive, new session, quit…"""

    def _commands(self) -> list[tuple[str, str, str]]:
        app: CtxApp = self.app  # type: ignore[assignment]
        return [(name, help_text, action) for name, help_text, action in app.palette_commands()]

    async def discover(self) -> Hits:
        app = self.app
        for name, help_text, action in self._commands():
            yield DiscoveryHit(name, partial(app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        for name, help_text, action in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(app.run_action, action), help=help_text)
