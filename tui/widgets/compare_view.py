"""CompareView: `ctxtui inspect FILE --compare` in the terminal: the table, then one timeline per engine.

Everything shown is the compare result's (core/engines/compare.py's JSON): the table is built from the
same padded cells as the text table (`header_cells`, `row_cells`), so it fits 80 columns; the cheapest
cost is highlighted. Under it each engine's `EngineTimeline`: a bar per call of the tokens the model
read (`sizes`), all engines on one scale so their heights compare, and a ▲ under each call before which
the engine cut (`cuts`). The session's bytes (file name, model) go through `visible` and enter as
Content, never markup.

The timelines are drawn here rather than with TimelineView: that one is a full-height chart of one
conversation (14 rows, details, selection); four of them would not fit beside the table.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual import on, work
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from core.config import Settings
from core.engines.compare import (
    COST,
    COST_WIDTH,
    NOTES,
    compare_file,
    cost_texts,
    header_cells,
    heading_lines,
    row_cells,
)
from core.text import visible
from tui.format import one_line, plural, short_count

ROWS = 3  # chart rows per engine
LEVELS = " ▁▂▃▄▅▆▇█"
CUT = "▲"
CHEAPEST = "bold $text-success on $success-muted"
_BAR = "$primary"
_BAR_CUT = "bold $success"
_DIM = "dim"


def cheapest(engines: Sequence[dict[str, Any]]) -> list[str]:
    """The engines whose cost is the lowest (all of them on a tie; none when no cost is known)."""
    costs = [row["cost"] for row in engines if row.get("cost") is not None]
    return [row["engine"] for row in engines if costs and row.get("cost") == min(costs)]


def table_content(data: dict[str, Any]) -> Content:
    """The table of `compare_text`, as Content: the same cells, the cheapest cost highlighted."""
    costs = dict(
        zip(
            [row["engine"] for row in data["engines"]],
            cost_texts([row["cost"] for row in data["engines"]]),
            strict=True,
        )
    )
    width = max([COST_WIDTH, *(len(text) for text in costs.values())])  # wider when more decimals need it
    names = header_cells()
    names[COST] = f"{'cost':>{width}}"
    header = " ".join(names)
    parts: list[str | Content | tuple[str, str]] = []
    for line in heading_lines(data):  # already made visible (and cut to 80 columns after that)
        parts += [(line, _DIM), "\n"]
    parts += [(header, "bold"), "\n", ("-" * len(header), _DIM), "\n"]
    best = cheapest(data["engines"])
    for row in data["engines"]:
        cells = row_cells(row)
        cells[COST] = f"{costs[row['engine']]:>{width}}"  # as many decimals as tell the engines apart
        for index, cell in enumerate(cells):
            if index:
                parts.append(" ")
            if index == COST and row["engine"] in best:
                parts.append((cell, CHEAPEST))
            elif index == 0:
                parts.append((visible(cell), "bold"))
            else:
                parts.append(cell)
        parts.append("\n")
    if best:
        parts += [
            ("cheapest: ", _DIM),
            (visible(", ".join(best)), "bold"),
            (f" (${costs[best[0]]})", _DIM),
            "\n",
        ]
    else:
        parts += [(f"no price known for {visible(str(data.get('priced_as')))}: no cost", _DIM), "\n"]
    parts += [(visible("\n".join(NOTES)), _DIM)]
    return Content.assemble(*parts)


class EngineTimeline(Widget):
    """One engine's calls: a bar per call (tokens read, on the shared scale `top`) and ▲ where it cut."""

    DEFAULT_CSS = """
    EngineTimeline { height: auto; padding: 0 1; }
    """

    def __init__(self, record: dict[str, Any], top: int) -> None:
        super().__init__(classes="engine-timeline")
        self.record = record
        self.top = max(top, 1)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return ROWS + 2

    def shown(self, width: int) -> tuple[range, int]:
        """The calls that fit (the newest, when not all do) and the cells per call."""
        calls = len(self.record["sizes"])
        cells = 2 if calls * 2 <= width else 1
        fit = max(width // cells, 1)
        return range(max(calls - fit, 0), calls), cells

    def render(self) -> Content:
        width = max(self.content_region.width or self.size.width, 2)
        record = self.record
        sizes: list[int] = record["sizes"]
        cuts = set(record["cuts"])
        shown, cells = self.shown(width)
        label = Content.assemble(
            (visible(record["engine"]), "bold"),
            (
                f" · {plural(record['calls'], 'call')} · peak {short_count(record['peak_tokens'])}"
                f" · mean {short_count(record['mean_tokens'])} · ",
                _DIM,
            ),
            self._cut_text(record["cuts"]),
        )
        if shown.start:
            label = label.append(Content.styled(f" · calls {shown.start + 1}-{len(sizes)} shown", _DIM))
        lines = [label.truncate(width, ellipsis=True)]
        per_row = self.top / ROWS
        for row in range(ROWS):
            floor = (ROWS - 1 - row) * per_row
            parts: list[str | tuple[str, str]] = []
            for index in shown:
                amount = (sizes[index] - floor) / per_row
                cell = LEVELS[max(min(int(amount * 8), 8), 1)] if amount > 0 else " "
                parts.append((cell, _BAR_CUT if index + 1 in cuts else _BAR))
                if cells == 2:
                    parts.append(" ")
            if row == 0:
                parts.append((f" {short_count(self.top)}", _DIM))
            lines.append(Content.assemble(*parts).truncate(width))
        marks: list[str | tuple[str, str]] = []
        for index in shown:
            marks.append((CUT, _BAR_CUT) if index + 1 in cuts else " ")
            if cells == 2:
                marks.append(" ")
        lines.append(Content.assemble(*marks).truncate(width))
        return Content("\n").join(lines)

    @staticmethod
    def _cut_text(cuts: Sequence[int]) -> Content:
        if not cuts:
            return Content.styled("no cut", _DIM)
        listed = ", ".join(str(call) for call in cuts)
        return Content.assemble(
            (f"{CUT} ", _BAR_CUT), (f"cut before call{'s' if len(cuts) > 1 else ''} {listed}", _DIM)
        )


class CompareView(Vertical):
    """The comparison of every engine: "comparing…" until `show` gives it the compare result."""

    DEFAULT_CSS = """
    CompareView { height: 1fr; }
    CompareView #compare-table { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    CompareView #compare-timelines { height: 1fr; margin-top: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data: dict[str, Any] | None = None

    def compose(self) -> Any:
        yield Static(
            Content.styled("comparing… (replaying the session under every engine)", _DIM), id="compare-table"
        )
        yield VerticalScroll(id="compare-timelines")

    async def show(self, data: dict[str, Any]) -> None:
        """The compare result: the table, then one timeline per engine on the tallest call's scale."""
        self.data = data
        self.query_one("#compare-table", Static).update(table_content(data))
        top = max([size for row in data["engines"] for size in row["sizes"]] or [1])
        timelines = self.query_one("#compare-timelines", VerticalScroll)
        await timelines.remove_children()
        await timelines.mount_all(EngineTimeline(row, top) for row in data["engines"])

    @work(thread=True, exclusive=True, group="compare", description="compare engines", exit_on_error=False)
    def compare(self, path: Path, settings: Settings, conversation: str | None = None) -> None:
        """Replay `path` under every engine (a second or more of CPU: in a thread), then `show` it;
        `conversation`: which one of a proxy recording folder."""
        data = asyncio.run(compare_file(path, settings, None, conversation))
        self.app.call_from_thread(self.call_later, self.show, data)

    @on(Worker.StateChanged)
    def _compare_failed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "compare" and event.state == WorkerState.ERROR:
            error = event.worker.error
            self.failed(str(error) if error is not None else "unknown error")

    def failed(self, message: str) -> None:
        """The comparison could not be made: one line saying why."""
        self.query_one("#compare-table", Static).update(
            Content.styled(f"compare failed: {visible(one_line(message, 200))}", "$text-error")
        )
