"""ContextGauge: how full the model's context is, against the limit, and what compaction last did.

The figure is `core.history.estimate_chars` of the agent's history (from ContextMeasured events and
`agent.chars`), never a re-serialisation here. Beside it, in tokens: the next request's size against
the model's window (exact from `count_tokens`, or the tiktoken estimate, labelled with why), the cache
read/write of the last call (from its `ContextSample`) and the session's cost (none offline). Repaints are throttled to ~10/s; `flush()` paints
the exact current value at once (the app calls it when a turn ends).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget

from tui.format import count, display_line, plural, short_count
from tui.widgets.cache_clock import cache_clock_line, timing_line

if TYPE_CHECKING:
    from typing import Self

    from textual.geometry import Region, Size

    from core.events import CompactionStep, ContextMeasured
    from core.usage.prices import Window
    from core.values.samples import ContextSample, TokenCount

PIPELINE = (
    ("tool_result_budget", "budget"),
    ("snip_compact", "snip"),
    ("micro_compact", "micro"),
    ("fit_tool_results", "fit"),
    ("compact_history", "summary"),
    ("reactive_compact", "reactive"),
)
_EIGHTHS = " ▏▎▍▌▋▊▉"
THROTTLE_SECONDS = 0.1


@dataclass
class GaugeState:
    """Everything the gauge shows."""

    chars: int = 0
    limit: int = 50_000
    target_ratio: float = 0.8
    messages: int = 0
    tokens: int | None = None
    tokens_stale: bool = False
    input_tokens: int | None = None
    """The API's input_tokens of the last model call (None offline, and once the history was compacted
    since: the figure belonged to a history that no longer exists)."""
    dropped_input: int | None = None
    """The figure dropped at the last compaction: a measurement repeating it is still the old call's."""
    offline: bool = False
    last_step: CompactionStep | None = None
    undone: bool = False
    """The last step was undone since (what it removed is back): "last:" says so, not what it saved."""
    fired: dict[str, int] = field(default_factory=dict)  # steps fired in the current/last turn
    totals: dict[str, int] = field(default_factory=dict)  # steps fired this session
    count: TokenCount | None = None
    """The next request's size in tokens (exact or the labelled estimate)."""
    count_stale: bool = False
    window: Window | None = None
    sample: ContextSample | None = None
    """The last model call's sample (its cache read/write)."""
    cost: float | None = None
    """The session's cost so far (None offline or when nothing could be priced)."""
    watched: bool = False
    """Another client's request (the proxy's latest): its tokens are what was sent, and ctxtui's own
    pipeline (the step chips, the last step) has nothing to say about it."""
    timing: str | None = None
    """The compaction timing in force ("eager", "cache-aware"), from the last sample or forecast."""
    held: tuple[CompactionStep, ...] = ()
    """Cache-aware timing: the steps that wait for the cache (a forecast's or a turn's CompactionHeld)."""

    @property
    def count_label(self) -> str:
        """'exact', 'estimate (offline)', 'estimate (count_tokens rate limited)', ..."""
        found = self.count
        if found is None:
            return "not counted yet"
        if found.exact:
            return "exact"
        reason = found.reason.removesuffix(" (429)")
        return f"estimate ({display_line(reason, 40)})" if reason else "estimate"

    @property
    def subject(self) -> str:
        """Which request the token line sizes: the agent's next one, or the watched client's last one."""
        return "sent" if self.watched else "next"

    @property
    def window_line(self) -> str:
        """'next 12.3k / 200k tok (6%) · exact · window: table' (no window part when it is unknown)."""
        found, window = self.count, self.window
        if found is None:
            return f"{self.subject} request: not counted yet"
        known = window is not None and window.tokens
        if window is not None and window.tokens:
            of = f" / {_round(window.tokens)} tok ({math.floor(found.tokens * 100 / window.tokens)}%)"
        else:
            of = " tok"
        source = f" · window: {window.source}" if known and window is not None else ""
        return f"{self.subject} {short_count(found.tokens)}{of} · {self.count_label}{source}"

    @property
    def cache_line(self) -> str:
        """'cache read 9.0k · write 120 (last call) · session $0.0400'; offline says there is none."""
        if self.offline:
            return "cache, cost: none offline"
        sample = self.sample
        parts = []
        if sample is not None and sample.cache_read_tokens is not None:
            parts.append(
                f"cache read {short_count(sample.cache_read_tokens)} · "
                f"write {short_count(sample.cache_creation_tokens or 0)} (last call)"
            )
        else:
            parts.append("cache: -")
        parts.append(f"session ${self.cost:.4f}" if self.cost is not None else "cost: -")
        return " · ".join(parts)

    @property
    def mini_line(self) -> str:
        """The one-line form: '42,318/50k ch 85% · 12.3k/200k tok est · cache r9.0k w0.1k · $0.04'."""
        parts = [f"{count(self.chars)}/{_round(self.limit)} ch {self.percent}"]
        if self.count is not None:
            window = (
                f"/{_round(self.window.tokens)}" if self.window is not None and self.window.tokens else ""
            )
            parts.append(
                f"{short_count(self.count.tokens)}{window} tok {'exact' if self.count.exact else 'est'}"
            )
        sample = self.sample
        if not self.offline and sample is not None and sample.cache_read_tokens is not None:
            parts.append(
                f"cache r{_tenths(sample.cache_read_tokens)} w{_tenths(sample.cache_creation_tokens or 0)}"
            )
        if not self.offline and self.cost is not None:
            parts.append(f"${self.cost:.2f}")
        return " · ".join(parts)

    @property
    def ratio(self) -> float:
        return self.chars / self.limit if self.limit else 0.0

    @property
    def level(self) -> str:
        """'ok', 'warning' (>= the micro target) or 'over' (> the limit); always 'ok' for a watched
        client's request (ctxtui's limit is not its limit)."""
        if self.watched:
            return "ok"
        if self.chars > self.limit:
            return "over"
        if self.ratio >= self.target_ratio:
            return "warning"
        return "ok"

    @property
    def percent(self) -> str:
        """The ratio as a percentage, never rounded up: 99.9% shows 99%, 50,137 of 50,000 shows 100.2%."""
        if not self.limit:
            return "0%"
        whole = math.floor(self.chars * 100 / self.limit)
        if self.chars > self.limit and whole == 100:
            return f"{math.floor(self.chars * 1000 / self.limit) / 10:.1f}%"
        return f"{whole}%"

    @property
    def figure(self) -> str:
        """'42,318 / 50,000 chars (84%)'; an empty history says so (its JSON `[]` is 2 chars). A watched
        client's request is measured against ctxtui's limit for comparison, and says so."""
        empty = ", empty history" if self.messages == 0 else ""
        if self.watched:
            return f"{count(self.chars)} chars of messages ({self.percent} of ctxtui's {count(self.limit)} limit{empty})"
        return f"{count(self.chars)} / {count(self.limit)} chars ({self.percent}{empty})"

    @property
    def tokens_line(self) -> str:
        parts = []
        if self.tokens is not None:
            parts.append(f"~{short_count(self.tokens)} tokens of history (cl100k est.)")
        else:
            parts.append("tokens: not counted yet")
        if self.input_tokens is not None and not self.offline:
            parts.append(f"last call: API input {count(self.input_tokens)}")
        return " · ".join(parts)

    @property
    def short_tokens_line(self) -> str:
        parts = [f"~{short_count(self.tokens)} tok (est.)" if self.tokens is not None else "tokens: -"]
        if self.input_tokens is not None and not self.offline:
            parts.append(f"last API {count(self.input_tokens)}")
        return " · ".join(parts)

    @property
    def short_last_line(self) -> str:
        step = self.last_step
        if step is None:
            return "last: -"
        if self.undone:
            return f"last: {step.step} undone"
        return f"last: {step.step} −{count(step.saved)}" if step.saved > 0 else f"last: {step.step}"

    @property
    def last_line(self) -> str:
        step = self.last_step
        if step is None:
            return "last: no compaction yet"
        if self.undone:
            return f"last: {step.step} undone"
        if step.saved > 0:
            return f"last: {step.step} saved {count(step.saved)} chars"
        return f"last: {step.step} ({count(step.chars_before)} -> {count(step.chars_after)} chars)"


