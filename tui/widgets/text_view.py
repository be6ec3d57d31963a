"""TextView: a read-only view of a LineSource that renders only the lines on screen (Textual's Line API).

The cost of a frame follows what is visible, not the size of the text: each `render_line` reads
one line from the source (a string in memory, or a file read at the line's offset). Text is shown
as data: control and hiding characters become visible escapes, tabs become spaces.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from core.text import visible
from tui.line_source import Found, LineSource

TAB = 4


class TextView(ScrollView, can_focus=True):
    """Line numbers and the lines of `source`; one match can be highlighted (and is scrolled to)."""

    DEFAULT_CSS = """
    TextView {
        height: 1fr;
        background: $surface;
        scrollbar-size-vertical: 1;
        scrollbar-size-horizontal: 1;
    }
    TextView > .text-view--gutter { color: $text-muted; }
    TextView > .text-view--match { background: $accent; color: $text; text-style: bold; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"text-view--gutter", "text-view--match"}

    def __init__(self, source: LineSource, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = source
        self.highlight: Found | None = None
        self._shown: dict[int, str] = {}

    @property
    def text(self) -> str:
        """The whole text (a file is read whole: for small files and tests)."""
        return self.source.full_text()

    @property
    def selected_text(self) -> str:
        """The text of the highlighted match ("" when none)."""
        found = self.highlight
        if found is None:
            return ""
        return self.source.line(found.line)[found.column : found.end_column]

    def _gutter_width(self) -> int:
        return len(f"{max(self.source.line_count, 1):,}") + 3

    def update_size(self) -> None:
        """The source knows more lines (or its widest line grew): resize the scrollable area."""
        self._shown.clear()
        self.virtual_size = Size(self._gutter_width() + min(self.source.widest, 20_000), self.source.line_count)
        self.refresh()

    def show(self, found: Found | None) -> None:
        """Highlight `found` and scroll so its line is in the middle (and its column in view)."""
        self.highlight = found
        if found is not None:
            column = len(self._display_prefix(found.line, found.column))
            width = max(self.size.width - self._gutter_width(), 1)
            x = self.scroll_x if self.scroll_x <= column < self.scroll_x + width - 1 else max(column - width // 3, 0)
            self.scroll_to(x=x, y=max(found.line - self.size.height // 2, 0), animate=False, force=True)
        self.refresh()

    def _display(self, number: int) -> str:
        shown = self._shown.get(number)
        if shown is None:
            shown = visible(self.source.line(number)).expandtabs(TAB)
            if len(self._shown) > 1_024:
                self._shown.clear()
            self._shown[number] = shown
        return shown

    def _display_prefix(self, number: int, column: int) -> str:
        return visible(self.source.line(number)[:column]).expandtabs(TAB)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if number >= self.source.line_count:
            return Strip.blank(width, base)
        gutter_width = self._gutter_width()
        gutter_style = base + self.get_component_rich_style("text-view--gutter", partial=True)
        gutter = Segment(f"{number + 1:>{gutter_width - 3},} │ ", gutter_style)
        text = self._display(number)
        room = max(width - gutter_width, 0)
        segments = [gutter]
        found = self.highlight
        if found is not None and found.line == number:
            start = len(self._display_prefix(number, found.column))
            end = len(self._display_prefix(number, found.end_column))
            match_style = base + self.get_component_rich_style("text-view--match", partial=True)
            pieces: list[tuple[str, Style]] = [(text[:start], base), (text[start:end], match_style), (text[end:], base)]
        else:
            pieces = [(text, base)]
        position = 0
        for piece, style in pieces:
            left = max(scroll_x - position, 0)
            right = min(len(piece), scroll_x + room - position)
            if right > left:
                segments.append(Segment(piece[left:right], style))
            position += len(piece)
        return Strip(segments).adjust_cell_length(width, base)
