"""One tool call in the chat: name and input, then status, size, duration and an output preview.

Collapsed it is two lines; expanded (Enter, space or a click) it shows the input and the first part of
the output, both bounded (a 10 MB input or output never reaches a widget whole: the view says how much
is not shown, and the inspector holds the full text). Expansion is a boolean `var` with `toggle_class`:
CSS does the rest. Every byte shown came from the model or a tool: it goes through `core.text.visible`
(control characters become visible escapes) and enters widgets as `Content`, never markup.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import var
from textual.timer import Timer
from textual.widgets import Static

from core.history.messages import interrupted_output
from core.text import visible
from core.values.notes import NotesChanged
from tui.format import count, duration, one_line, plural, tool_input_summary
from tui.widgets.line import Line

PREVIEW_CHARS = 3_000
LIVE_CHARS = 200_000
"""Output kept while a tool runs (shown as its last lines; the result holds the whole)."""
PREVIEW_LINES = 40
INPUT_PREVIEW_CHARS = 6_000
SUMMARY_SOURCE_CHARS = 400
SEARCH_TOOL = "search_context"
SEARCH_HITS_SHOWN = 3
_HIT_LINE = re.compile(r"^\d+\. (?P<path>.+) line (?P<line>\d+) \(", re.MULTILINE)
"""A hit's line in search_context's answer (core/recall/hits.py, `SearchResult.text`)."""


class ToolBlock(Vertical, can_focus=True):
    """A collapsible tool call."""

    DEFAULT_CSS = """
    ToolBlock {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $secondary;
        background: $boost;
        & > .tool--header { color: $text; }
        & > .tool--summary { color: $text-muted; }
        & > .tool--body { display: none; height: auto; padding: 0 0 0 2; }
        & .tool--section { color: $text-muted; text-style: bold; margin: 1 0 0 0; }
        & .tool--input, & .tool--output { color: $text; }
        &.-expanded > .tool--body { display: block; }
        &.-error { border-left: outer $error; }
        &.-error > .tool--summary { color: $text-error; }
        &.-running { border-left: outer $warning; }
        &:focus { background: $boost 200%; border-left: outer $accent; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter,space",
            "toggle_expanded",
            "Expand/collapse",
            id="tool.toggle",
            tooltip="Show the tool's input and output",
        ),
    ]

    expanded: var[bool] = var(False, toggle_class="-expanded")

    def __init__(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> None:
        super().__init__(classes="-running")
        self.tool_use_id = tool_use_id
        self.tool_name = name
        self.tool_input = tool_input
        self.output: str | None = None
        self.is_error = False
        self.finished = False
        self.waiting = False
        self._started = time.monotonic()
        self._seconds: float | None = 0.0
        self._chars = 0
        self._timer: Timer | None = None
        self._live: list[str] = []  # the output printed so far, while it runs (bounded: LIVE_CHARS)
        self._live_chars = 0
        self._input_summary = visible(tool_input_summary(name, _head_values(tool_input), 100))
        self._header = Line(classes="tool--header")
        self._summary = Static(classes="tool--summary")
        self._output = Static(classes="tool--output")

    def compose(self) -> ComposeResult:
        yield self._header
        yield self._summary
        with Vertical(classes="tool--body"):
            yield Static(Content("input"), classes="tool--section")
            yield Static(Content(input_preview(self.tool_input)), classes="tool--input")
            yield Static(Content("output"), classes="tool--section")
            yield self._output

    def on_mount(self) -> None:
        self._render_header()
        if self.finished:
            return
        if self._live:
            self._show_live()
        else:
            self._summary.update(Content("└ running…"))
            self._output.update(Content("(running)"))
        self._timer = self.set_interval(0.25, self._render_header)

    # --- state ----------------------------------------------------------------------------------

    def finish(self, output: str, output_chars: int, seconds: float | None, is_error: bool) -> None:
        """The tool finished (or was denied): show status, size, duration (None: not known, e.g. a
        replayed session) and a bounded preview."""
        self.output = output
        self.is_error = is_error
        self.finished = True
        self._seconds = seconds
        self._chars = output_chars
        if self._timer is not None:
            self._timer.stop()
        self.remove_class("-running")
        self.set_class(is_error, "-error")
        self._render_header()
        lines = output.count("\n") + (0 if output.endswith("\n") or not output else 1)
        first = next((line for line in output[: SUMMARY_SOURCE_CHARS * 4].splitlines() if line.strip()), "")
        shape = plural(lines, "line")
        summary = one_line(first[:SUMMARY_SOURCE_CHARS], 160) or "(no output)"
        if self.tool_name == SEARCH_TOOL and not is_error:
            self._summary.update(Content(f"└ {search_summary(self.tool_input, output)}"))
        else:
            self._summary.update(Content(f"└ {shape} · {visible(summary)}"))
        self._output.update(Content(_preview(output)))

    def note_changed(self, event: NotesChanged) -> None:
        """The note call's effect (the NotesChanged after its result): which note, and the notes now."""
        self._summary.update(Content(f"└ {note_summary(event)}"))

    @property
    def live_output(self) -> str:
        """What the running tool has printed so far (its last LIVE_CHARS or so)."""
        return "".join(self._live)

    def add_output(self, text: str) -> None:
        """A piece of the output as the tool prints it: the summary shows its last line, the body the
        last PREVIEW_LINES lines."""
        if self.finished:
            return
        self._live.append(text)
        self._live_chars += len(text)
        while self._live_chars > LIVE_CHARS and len(self._live) > 1:
            self._live_chars -= len(self._live.pop(0))
        if self.is_mounted:
            self._show_live()

    def _show_live(self) -> None:
        tail = "".join(self._live)[-PREVIEW_CHARS:]
        lines = tail.splitlines()
        last = next((line for line in reversed(lines) if line.strip()), "")
        self._summary.update(Content(f"└ running… {visible(one_line(last, 160))}"))
        self._output.update(Content(visible("\n".join(lines[-PREVIEW_LINES:]))))

    def set_waiting(self, waiting: bool) -> None:
        """The permission modal is up for this call (or was just answered)."""
        self.waiting = waiting
        if self.is_mounted:
            self._render_header()

    def interrupt(self) -> None:
        """The turn was cancelled while this tool ran."""
        if self.finished:
            return
        text = interrupted_output("".join(self._live))
        self.finish(text, len(text), time.monotonic() - self._started, True)

    def _render_header(self) -> None:
        summary = self._input_summary
        parts: list[str | tuple[str, str]] = [
            ("▾ " if self.expanded else "▸ ", "dim"),
            (visible(self.tool_name), "bold"),
        ]
        if summary:
            parts.append("  ")
            parts.append(summary)
        if not self.finished and self.waiting:
            parts.append(("   ⋯ waiting for your permission", "$text-warning"))
        elif not self.finished:
            elapsed = time.monotonic() - self._started
            parts.append((f"   ⋯ running {duration(elapsed)}", "$text-warning"))
        else:
            took = f" · {duration(self._seconds)}" if self._seconds is not None else ""
            mark, style = ("✗", "$text-error") if self.is_error else ("✓", "$text-success")
            parts.append((f"   {mark} {count(self._chars)} chars{took}", style))
        self._header.set(Content.assemble(*parts))

    # --- interaction ----------------------------------------------------------------------------

    def watch_expanded(self) -> None:
        if self.is_mounted:
            self._render_header()

    def action_toggle_expanded(self) -> None:
        self.expanded = not self.expanded

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_toggle_expanded()


def search_summary(tool_input: dict[str, Any], output: str) -> str:
    """search_context's call in one line: `"query" → 3 hits: path:line, path:line, …` (escapes
    visible; the hits read from the answer the model got)."""
    query = tool_input.get("query")
    shown = (
        f'"{visible(one_line(str(query)[:SUMMARY_SOURCE_CHARS], 60))}"' if query is not None else "(no query)"
    )
    head = output[: SUMMARY_SOURCE_CHARS * 40]
    hits = [(match["path"], match["line"]) for match in _HIT_LINE.finditer(head)]
    if not hits:
        return f"{shown} → no hits"
    places = ", ".join(f"{visible(one_line(path, 60))}:{line}" for path, line in hits[:SEARCH_HITS_SHOWN])
    more = ", …" if len(hits) > SEARCH_HITS_SHOWN else ""
    return f"{shown} → {plural(len(hits), 'hit')}: {places}{more}"


def note_summary(event: NotesChanged) -> str:
    """A note call's effect in one line: `✎ added note 3: "…" · 3 notes, 120 / 4,000 chars`."""
    text = visible(one_line(event.text, 80))
    return (
        f'✎ {event.change} note {event.number}: "{text}" · {plural(len(event.notes), "note")}, '
        f"{count(event.chars)} / {count(event.limit)} chars"
    )


def _head_values(tool_input: dict[str, Any]) -> dict[str, Any]:
    """The input with long string values cut: the header shows one line, never the whole of 10 MB."""
    return {
        key: value[:SUMMARY_SOURCE_CHARS] if isinstance(value, str) else value
        for key, value in tool_input.items()
    }


def input_preview(tool_input: dict[str, Any]) -> str:
    """The input as indented JSON with each string value cut to INPUT_PREVIEW_CHARS, escapes visible;
    says how many characters are not shown."""
    hidden = 0
    cut: dict[str, Any] = {}
    for key, value in tool_input.items():
        if isinstance(value, str) and len(value) > INPUT_PREVIEW_CHARS:
            hidden += len(value) - INPUT_PREVIEW_CHARS
            value = value[:INPUT_PREVIEW_CHARS]
        cut[key] = value
    shown = visible(json.dumps(cut, ensure_ascii=False, indent=2, default=str))
    if hidden:
        shown += f"\n… {plural(hidden, 'more char')} of input not shown (the whole call is in the inspector)"
    return shown


def _preview(output: str) -> str:
    """The first PREVIEW_LINES lines / PREVIEW_CHARS chars of the output, escapes visible."""
    if not output:
        return "(no output)"
    head = output[: PREVIEW_CHARS + 1]
    lines = head.splitlines()
    shown = "\n".join(lines[:PREVIEW_LINES])
    if len(shown) > PREVIEW_CHARS:
        shown = shown[:PREVIEW_CHARS]
    rest = len(output) - len(shown)
    text = visible(shown)
    if rest > 0:
        text += f"\n… {plural(rest, 'more char')} not shown (the full result is in the inspector)"
    return text
