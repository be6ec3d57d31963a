"""The breakdown and timeline widgets, each in a tiny App driven by Pilot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.app import App, ComposeResult
from textual.message import Message
from textual.widgets import OptionList

from core.events import HistoryChanged, Splice
from core.history import estimate_chars
from core.history.categories import Breakdown
from core.markers import placeholder
from core.values.samples import ContextSample
from tui.widgets.breakdown import BreakdownView, segment_bar
from tui.widgets.timeline import CHART_ROWS, TimelineView

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "read both files [bold]please[/bold]"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b.txt"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha\x1b[31m " * 300},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": placeholder(".task_outputs/tool-results/t.txt")},
    ]},
]


class BreakdownApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Message] = []

    def compose(self) -> ComposeResult:
        yield BreakdownView(id="breakdown")

    def on_breakdown_view_selected(self, message: BreakdownView.Selected) -> None:
        self.seen.append(message)


def rows(table: OptionList) -> list[str]:
    return [str(table.get_option_at_index(index).prompt) for index in range(table.option_count)]


async def test_breakdown_shows_the_figures_and_selecting_names_the_message() -> None:
    app = BreakdownApp()
    tracker = Breakdown(HISTORY[:2])
    async with app.run_test(size=(100, 40)) as pilot:
        view = app.query_one(BreakdownView)
        view.follow(tracker, tokens=1_000, request_extra={"system": 800, "tools": 1_200})
        await pilot.pause()
        table = view.query_one("#breakdown-table", OptionList)
        before = rows(table)
        assert any("tool calls" in row for row in before)
        assert not any("#3.1" in row for row in before)

        # live: the next message arrives as a splice and the rows follow
        event = HistoryChanged(3, estimate_chars(HISTORY), (Splice(2, 0, (HISTORY[2],)),), "tools")
        tracker.apply(event.changes)
        view.follow(tracker, tokens=1_000, request_extra={"system": 800, "tools": 1_200})
        await pilot.pause()
        shown = rows(table)
        assert sum(view.figures.values()) == estimate_chars(HISTORY) + 2_000
        result_row = next(row for row in shown if row.startswith("■ tool results"))
        assert f"{tracker.totals['tool_result']:,} chars" in result_row
        assert any("#3.1" in row for row in shown)  # the big result, located (numbered from 1, as the tree)
        assert any("#3.2" in row for row in shown)  # the placeholder, under markers
        # untrusted text is shown, escaped, never styled or run as markup
        assert any("[bold]please[/bold]" in row for row in shown)
        assert any("\\x1b[31m" in row for row in shown) and not any("\x1b" in row for row in shown)

        # choose the first item under "tool results" with the keyboard
        table.focus()
        index = next(i for i, row in enumerate(shown) if row.startswith("■ tool results"))
        table.highlighted = index + 1
        await pilot.press("enter")
        await pilot.pause()
        assert app.seen and app.seen[-1] == BreakdownView.Selected("tool_result", 2, 0)
        # a category row names its largest item
        table.highlighted = next(i for i, row in enumerate(shown) if row.startswith("■ markers"))
        await pilot.press("enter")
        await pilot.pause()
        assert app.seen[-1] == BreakdownView.Selected("markers", 2, 1)
        # the system prompt is in the request, not the history: nothing to select
        count = len(app.seen)
        table.highlighted = next(i for i, row in enumerate(shown) if row.startswith("■ system prompt"))
        await pilot.press("enter")
        await pilot.pause()
        assert len(app.seen) == count


def test_segment_bar_is_proportional_and_keeps_small_parts_visible() -> None:
    bar = segment_bar({"user": 900, "assistant": 90, "markers": 1, "overhead": 9}, 50)
    assert len(bar) == 50
    runs = [(span.style, span.end - span.start) for span in bar.spans]
    assert runs[0][1] == 44  # 45 cells, less one for the two tiny parts
    assert all(length >= 1 for _, length in runs) and len(runs) == 4
    assert str(segment_bar({}, 5)) == "·····"


class TimelineApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[ContextSample] = []

    def compose(self) -> ComposeResult:
        yield TimelineView(limit=50_000, id="timeline")

    def on_timeline_view_selected(self, message: TimelineView.Selected) -> None:
        self.seen.append(message.sample)


def sample(call: int, before: int, after: int, steps: tuple[str, ...] = (), **usage: Any) -> ContextSample:
    saved = tuple(before - after for _ in steps[:1]) + tuple(0 for _ in steps[1:])
    return ContextSample(call=call, chars_before=before, chars_after=after, steps=steps, saved=saved,
                         messages=call * 2, **usage)


SAMPLES = [
    sample(1, 10_000, 10_000, input_tokens=10, cache_read_tokens=0, cache_creation_tokens=2_500, output_tokens=5),
    sample(2, 30_000, 30_000, input_tokens=10, cache_read_tokens=2_500, cache_creation_tokens=5_000, output_tokens=5),
    sample(3, 62_000, 36_000, ("micro_compact",), input_tokens=10, cache_read_tokens=1_000,
           cache_creation_tokens=8_000, output_tokens=5, cost=0.01),
    sample(4, 40_000, 40_000, input_tokens=10, cache_read_tokens=9_000, cache_creation_tokens=100, output_tokens=5),
]


async def test_timeline_draws_calls_limit_and_steps_and_selects_a_call() -> None:
    app = TimelineApp()
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one(TimelineView)
        for item in SAMPLES[:3]:
            view.add_sample(item)
        view.add_sample(SAMPLES[3])
        await pilot.pause()
        lines = str(view.render()).split("\n")
        assert "limit 50.0k" in "\n".join(lines[:CHART_ROWS])
        steps_row = lines[CHART_ROWS]
        assert steps_row.split()[:4] == ["·", "·", "m", "·"]  # the micro_compact before call 3
        assert "░" in "\n".join(lines[:CHART_ROWS])  # what it removed, drawn above what was sent
        # following the newest call
        assert "call 4/4" in lines[CHART_ROWS + 2]

        view.focus()
        await pilot.press("left")
        await pilot.pause()
        assert app.seen[-1] == SAMPLES[2]
        details = "\n".join(str(line) for line in view.detail_lines())
        assert "call 3/4 · sent 36,000 chars in 6 messages (before: 62,000)" in details
        assert "before it: micro_compact −26,000" in details
        assert "cache write after it 8,000" in details and "$0.0100" in details

        await pilot.press("home")
        await pilot.pause()
        assert app.seen[-1] == SAMPLES[0]
        assert "no compaction before it" in "\n".join(str(line) for line in view.detail_lines())

        await pilot.click(TimelineView, offset=(1 + 2 * 1, 2))  # the second column
        await pilot.pause()
        assert app.seen[-1] == SAMPLES[1]


async def test_timeline_replaces_a_sample_of_the_same_call_and_shows_estimates() -> None:
    app = TimelineApp()
    async with app.run_test(size=(60, 24)) as pilot:
        view = app.query_one(TimelineView)
        view.add_sample(ContextSample(call=1, chars_before=500, chars_after=500, estimated_tokens=120, offline=True))
        view.add_sample(ContextSample(call=1, chars_before=500, chars_after=500, estimated_tokens=125, offline=True,
                                      error="refused\x1b[2J"))
        await pilot.pause()
        assert len(view.samples) == 1
        text = "\n".join(str(line) for line in view.detail_lines())
        assert "~125 tokens (tiktoken estimate)" in text and "no cost offline" in text
        assert "failed: refused\\x1b[2J" in text


async def test_timeline_names_the_limit_when_it_is_drawn_on_the_top_row() -> None:
    app = TimelineApp()
    async with app.run_test(size=(60, 24)) as pilot:
        view = app.query_one(TimelineView)
        # the tallest bar is just above the limit: the scale's top and the limit share the first row
        view.add_sample(ContextSample(call=1, chars_before=56_800, chars_after=20_000))
        await pilot.pause()
        top = str(view.render()).split("\n")[0]
        assert "limit 50.0k" in top and "top 56.8k" in top


@dataclass(frozen=True)
class _Miss:
    """A cache miss as the economics work records one on a sample (its contract's `cause` and `describe`)."""

    cause: str
    path: str | None = None

    def describe(self) -> str:
        return self.cause.replace("_", " ") + (f" at {self.path}" if self.path else "")


@dataclass(frozen=True)
class _SampleWithMiss(ContextSample):
    cache_miss: _Miss | None = None


async def test_timeline_marks_a_cache_miss_and_names_its_cause_when_the_sample_has_one() -> None:
    app = TimelineApp()
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one(TimelineView)
        view.add_sample(_SampleWithMiss(call=1, chars_before=900, chars_after=900, input_tokens=10,
                                        cache_read_tokens=0, cache_creation_tokens=900,
                                        cache_miss=_Miss("first_call")))
        view.add_sample(_SampleWithMiss(call=2, chars_before=1_200, chars_after=1_200, input_tokens=10,
                                        cache_read_tokens=0, cache_creation_tokens=1_200,
                                        cache_miss=_Miss("system_changed", "system\x1b[2J")))
        view.add_sample(ContextSample(call=3, chars_before=1_300, chars_after=1_300, input_tokens=10,
                                      cache_read_tokens=1_200, cache_creation_tokens=100))
        await pilot.pause()
        cache_row = str(view.render()).split("\n")[CHART_ROWS + 1]
        assert cache_row.startswith("  ✗ ▇ "), "a first call misses nothing (no read: blank); call 2 missed"
        assert "(✗ miss)" in cache_row
        view.select(1)
        await pilot.pause()
        details = "\n".join(str(line) for line in view.detail_lines())
        assert "cache miss: system changed at system\\x1b[2J" in details
        view.select(2)
        await pilot.pause()
        assert "cache miss" not in "\n".join(str(line) for line in view.detail_lines())


async def test_every_breakdown_row_is_one_line_at_any_width() -> None:
    """A label of several lines, or one longer than the view, wrapped its row onto a second line (issue
    30, item 21): each row is one line, cut with an ellipsis."""
    history = [{"role": "user", "content": "first line of the message\nsecond line " + "word " * 40},
               {"role": "assistant", "content": "ok\nfine"}]
    app = BreakdownApp()
    async with app.run_test(size=(60, 40)) as pilot:
        view = app.query_one(BreakdownView)
        view.follow(Breakdown(history), tokens=100)
        await pilot.pause()
        table = view.query_one("#breakdown-table", OptionList)
        assert table.virtual_size.height == table.option_count
        assert any(row.startswith("    #1 ") and "second line" in row for row in rows(table))