def _round(value: int) -> str:
    """A window in tokens: 200000 -> '200k', 1000000 -> '1M', 64500 -> '64.5k'."""
    return short_count(value).replace(".0k", "k").replace(".0M", "M")


def _tenths(value: int) -> str:
    """9000 -> '9.0k', 120 -> '0.1k': the mini gauge's fixed-width cache figures."""
    return f"{value / 1_000:.1f}k"


def bar(state: GaugeState, width: int, styles: dict[str, Style]) -> Text:
    """The bar: filled up to `chars`, a tick at the micro target, a mark at the limit.

    The scale runs to 125% of the limit (further when over it), so the fill visibly crosses the limit.
    """
    width = max(width, 10)
    scale = max(state.limit * 1.25, state.chars * 1.04, 1.0)
    per_cell = scale / width
    target_col = min(int(state.limit * state.target_ratio / per_cell), width - 1)
    limit_col = min(int(state.limit / per_cell), width - 1)
    fill = styles[state.level]
    over = styles["over"]
    empty = styles["empty"]
    cells: list[tuple[str, Style]] = []
    for col in range(width):
        start = col * per_cell
        amount = min(max((state.chars - start) / per_cell, 0.0), 1.0)
        colour = over if start >= state.limit else fill
        if col in (limit_col, target_col):
            bg = colour.bgcolor if amount >= 0.5 else empty.bgcolor
            mark = styles["limit"] if col == limit_col else styles["tick"]
            cells.append(("┃" if col == limit_col else "│", Style(color=mark.color, bgcolor=bg, bold=True)))
        elif amount >= 1.0:
            cells.append((" ", colour))
        elif amount <= 0.0:
            cells.append((" ", empty))
        else:
            eighth = _EIGHTHS[min(int(amount * 8), 7)]
            cells.append((eighth, Style(color=colour.bgcolor, bgcolor=empty.bgcolor)))
    text = Text()
    run, run_style = "", cells[0][1]
    for char, style in cells:
        if style == run_style:
            run += char
        else:
            text.append(run, run_style)
            run, run_style = char, style
    text.append(run, run_style)
    return text


