"""The compare view (`ctxtui inspect FILE --compare` in a terminal) on the three recorded sessions of
tests/fixtures/engines, through Pilot at 80x24: one row and one timeline per engine with the figures of
`compare` for that file, the table whole on the screen, a hostile session's bytes shown as escapes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.compaction import CompactionSettings
from core.config import Settings
from core.engines.compare import compare_file
from core.sessions.inspection import load_file, report
from tests.support.pilot import wait_for
from tui.inspect_app import InspectApp
from tui.widgets.compare_view import CUT, CompareView, EngineTimeline, cost_texts, table_content
from tui.widgets.message_tree import MessageTree

FIXTURES = Path(__file__).parents[2] / "fixtures" / "engines"
FILES = ["ctxtui_session.jsonl", "proxy_recording.jsonl", "claude_code_session.jsonl"]
ENGINES = ["client", "client cache-aware", "server-clear", "server-compact"]


def k(text: str) -> float:
    """'18.1k' -> 18100 (to within the table's rounding), '149' -> 149."""
    return float(text[:-1]) * 1000 if text.endswith("k") else float(text)


async def open_view(path: Path, workdir: Path) -> InspectApp:
    inspected = load_file(path)
    return InspectApp(inspected, await report(inspected, CompactionSettings()), compare=Settings(workdir=workdir))


def table_lines(view: CompareView) -> list[str]:
    return str(view.query_one("#compare-table").render()).splitlines()


@pytest.mark.parametrize("name", FILES)
async def test_one_row_and_one_timeline_per_engine_with_the_figures_of_compare(name: str, tmp_path: Path) -> None:
    path = FIXTURES / name
    expected = await compare_file(path, Settings(workdir=tmp_path))
    app = await open_view(path, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(CompareView)
        await wait_for(pilot, lambda: len(view.query(EngineTimeline)) == len(ENGINES))
        await pilot.pause()
        lines = table_lines(view)
        rows = {engine: line for line in lines for engine in ENGINES if re.match(rf"{engine}\s+\d", line)}
        assert list(rows) == ENGINES
        for record in expected["engines"]:
            fields = rows[record["engine"]][len(record["engine"]):].split()
            calls, peak, mean, uncached, read, write, cost, summaries, lost = fields
            assert int(calls) == record["calls"]
            for shown, figure in ((peak, "peak_tokens"), (mean, "mean_tokens"), (uncached, "input_tokens"),
                                  (read, "cache_read_tokens"), (write, "cache_write_tokens")):
                assert abs(k(shown) - record[figure]) <= 50, (shown, figure, record[figure])
            shown_costs = dict(zip(ENGINES, cost_texts([row["cost"] for row in expected["engines"]]), strict=True))
            assert cost == shown_costs[record["engine"]] and abs(float(cost) - record["cost"]) < 0.005
            assert (int(summaries), int(lost)) == (record["summaries"], record["facts_not_visible"])
        cheapest = min(record["cost"] for record in expected["engines"])
        best = [record["engine"] for record in expected["engines"] if record["cost"] == cheapest]
        assert f"cheapest: {', '.join(best)} (${cheapest:.2f})" in lines

        timelines = list(view.query(EngineTimeline))
        assert [timeline.record["engine"] for timeline in timelines] == ENGINES
        for timeline, record in zip(timelines, expected["engines"], strict=True):
            assert timeline.record["sizes"] == record["sizes"] and timeline.record["cuts"] == record["cuts"]
            drawn = str(timeline.render()).splitlines()
            shown, cells = timeline.shown(timeline.content_region.width)
            assert shown.start == 0  # every call of these sessions fits at 80 columns
            marks = [index // cells + 1 for index, char in enumerate(drawn[-1]) if char == CUT]
            assert marks == record["cuts"]
            top = max(size for row in expected["engines"] for size in row["sizes"])
            assert timeline.top == top  # one scale for every engine: their bars compare
            tallest = max(range(len(record["sizes"])), key=lambda call: record["sizes"][call])
            assert drawn[1][tallest * cells] != " " or record["sizes"][tallest] <= top * 2 / 3
            assert drawn[3][tallest * cells] != " "  # every call has a bar in the bottom row


@pytest.mark.parametrize("name", FILES)
async def test_at_80x24_the_table_fits_whole(name: str, tmp_path: Path) -> None:
    app = await open_view(FIXTURES / name, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(CompareView)
        await wait_for(pilot, lambda: view.data is not None)
        await pilot.pause()
        table = view.query_one("#compare-table")
        lines = table_lines(view)
        assert len(lines) == table.region.height == 11
        assert max(len(line) for line in lines) <= table.region.width
        assert table.region.y >= 1 and table.region.bottom <= 23  # under the title, above the footer
        assert sum(1 for line in lines for engine in ENGINES if re.match(rf"{engine}\s+\d", line)) == len(ENGINES)


async def test_comparing_shows_first_and_c_switches_to_the_inspector(tmp_path: Path) -> None:
    app = await open_view(FIXTURES / "proxy_recording.jsonl", tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(CompareView)
        assert view.data is None and "comparing" in table_lines(view)[0]
        await wait_for(pilot, lambda: view.data is not None)
        await pilot.press("c")
        await wait_for(pilot, lambda: app.query_one(MessageTree).has_focus)
        assert not view.display or not view.region.height
        await pilot.press("c")
        await wait_for(pilot, lambda: view.region.height > 0)


async def test_a_hostile_session_shows_its_escapes_as_text(tmp_path: Path) -> None:
    model = "evil\x1b]0;owned\x07\x1b[2J\x1b[31mred"
    lines = (FIXTURES / "ctxtui_session.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    metas = [record for record in records if record.get("type") == "meta"]
    assert metas
    for record in metas:
        record["model"] = model
    path = tmp_path / "ses\x1b[2Jsion.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    app = await open_view(path, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(CompareView)
        await wait_for(pilot, lambda: view.data is not None)
        await pilot.pause()
        assert view.data is not None and view.data["model"] == model
        lines = table_lines(view)
        text = "\n".join(lines)
        assert "\x1b" not in text and "\x07" not in text
        assert lines[1].startswith("model evil\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred, priced as")
        assert lines[0].endswith("ses\\x1b[2Jsion.jsonl")
        assert all(len(line) <= 80 for line in lines)


def test_costs_that_differ_read_differently() -> None:
    """At cents, engines a few tenths of a cent apart looked equal (issue 30, item 21)."""
    assert cost_texts([0.0123, 0.0126, 0.0123]) == ["0.012", "0.013", "0.012"]
    assert cost_texts([0.01234, 0.01238]) == ["0.0123", "0.0124"]
    assert cost_texts([1.5, 2.25]) == ["1.50", "2.25"]  # cents tell them apart already
    assert cost_texts([0.004, None]) == ["0.00", "-"]
    data = {"file": "s.jsonl", "kind": "session", "model": "m", "priced_as": "m", "engines": [
        {"engine": name, "calls": 3, "peak_tokens": 1_000, "mean_tokens": 900, "input_tokens": 100,
         "cache_read_tokens": 2_000, "cache_write_tokens": 300, "cost": cost, "summaries": 0, "facts_not_visible": 0}
        for name, cost in (("client", 0.01234), ("server-clear", 0.01238))]}
    lines = str(table_content(data)).splitlines()
    client, server = (next(line for line in lines if line.startswith(name)) for name in ("client", "server-clear"))
    assert "0.0123" in client and "0.0124" in server
    header = next(line for line in lines if line.startswith("engine"))
    assert header.index("cost") + len("cost") == client.index("0.0123") + len("0.0123")  # the column lines up
    assert "cheapest: client ($0.0123)" in lines
