"""The footer at 80 columns (issue 30, item 21): every key it shows is whole (no key cut off, no stray
character in its last cell), and the keys that give way are the least needed (they stay in the
palette and /help), never the view and inspector keys (f2, f8, f9)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets._footer import FooterKey

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui.app import CtxApp
from tui.widgets.keys_footer import KeysFooter

WIDTH, HEIGHT = 80, 24


def shown_keys(app: CtxApp) -> list[FooterKey]:
    return list(app.main.query_one(KeysFooter).query_children(FooterKey))


def assert_whole(app: CtxApp) -> None:
    """Each key in full, inside the footer, none under another; the last cell is the palette key's."""
    footer = app.main.query_one(KeysFooter)
    keys = shown_keys(app)
    palette = next(key for key in keys if key.has_class("-command-palette"))
    assert palette.region.right == WIDTH, palette.region
    assert app.screen.get_widget_at(WIDTH - 1, HEIGHT - 1)[0] is palette  # no stray character after it
    others = [key for key in keys if key is not palette]
    for key in others:
        region = key.region
        assert region.width == key.get_content_width(footer.size, footer.size), key.description
        assert region.right <= palette.region.x, f"{key.key} {key.description!r} runs under the palette key"
        assert app.screen.get_widget_at(region.x, region.y)[0] is key


@pytest.mark.parametrize(("state", "wanted"), [
    ("prompt", {"ctrl+q", "f2", "ctrl+t", "ctrl+b"}),
    ("inspector", {"ctrl+q", "f2", "f8", "f9", "ctrl+t", "ctrl+b"}),
    ("tree", {"ctrl+q", "f6", "f7", "f2", "ctrl+t", "ctrl+b"}),
])
async def test_every_key_the_footer_shows_at_80_columns_is_whole(tmp_path: Path, state: str, wanted: set[str]) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        await pilot.pause()
        if state == "inspector":
            await pilot.press("ctrl+b")
            await wait_for(pilot, lambda: app.main.inspector_visible)
        elif state == "tree":
            await pilot.press("ctrl+t")
            await wait_for(pilot, lambda: app.message_tree.has_focus)
        await wait_for(pilot, lambda: wanted <= {key.key for key in shown_keys(app)})
        await pilot.pause()
        assert_whole(app)
    await agent.aclose()