class ContextGauge(Widget):
    """The inspector's gauge (several lines); `compact=True` gives the one-line version."""

    DEFAULT_CSS = """
    ContextGauge {
        height: auto;
        padding: 0 1;
        &.-compact { height: 1; padding: 0 1; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "gauge--ok",
        "gauge--warning",
        "gauge--over",
        "gauge--empty",
        "gauge--tick",
        "gauge--limit",
        "gauge--muted",
        "gauge--step-on",
        "gauge--step-off",
        "gauge--step-seen",
    }

    level: reactive[str] = reactive("ok")
    dense: reactive[bool] = reactive(False, layout=True)
    """Fewer lines (no scale row, no step chips) for short terminals."""

    def __init__(self, *, compact: bool = False, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.compact = compact
        self._measuring = 0
        """The width Textual measures the height at, while it does (0 otherwise)."""
        self._drawn: tuple[tuple[object, ...], Text] | None = None
        """The last render and what it was drawn from (`_drawn_from`): Textual renders the gauge once
        to measure its height and again to paint it; the second is this one."""
        self._version = 0
        """Bumped by every change of its state (`_changed`), its styles and every `refresh`."""
        # the classes its first styles need, set before it is mounted (no restyle pass of their own)
        self.set_class(compact, "-compact", update=False)
        self.add_class("-ok", update=False)  # the level it starts at (`level`'s default)
        self.state = GaugeState()
        self._painted = 0.0
        self._pending: Timer | None = None
        self.mirror: ContextGauge | None = None
        self._style_cache: dict[str, Style] | None = None
        self.paused = False  # steering: automatic compaction paused (a badge)
        self.preview_line = ""  # steering: what the next call would do
        self.preview_warning = False  # the next call would summarise (the lossy step)
        self.clock: Callable[[], float] = time.time
        """What "now" is for the cache's clock (the timer repaints it every second)."""

    def on_mount(self) -> None:
        if not self.compact:
            self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        """The cache's clock runs down between events: repaint while a call has set it."""
        sample = self.state.sample
        if sample is not None and sample.cache_expires_at is not None:
            self.refresh()

    # --- the figures (exact at once; painting is throttled) -----------------------------------------

    @property
    def chars(self) -> int:
        return self.state.chars

    @property
    def figure(self) -> str:
        return self.state.figure

    def configure(
        self, limit: int, target_ratio: float, *, offline: bool = False, watched: bool = False
    ) -> None:
        """The limit and micro target; `offline`: there is no API, so no API figures are shown; `watched`:
        the request is another client's (the proxy's), not the next call of ctxtui's agent."""
        self.state.limit = limit
        self.state.target_ratio = target_ratio
        self.state.offline = offline
        self.state.watched = watched
        self._changed()

    def measured(self, event: ContextMeasured, chars: int | None = None, messages: int | None = None) -> None:
        """Take the token figures of a measurement; `chars`/`messages`, when given, are the agent's
        current figures (the worker may be ahead of the message queue, so a queued event can be older)."""
        state = self.state
        state.limit = event.limit
        state.chars = event.chars if chars is None else chars
        state.messages = event.messages if messages is None else messages
        state.tokens = event.tokens
        state.tokens_stale = state.chars != event.chars
        if event.input_tokens is not None and event.input_tokens != state.dropped_input:
            state.input_tokens = event.input_tokens
            state.dropped_input = None
        self._changed()

    def history_changed(self, chars: int, messages: int) -> None:
        state = self.state
        if chars != state.chars or messages != state.messages:
            state.tokens_stale = True
            state.count_stale = state.count is not None
        state.chars, state.messages = chars, messages
        self._changed()

    def step(self, event: CompactionStep) -> None:
        """A compaction step: the last API input figure described the history before it, so it goes
        (until a model call reports a new one)."""
        if self.state.input_tokens is not None:
            self.state.dropped_input = self.state.input_tokens
        self.state.input_tokens = None
        self.state.last_step = event
        self.state.undone = False
        self.state.fired[event.step] = self.state.fired.get(event.step, 0) + 1
        self.state.totals[event.step] = self.state.totals.get(event.step, 0) + 1
        self._changed()

    def steering(
        self, *, paused: bool | None = None, preview: str | None = None, warning: bool | None = None
    ) -> None:
        """The steering figures: the paused badge and the "next call: ..." line (and whether it warns)."""
        for gauge in (self, self.mirror):
            if gauge is None:
                continue
            if paused is not None:
                gauge.paused = paused
            if preview is not None:
                gauge.preview_line = preview
            if warning is not None:
                gauge.preview_warning = warning
            gauge.refresh(layout=True)

    def counted(self, found: TokenCount) -> None:
        """The next request's size, from `agent.count_next_request` (exact or the labelled estimate)."""
        self.state.count = found
        self.state.count_stale = False
        self._changed()

    def windowed(self, window: Window) -> None:
        self.state.window = window
        self._changed()

    def sampled(self, sample: ContextSample, session_cost: float | None) -> None:
        """A model call ended: its cache figures and the session's cost so far."""
        self.state.sample = sample
        self.state.cost = session_cost
        if sample.timing is not None:
            self.state.timing = sample.timing
            self.state.held = ()  # what waited went out with this call, or waits again (a new CompactionHeld)
        self._changed()

    def held(self, timing: str, steps: tuple[CompactionStep, ...]) -> None:
        """The timing in force and the steps that wait for the cache (a forecast, a CompactionHeld)."""
        self.state.timing = timing
        self.state.held = steps
        self._changed()

    def turn_started(self) -> None:
        self.state.fired = {}
        self._changed()

    def undone(self) -> None:
        """The last compaction was undone: its "last:" figure no longer holds."""
        self.state.undone = self.state.last_step is not None
        self._changed()

    def reset(self) -> None:
        state = self.state
        self.state = GaugeState(
            limit=state.limit,
            target_ratio=state.target_ratio,
            offline=state.offline,
            window=state.window,
            watched=state.watched,
        )
        self._changed()

    def attach_mirror(self, mirror: ContextGauge) -> None:
        """Show everything this gauge shows on `mirror` too, from now on (the one-line gauge)."""
        self.mirror = mirror
        mirror.state = self.state
        mirror.paused, mirror.preview_line, mirror.preview_warning = (
            self.paused,
            self.preview_line,
            self.preview_warning,
        )
        mirror.clock = self.clock
        mirror.set_reactive(ContextGauge.level, self.state.level)  # its classes follow at its mount

    def _changed(self) -> None:
        self._version += 1
        if self.mirror is not None:
            self.mirror.state = self.state
            self.mirror._changed()
        self.level = self.state.level
        if self._pending is not None:
            return
        wait = THROTTLE_SECONDS - (time.monotonic() - self._painted)
        if wait <= 0:
            self._paint()
        else:
            self._pending = self.set_timer(wait, self._paint)

    def _paint(self) -> None:
        self._pending = None
        self._painted = time.monotonic()
        self.refresh()

    def flush(self) -> None:
        """Paint the current (exact) figures now."""
        if self._pending is not None:
            self._pending.stop()
        self._paint()
        if self.mirror is not None:
            self.mirror.flush()

    def watch_level(self, level: str) -> None:
        for name in ("ok", "warning", "over"):
            self.set_class(level == name, f"-{name}")

    # --- rendering -----------------------------------------------------------------------------

    def _fg(self, name: str) -> Style:
        """A component style's colour and weight, blended over the background, without the background."""
        full = self.get_component_rich_style(f"gauge--{name}", partial=False)
        return Style(color=full.color, bgcolor=None, bold=full.bold, italic=full.italic)

    def notify_style_update(self) -> None:
        self._style_cache = None
        self._version += 1
        super().notify_style_update()

    def _styles(self) -> dict[str, Style]:
        if self._style_cache is not None:
            return self._style_cache

        def fill(name: str) -> Style:
            return Style(bgcolor=self._fg(name).color)

        self._style_cache = {
            "muted": self._fg("muted"),
            "ok_text": self._fg("ok"),
            "warning_text": self._fg("warning"),
            "over_text": self._fg("over"),
            "ok": fill("ok"),
            "warning": fill("warning"),
            "over": fill("over"),
            "empty": fill("empty"),
            "tick": self._fg("tick"),
            "limit": self._fg("limit"),
        }
        return self._style_cache

    def refresh(self, *regions: Region, **kwargs: Any) -> Self:
        self._version += 1
        return super().refresh(*regions, **kwargs)

    def _drawn_from(self, width: int) -> tuple[object, ...]:
        """Everything a render reads besides the state (whose every change bumps `_version`)."""
        return (
            width,
            self._version,
            int(self.clock()),  # the cache's clock counts down in seconds
            self.paused,
            self.preview_line,
            self.preview_warning,
            self.dense,
            self.compact,
        )

    def render(self) -> Text:
        width = self._measuring or self.content_region.width or self.size.width
        key = self._drawn_from(width)
        if self._drawn is None or self._drawn[0] != key:
            text = self._line(width) if self.compact else Text("\n").join(self._lines(width))
            self._drawn = (key, text)
        return self._drawn[1].copy()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Textual renders the gauge to measure its height while it lays the screen out: `render`
        takes the width it is measured at from here, since reading the widget's region then made
        the compositor map the whole screen a second time in the middle of the layout (~10 ms of
        the first frame)."""
        self._measuring = width
        try:
            return super().get_content_height(container, viewport, width)
        finally:
            self._measuring = 0

    def _line(self, width: int) -> Text:
        """The compact gauge's one line."""
        state = self.state
        styles = self._styles()
        level_style = styles[f"{state.level}_text"]
        label = f" {state.mini_line}"
        bar_width = min(width - len(label) - 4, 40)
        if bar_width < 6:  # the figures first: the bar only where there is room
            return Text(label.strip(), style=level_style, no_wrap=True, overflow="ellipsis")
        line = Text.assemble(("ctx ", styles["muted"]), bar(state, bar_width, styles))
        line.append(label, level_style)
        if self.paused:
            line.append(" · ⏸ paused", styles["warning_text"])
        return line

    def _lines(self, width: int) -> list[Text]:
        """The full gauge's lines at `width` cells."""
        state = self.state
        styles = self._styles()
        muted = styles["muted"]
        level_style = styles[f"{state.level}_text"]
        lines: list[Text] = []
        head = Text(state.figure, style=level_style + Style(bold=True))
        if self.paused:
            head.append("  ⏸ paused", style=styles["warning_text"] + Style(bold=True))
        lines.append(head)
        lines.append(bar(state, width, styles))
        if not self.dense:
            lines.append(_scale(state, width, muted))
        tokens = Text(state.short_tokens_line if self.dense else state.tokens_line, style=muted)
        if state.tokens_stale:
            tokens.append(" · updating", style=muted + Style(italic=True))
        window = Text(state.window_line, style=muted)
        if state.count_stale:
            window.append(" · updating", style=muted + Style(italic=True))
        window.truncate(max(width, 10), overflow="ellipsis")  # one line whatever the label
        if self.dense:
            tokens.append(f" · {plural(state.messages, 'msg')}", style=muted)
            lines += [tokens, window, Text(state.cache_line, style=muted)]
            lines += self._cache_lines(muted)
            if not state.watched:
                lines.append(Text(state.short_last_line))
        else:
            lines.append(tokens)
            lines.append(window)
            lines.append(Text(state.cache_line, style=muted))
            lines += self._cache_lines(muted)
            if state.watched:
                lines.append(Text(plural(state.messages, "message")))
            else:
                lines.append(Text(f"{plural(state.messages, 'message')} · {state.last_line}"))
                lines.append(self._pipeline())
        if self.preview_line:
            style = styles["warning_text"] + Style(bold=True) if self.preview_warning else muted
            lines.append(Text(self.preview_line, style=style))
        return lines

    def _cache_lines(self, muted: Style) -> list[Text]:
        """The cache's clock and hit rate, and the timing with what waits (none offline or before a call)."""
        state = self.state
        lines = [Text(line, style=muted) for line in (cache_clock_line(state.sample, self.clock()),) if line]
        timing = timing_line(state.timing, state.held) if not state.offline and not state.watched else ""
        if timing:
            lines.append(Text(timing, style=self._styles()["warning_text"] if state.held else muted))
        return lines

    def _pipeline(self) -> Text:
        full = self.get_component_rich_style("gauge--step-on", partial=False)
        on = Style(color=full.color, bgcolor=full.bgcolor, bold=True)
        off = self._fg("step-off")
        seen = self.get_component_rich_style("gauge--step-seen", partial=False)
        seen = Style(color=seen.color, bold=seen.bold)
        text = Text("steps ", style=off)
        for index, (step, label) in enumerate(PIPELINE):
            total = self.state.totals.get(step, 0)
            if step == "reactive_compact" and not total:
                continue
            if index:
                text.append("›", style=off)
            times = f"×{total}" if total > 1 else ""
            if self.state.fired.get(step):
                text.append(f" {label}{times} ", style=on)
            elif total:
                text.append(f" {label}{times} ", style=seen)
            else:
                text.append(f" {label} ", style=off)
        return text


def _scale(state: GaugeState, width: int, style: Style) -> Text:
    """'0 ……… ╵80% ……… ╵limit' under the bar."""
    width = max(width, 10)
    scale = max(state.limit * 1.25, state.chars * 1.04, 1.0)
    per_cell = scale / width
    target_col = min(int(state.limit * state.target_ratio / per_cell), width - 1)
    limit_col = min(int(state.limit / per_cell), width - 1)
    cells = [" "] * width
    for col, label in ((target_col, f"╵{state.target_ratio:.0%}"), (limit_col, "╵limit")):
        for offset, char in enumerate(label):
            if col + offset < width:
                cells[col + offset] = char
    return Text("".join(cells), style=style)
