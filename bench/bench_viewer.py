"""The archive viewer on a 50 MB result (issue 12), against a plain TextArea holding the same file, same run.

Rows:
  1. open: from pushing the screen to its first frame with the file's first lines (ours: the line
     index goes on in a worker; also printed: until the index is complete). Peer: a read-only
     TextArea given the file's text, to its first frame.
  2. page down: median of 10 PgDn presses, each to the next frame.
  3. jump to a match near the end: from Enter (the query typed) to the frame that shows the match
     highlighted (ours searches the whole file in a worker). Peer: the previous viewer's way (a regex over the whole text, then the
     TextArea's selection and scroll).

Run: python bench/bench_viewer.py [MB]      (default 50)
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import TextArea
from textual.widgets.text_area import Selection

from tui.screens.archive import ArchiveScreen

SIZE = (160, 48)
NEEDLE = "UNIQUE-NEEDLE-NEAR-THE-END"


def make_file(path: Path, megabytes: int) -> int:
    line = "{:08d} [build] compiling module {:04d} ... ok (0.{:03d} s)\n"
    target = megabytes * 1_000_000
    lines = target // len(line.format(0, 0, 0))
    with path.open("w", encoding="utf-8") as handle:
        for number in range(lines):
            handle.write(line.format(number, number % 9973, number % 997))
            if number == lines - 50:
                handle.write(f"error: {NEEDLE} in module 42\n")
    return lines


async def frame(pilot: Pilot[Any]) -> None:
    await pilot.pause()


async def until(condition: Callable[[], bool], within: float = 300) -> None:
    deadline = time.perf_counter() + within
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("not there in time")
        await asyncio.sleep(0.001)


async def ours(path: Path, size: int) -> dict[str, float]:
    app: App[None] = App()
    async with app.run_test(size=SIZE) as pilot:
        start = time.perf_counter()
        screen = await ArchiveScreen.for_file("build log", path, path="build.log", size=size)
        await app.push_screen(screen)
        view = screen.text_area
        painted: list[float] = []
        render = view.render_line

        def watched(y: int) -> Any:
            if not painted and view.source.line_count:
                painted.append(time.perf_counter())
            return render(y)

        view.render_line = watched  # type: ignore[method-assign]
        await until(lambda: bool(painted))
        opened = painted[0] - start
        await until(lambda: not screen.indexing)
        indexed = time.perf_counter() - start
        await frame(pilot)
        pages, idle = [], []
        for _ in range(10):
            begin = time.perf_counter()
            await pilot.press("pagedown")
            pages.append(time.perf_counter() - begin)
            begin = time.perf_counter()
            await pilot.press("f19")  # bound to nothing: what a key press costs the test driver alone
            idle.append(time.perf_counter() - begin)
        await pilot.press(*NEEDLE)
        begin = time.perf_counter()
        await pilot.press("enter")
        await until(lambda: not screen.searching and screen.current == 0)
        await frame(pilot)
        jump = time.perf_counter() - begin
        assert view.selected_text == NEEDLE
    return {"open": opened, "indexed": indexed, "page": statistics.median(pages), "jump": jump,
            "idle": statistics.median(idle)}


async def peer(path: Path) -> dict[str, float]:
    app: App[None] = App()
    async with app.run_test(size=SIZE) as pilot:
        start = time.perf_counter()
        text = path.read_text(encoding="utf-8")  # noqa: ASYNC240 - the whole file, as a TextArea needs it
        area = TextArea(text, read_only=True, soft_wrap=True, show_line_numbers=True)
        await app.mount(area)
        area.focus()
        await frame(pilot)
        opened = time.perf_counter() - start
        pages = []
        for _ in range(10):
            begin = time.perf_counter()
            await pilot.press("pagedown")
            pages.append(time.perf_counter() - begin)
        begin = time.perf_counter()
        match = next(re.compile(re.escape(NEEDLE), re.IGNORECASE).finditer(area.text))
        document = area.document
        area.selection = Selection(
            document.get_location_from_index(match.start()),  # type: ignore[attr-defined]
            document.get_location_from_index(match.end()),  # type: ignore[attr-defined]
        )
        area.scroll_cursor_visible(center=True)
        await frame(pilot)
        jump = time.perf_counter() - begin
    return {"open": opened, "page": statistics.median(pages), "jump": jump}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:10.1f} ms"


async def main(megabytes: int) -> None:
    with tempfile.TemporaryDirectory(prefix="ctxtui-bench-") as tmp:
        path = Path(tmp) / "build.log"
        lines = make_file(path, megabytes)
        size = path.stat().st_size
        mine = await ours(path, size)
        theirs = await peer(path)
    print(f"ctxtui archive viewer bench: {size:,} bytes, {lines:,} lines (headless {SIZE[0]}x{SIZE[1]})")
    rows = [
        ("open: first frame with the first lines", mine["open"], theirs["open"]),
        ("page down (median of 10)", mine["page"], theirs["page"]),
        ("jump to a match near the end (enter)", mine["jump"], theirs["jump"]),
    ]
    width = max(len(row[0]) for row in rows)
    print(f"{'':<{width}}  {'viewer':>13}  {'TextArea peer':>13}  ratio")
    for name, value, other in rows:
        print(f"{name:<{width}}  {ms(value)}  {ms(other)}  {value / other:6.3f}x")
    print(f"(viewer: line index complete after {ms(mine['indexed']).strip()}, in a worker; a key press bound"
          f" to nothing costs the headless driver {ms(mine['idle']).strip()}, so page down itself costs"
          f" {ms(max(0.0, mine['page'] - mine['idle'])).strip()})")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
