"""The archive viewer on a 50 MB file: the right lines on screen, matches found in a worker (one near the end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot

from tests.support.pilot import wait_for
from tui.line_source import FileLines, TextLines, search
from tui.screens.archive import ArchiveScreen
from tui.widgets.text_view import TextView

LINES = 680_000
SIZES: dict[Path, int] = {}


def line_text(number: int) -> str:
    return f"{number:07d} compile unit {number % 97:02d}: ok\tcolumns [not markup] \x1b[2J"


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~50 MB: numbered lines; 'NEEDLE' three times (line 10, the middle, 20 lines before the end)."""
    path = tmp_path_factory.mktemp("viewer") / "build.log"
    special = {10: "first", LINES // 2: "middle", LINES - 20: "last"}
    with path.open("w", encoding="utf-8") as handle:
        for number in range(LINES):
            text = line_text(number)
            if number in special:
                text += f" NEEDLE {special[number]} é"
            handle.write(text + " " * 20 + "\n")
    SIZES[path] = path.stat().st_size
    assert SIZES[path] > 50_000_000
    return path


def shown(view: TextView, rows: int) -> list[str]:
    return [view.render_line(y).text.rstrip() for y in range(rows)]


async def open_file(pilot: Pilot[Any], path: Path) -> ArchiveScreen:
    screen = await ArchiveScreen.for_file("⇲ build log", path, path="build.log", size=SIZES[path])
    await pilot.app.push_screen(screen)
    await wait_for(pilot, lambda: screen.is_mounted and not screen.indexing, limit=60)
    await pilot.pause()
    return screen


async def test_a_50_mb_file_shows_its_lines_and_finds_a_match_near_the_end(big_file: Path) -> None:
    app: App[None] = App()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_file(pilot, big_file)
        assert isinstance(screen.source, FileLines)  # read at the offsets of the visible lines only
        view = screen.text_area
        title = str(screen.query_one("#archive-title").render())
        assert "⇲ build log" in title and "build.log" in title and f"{LINES:,} lines" in title
        rows = shown(view, 3)
        assert rows[0].startswith("      1 │ 0000000 compile unit 00: ok columns [not markup] \\x1b[2J")
        assert rows[2].startswith("      3 │ 0000002 compile unit 02")

        await pilot.press("pagedown")
        await pilot.pause()
        top = int(view.scroll_y)
        assert top > 0 and shown(view, 1)[0].split("│")[1].strip().startswith(f"{top:07d} ")

        await pilot.press(*"needle", "enter")
        await wait_for(pilot, lambda: not screen.searching and screen.current == 0, limit=60)
        assert [found.line for found in screen.found] == [10, LINES // 2, LINES - 20]
        assert view.selected_text == "NEEDLE"
        assert "1/3 matches" in str(screen.query_one("#archive-count").render())
        await pilot.press("shift+f3")  # previous from the first: the last one, near the end
        await pilot.pause()
        assert screen.current == 2 and view.selected_text == "NEEDLE"
        row = next(text for text in shown(view, 30) if "NEEDLE" in text)
        assert row.split("│")[0].strip() == f"{LINES - 19:,}" and "NEEDLE last é" in row
        assert LINES - 20 - 30 < view.scroll_y <= LINES - 20
        start, end = screen.matches[2]
        assert screen.text[start:end] == "NEEDLE"
        await pilot.press("f3")
        await pilot.pause()
        assert screen.current == 0 and view.scroll_y < 30

        await pilot.press("ctrl+end")
        await pilot.pause()
        assert shown(view, view.size.height)[-1].split("│")[0].strip() == f"{LINES:,}"
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(app.screen_stack) == 1)


async def test_typing_a_new_query_replaces_the_running_search(big_file: Path) -> None:
    app: App[None] = App()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_file(pilot, big_file)
        await pilot.press(*"compile unit 4")
        await pilot.press("backspace", *"zzz-no-such-text", "enter")
        await wait_for(pilot, lambda: not screen.searching, limit=60)
        assert screen.matches == [] and "no matches" in str(screen.query_one("#archive-count").render())


async def test_a_large_text_in_memory_is_searched_in_a_worker() -> None:
    text = "".join(f"row {number}\n" for number in range(300_000)) + "the end marker\n"
    app: App[None] = App()
    async with app.run_test(size=(100, 24)) as pilot:
        screen = ArchiveScreen("transcript", text)
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.press(*"END MARKER", "enter")
        await wait_for(pilot, lambda: not screen.searching and screen.current == 0, limit=30)
        assert screen.matches == [(text.index("end marker"), text.index("end marker") + 10)]
        assert screen.text_area.selected_text == "end marker"
        assert "300,001 lines" in str(screen.query_one("#archive-title").render())


def test_search_offsets_match_the_text_whatever_the_chunks(tmp_path: Path) -> None:
    """Matches found chunk by chunk (lowercase find, or re where lowering changes lengths) sit at the
    right character offsets, lines and columns."""
    text = "".join(f"İx line {number} Needle here\nplain {number}\n" for number in range(20_000))
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    lines = text.split("\n")
    for source in (TextLines(text), FileLines(path)):
        if isinstance(source, FileLines):
            with path.open("rb") as handle:
                while not source.index_chunk(handle, chunk=65_536):
                    pass
        found = search(source, "needle", 100_000)
        assert found is not None and len(found) == 20_000
        for item in (found[0], found[7_777], found[-1]):
            assert text[item.start : item.end] == "Needle"
            assert lines[item.line][item.column : item.end_column] == "Needle"
            assert source.line(item.line) == lines[item.line]
        assert source.line_count == 40_000 and source.chars == len(text)
