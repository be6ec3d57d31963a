"""TimelineView: the context of every model call, as a bar chart, with what compaction did between.

One column per call (`agent.timeline` samples, oldest left): the solid bar is what was sent
(`chars_after`), the light part above it what the steps before it removed (`chars_before`), a
dashed line the pipeline's char limit (none for another client's calls: `limit=None`). Under the bars: a mark for each call that had compaction
steps before it, and the share of the prompt read from the cache. Left/Right (or a click) select a
call; the lines under the chart then show its sample: what was sent, tokens, cache read/write, cost
and the steps that ran before it with what each saved; they wrap at the view's width (the view's
height counts the wrapped lines, and the inspector's views scroll when it is taller than the room:
nothing is cut). `TimelineView.Selected` is posted on each change of selection.

Drawn with Rich Text rather than a plotting widget: textual-plotext (last released 2024-11) predates
the Textual 8 this app uses and maps no click to a bar; Textual's Sparkline has no limit line, no
per-bar marks and no selection.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Protocol

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from core.text import visible
from core.usage.timeline import CLIENT_COMPACTION, session_cost
from core.values.samples import ContextSample
from tui.format import count, one_line, plural, short_count

CHART_ROWS = 8
COLUMN = 2  # cells per call: the bar and a gap
_LEVELS = " ▁▂▃▄▅▆▇█"
STEP_MARKS = {
    "tool_result_budget": "b",
    "snip_compact": "s",
    "micro_compact": "m",
    "fit_tool_results": "f",
    "compact_history": "C",
    "reactive_compact": "R",
    CLIENT_COMPACTION: "Σ",  # the proxy: the client compacted its own history before this call
}
_SENT = Style(color="dodger_blue1")
_SENT_OVER = Style(color="red1")
_REMOVED = Style(color="grey35")
_LIMIT = Style(color="red3")
_STEP = Style(color="spring_green2", bold=True)
_CACHE = Style(color="gold1")
_WRITE = Style(color="dark_orange")
_MISS = Style(color="orange_red1", bold=True)
_SELECTED = Style(bgcolor="grey23")
_DIM = Style(dim=True)


class TimelineView(Widget, can_focus=True):
    """The per-call context chart and the selected call's details."""

    DEFAULT_CSS = """
    TimelineView {
        height: auto;
        min-height: 14;
        padding: 0 1;
        border-top: solid $panel-lighten-2;
        border-title-color: $text-primary;
        border-title-style: bold;
        &:focus-within { border-top: thick $accent; border-title-color: $text-accent; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "move(-1)", "Earlier call", show=False, id="timeline.earlier"),
        Binding("right", "move(1)", "Later call", show=False, id="timeline.later"),
        Binding("home", "first", "First call", show=False, id="timeline.first"),
        Binding("end", "last", "Last call", show=False, id="timeline.last"),
        Binding("up", "scroll_details(-1)", "Scroll up", show=False, id="timeline.up"),
        Binding("down", "scroll_details(1)", "Scroll down", show=False, id="timeline.down"),
        Binding("pageup", "scroll_details(-10)", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown", "scroll_details(10)", "Page down", show=False, id="timeline.page_down"),
    ]

    @dataclass
    class Selected(Message):
        """A call was selected: its sample (what was sent, the steps before it, usage)."""

        sample: ContextSample

    selected: reactive[int | None] = reactive(None)
    """The index of the selected sample; None follows the newest call."""

    def __init__(
        self, *, limit: int | None = 50_000, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.samples: list[ContextSample] = []
        self.limit = limit

    # --- feeding ----------------------------------------------------------------------------------

    def set_samples(self, samples: Iterable[ContextSample]) -> None:
        """Show these samples (e.g. `agent.timeline` after a resume)."""
        self.samples = list(samples)
        if self.selected is not None and self.selected >= len(self.samples):
            self.selected = None
        self.refresh(layout=True)

    def add_sample(self, sample: ContextSample) -> None:
        """A `ContextSampled` event: a new call, or the final figures of the newest one (same `call`)."""
        for index in range(len(self.samples) - 1, -1, -1):
            if self.samples[index].call == sample.call:
                self.samples[index] = sample
                break
        else:
            self.samples.append(sample)
        self.refresh(layout=True)

    @property
    def current(self) -> ContextSample | None:
        """The selected sample (the newest when none is selected)."""
        if not self.samples:
            return None
        index = self.selected if self.selected is not None else len(self.samples) - 1
        return self.samples[min(index, len(self.samples) - 1)]

    # --- selection --------------------------------------------------------------------------------

    def _index(self) -> int:
        return self.selected if self.selected is not None else len(self.samples) - 1

    def select(self, index: int) -> None:
        if not self.samples:
            return
        index = max(0, min(index, len(self.samples) - 1))
        self.selected = index
        self.post_message(self.Selected(self.samples[index]))

    def action_move(self, step: int) -> None:
        self.select(self._index() + step)

    def action_first(self) -> None:
        self.select(0)

    def action_last(self) -> None:
        self.select(len(self.samples) - 1)

    def action_scroll_details(self, lines: int) -> None:
        """Scroll the view that holds the timeline (when its details make it taller than the room)."""
        if isinstance(self.parent, Widget):
            self.parent.scroll_relative(y=lines, animate=False)

    def watch_selected(self) -> None:
        self.refresh()

    def _visible_range(self, width: int) -> range:
        """The samples that fit, keeping the selected one in view (newest at the right)."""
        fit = max(width // COLUMN, 1)
        end = len(self.samples)
        index = self._index()
        if index < end - fit:
            end = index + 1
        return range(max(end - fit, 0), end)

    def on_click(self, event: events.Click) -> None:
        if not self.samples or event.y >= CHART_ROWS:
            return
        shown = self._visible_range(self._chart_width())
        column = (event.x - self.styles.padding.left) // COLUMN
        if 0 <= column < len(shown):
            self.select(shown.start + column)

    # --- drawing ----------------------------------------------------------------------------------

    def _chart_width(self) -> int:
        return max(self.content_region.width or self.size.width, COLUMN)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The chart's rows, then every detail line as it wraps at `width` (none is cut)."""
        if not self.samples:
            return CHART_ROWS + 2
        return (
            CHART_ROWS
            + 2
            + sum(len(Content.from_rich_text(line).wrap(max(width, 1))) for line in self.detail_lines())
        )

    def render(self) -> Text:
        """The chart (each row cut to the width: a chart row must never wrap), then the detail lines,
        which wrap."""
        width = self._chart_width()
        chart = self._chart(width)
        if not self.samples:
            return chart
        rows = chart.split("\n")
        for row in rows:
            row.truncate(width, overflow="ellipsis")
        text = Text("\n").join(rows)
        for line in self.detail_lines():
            text.append("\n")
            text.append_text(line)
        return text

    def _chart(self, width: int) -> Text:
        text = Text()
        if not self.samples:
            text.append("no model calls yet", _DIM)
            return text
        shown = [self.samples[index] for index in self._visible_range(width)]
        first = self._visible_range(width).start
        limit = self.limit
        scale = max(
            [(limit or 0) * 1.1, *(s.chars_before for s in shown), *(s.chars_after for s in shown), 1.0]
        )
        limit_row = CHART_ROWS - 1 - min(int(limit / scale * CHART_ROWS), CHART_ROWS - 1) if limit else -1
        for row in range(CHART_ROWS):
            floor = (CHART_ROWS - 1 - row) / CHART_ROWS * scale  # the value at this row's bottom
            for offset, sample in enumerate(shown):
                style_extra = _SELECTED if first + offset == self._index() else None
                cell, style = self._cell(sample, floor, scale / CHART_ROWS)
                if cell == " " and row == limit_row:
                    cell, style = "╌", _LIMIT
                text.append(cell, style + style_extra if style_extra else style)
                gap = "╌" if row == limit_row else " "
                text.append(gap, _LIMIT if row == limit_row else Style())
            if row == limit_row:  # the limit's label wins the top row when the limit is drawn there
                text.append(f" limit {short_count(limit or 0)}", _LIMIT)
                if row == 0:
                    text.append(f" · top {short_count(int(scale))}", _DIM)
            elif row == 0:
                text.append(f" {short_count(int(scale))}", _DIM)
            text.append("\n")
        for sample in shown:
            mark = STEP_MARKS.get(sample.steps[-1], "*") if sample.steps else "·"
            text.append(mark, _STEP if sample.steps else _DIM)
            text.append(" ")
        text.append(" steps\n", _DIM)
        misses = False
        for sample in shown:
            prompt = sample.prompt_tokens
            if cache_miss(sample) is not None:
                misses = True
                text.append("✗", _MISS)
            elif prompt:
                share = (sample.cache_read_tokens or 0) / prompt
                text.append(_LEVELS[min(int(share * 8 + 0.5), 8)], _CACHE)
            else:
                text.append("-", _DIM)
            text.append(" ")
        text.append(" cache read" + (" (✗ miss)" if misses else ""), _DIM)
        return text

    def _cell(self, sample: ContextSample, floor: float, per_row: float) -> tuple[str, Style]:
        """The character of one bar cell: solid for what was sent (coloured, bottom up, by the share of
        the prompt read from the cache, written to it and uncached; red above the limit), light for
        what steps removed."""
        sent = sample.chars_after
        before = max(sample.chars_before, sent)
        if sent > floor:
            amount = min((sent - floor) / per_row, 1.0)
            over = self.limit is not None and floor >= self.limit
            return _LEVELS[max(int(amount * 8), 1)], _SENT_OVER if over else _cache_style(
                sample, floor / sent
            )
        if before > floor:
            return "░", _REMOVED
        return " ", Style()

    def detail_lines(self) -> list[Text]:
        """The selected call: what was sent, tokens, cache, cost, its miss and where its request left the
        previous one, and the steps before it; then the colours' legend and every call's miss."""
        sample = self.current
        if sample is None:
            return []
        head = Text()
        head.append(f"call {sample.call}/{len(self.samples)}", Style(bold=True))
        head.append(f" · sent {plural(sample.chars_after, 'char')} in {plural(sample.messages, 'message')}")
        if sample.chars_before != sample.chars_after:
            head.append(f" (before: {count(sample.chars_before)})", _DIM)
        tokens = Text()
        if sample.prompt_tokens is not None:
            tokens.append(f"{count(sample.prompt_tokens)} tokens")
            tokens.append(
                f" · input {count(sample.input_tokens or 0)} · cache read {count(sample.cache_read_tokens or 0)}"
                f" · cache write {count(sample.cache_creation_tokens or 0)} · output {count(sample.output_tokens or 0)}"
            )
        elif sample.estimated_tokens is not None:
            tokens.append(f"~{count(sample.estimated_tokens)} tokens (tiktoken estimate)")
        else:
            tokens.append("tokens: -", _DIM)
        if sample.cost is not None:
            tokens.append(f" · ${sample.cost:.4f}")
            total = session_cost(self.samples)
            if total is not None:
                tokens.append(f" (session ${total:.4f})", _DIM)
        elif sample.offline:
            tokens.append(" · no cost offline", _DIM)
        lines = [head, tokens]
        miss = cache_miss(sample)
        if miss is not None:
            lines.append(Text(f"cache miss: {visible(one_line(miss.describe(), 200))}", _MISS))
        change = getattr(sample, "prefix_change", None)
        if change is not None:
            lines.append(
                Text(
                    f"changed at {visible(one_line(change.path, 60))}: was {visible(one_line(change.before, 80))!r}"
                    f", now {visible(one_line(change.after, 80))!r}",
                    _DIM,
                )
            )
        if sample.steps:
            steps = Text("before it: ", _DIM)
            for number, (step, saved) in enumerate(zip(sample.steps, sample.saved, strict=False)):
                if number:
                    steps.append(", ")
                steps.append(step, _STEP)
                steps.append(f" −{count(saved)}")
            if sample.cache_creation_tokens:
                steps.append(f" · cache write after it {count(sample.cache_creation_tokens)}", _CACHE)
            lines.append(steps)
        else:
            lines.append(Text("no compaction before it", _DIM))
        if sample.error:
            lines.append(Text(f"failed: {visible(one_line(sample.error, 200))}", Style(color="red1")))
        return lines + self._legend()

    def _legend(self) -> list[Text]:
        """'■ cache read ■ cache write ■ uncached' once a call has usage, and every miss by call and cause."""
        lines: list[Text] = []
        if any(sample.prompt_tokens for sample in self.samples):
            legend = Text()
            for label, style in (("cache read", _CACHE), ("cache write", _WRITE), ("uncached", _SENT)):
                legend.append("■ ", style)
                legend.append(f"{label}  ", _DIM)
            lines.append(legend)
        misses = [(sample.call, miss) for sample in self.samples if (miss := cache_miss(sample)) is not None]
        if misses:
            line = Text(f"{plural(len(misses), 'miss', 'misses')}: ", _MISS)
            for number, (call, miss) in enumerate(misses[-6:]):
                if number:
                    line.append(" · ", _DIM)
                line.append(f"✗ call {call} ", _MISS)
                line.append(visible(one_line(miss_cause(miss), 60)), _DIM)
            if len(misses) > 6:
                line.append(f" (and {len(misses) - 6} earlier)", _DIM)
            lines.append(line)
        return lines


def _cache_style(sample: ContextSample, height: float) -> Style:
    """The colour of a bar cell `height` (0-1) up the bar: read, then written, then uncached tokens."""
    prompt = sample.prompt_tokens
    if not prompt:
        return _SENT
    read = (sample.cache_read_tokens or 0) / prompt
    written = read + (sample.cache_creation_tokens or 0) / prompt
    return _CACHE if height < read else _WRITE if height < written else _SENT


def miss_cause(miss: _Miss) -> str:
    """'messages changed by micro_compact', 'ttl expired': the cause and what of ours did it."""
    by = getattr(miss, "by", None)
    return miss.cause.replace("_", " ") + (f" by {by}" if by else "")


class _Miss(Protocol):
    cause: str

    def describe(self) -> str: ...


def cache_miss(sample: ContextSample) -> _Miss | None:
    """The sample's cache miss worth a mark: one the economics work records on a sample (`cache_miss`),
    other than a conversation's first call (which has nothing cached to miss)."""
    miss = getattr(sample, "cache_miss", None)
    return miss if miss is not None and getattr(miss, "cause", None) != "first_call" else None


__all__ = ["STEP_MARKS", "TimelineView", "cache_miss", "miss_cause"]
