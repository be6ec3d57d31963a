"""The footer at 80 columns (issue 30, item 21): every key it shows is whole (no key cut off, no stray
character in its last cell), and the keys that give way are the least needed (they stay in the
palette and /help), never the view and inspector keys (f2, f8, f9)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui.app import CtxApp
from tui.widgets.keys_footer import RULE, FooterEntry, KeysFooter

WIDTH, HEIGHT = 80, 24


def shown_keys(app: CtxApp) -> tuple[FooterEntry, ...]:
    return app.main.query_one(KeysFooter).keys


def assert_whole(app: CtxApp) -> None:
    """Each key in full, inside the footer, none under another; the last cell is the palette key's."""
    footer = app.main.query_one(KeysFooter)
    line = footer.render_line(0).text  # what the footer draws: the screen's last row
    assert footer.region == Region(0, HEIGHT - 1, WIDTH, 1) and len(line) == WIDTH, (footer.region, line)
    keys = shown_keys(app)
    palettes = [key for key in keys if key.palette]
    assert len(palettes) == 1 and keys[-1] is palettes[0], keys
    palette = palettes[0]
    palette_region = footer.region_of(palette)
    assert palette_region.right == WIDTH, palette_region  # no stray character after it
    assert line[palette_region.x - 1] == RULE, line
    regions = [footer.region_of(key) for key in keys]
    for key, region in zip(keys, regions, strict=True):
        assert region.area and region.height == 1 and region.y == HEIGHT - 1, (key, region)
        start = region.x - footer.region.x
        assert line[start:start + region.width] == f"{key.display} {key.description}", (key, line)
        for x in (region.x, region.right - 1):
            assert app.screen.get_widget_at(x, region.y)[0] is footer
            assert footer.entry_at(x - footer.region.x) == key
        if key is not palette:
            assert region.right < palette_region.x, f"{key.key} {key.description!r} runs under the palette key"
            assert line[region.right - footer.region.x] == " ", (key, line)  # nothing after its last cell
    for index, region in enumerate(regions):
        assert not any(region.overlaps(other) for other in regions[index + 1:]), regions


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
        assert wanted <= {key.key for key in shown_keys(app)}
        assert_whole(app)
    await agent.aclose()
