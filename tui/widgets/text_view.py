"""TextView: a read-only view of a LineSource that renders only the lines on screen (Textual's Line API).

The cost of a frame follows what is visible, not the size of the text: each `render_line` reads
one line from the source (a string in memory, or a file read at the line's offset). Text is shown
as data: control and hiding characters become visible escapes, tabs become spaces.

Text can be selected with the mouse (Textual's selection: each rendered cell of text carries its
line and column) and copied as it is shown (`get_selection`), escapes and all, so no control byte of
an archived file ever reaches the clipboard.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from core.text import visible
from tui.line_source import Found, LineSource

TAB = 4
SELECTION_LINES = 200_000
"""At most this many lines of a selection are copied (a file of any size can be selected whole)."""


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

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text as shown (escapes visible, tabs as spaces), at most SELECTION_LINES lines."""
        last = self.source.line_count - 1
        if last < 0:
            return None
        start = selection.start if selection.start is not None else None
        end = selection.end if selection.end is not None else None
        first_line, first_column = (start.y, start.x) if start is not None else (0, 0)
        end_line, end_column = (end.y, end.x) if end is not None else (last, None)
        end_line = min(end_line, last, first_line + SELECTION_LINES - 1)
        lines = []
        for number in range(first_line, end_line + 1):
            text = self._display(number)
            from_column = first_column if number == first_line else 0
            to_column = end_column if number == end_line and end_column is not None else len(text)
            lines.append(text[from_column:to_column])
        return "\n".join(lines), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def update_size(self) -> None:
        """The source knows more lines (or its widest line grew): resize the scrollable area."""
        self._shown.clear()
        self.virtual_size = Size(
            self._gutter_width() + min(self.source.widest, 20_000), self.source.line_count
        )
        self.refresh()

    def show(self, found: Found | None) -> None:
        """Highlight `found` and scroll so its line is in the middle (and its column in view)."""
        self.highlight = found
        if found is not None:
            column = len(self._display_prefix(found.line, found.column))
            width = max(self.size.width - self._gutter_width(), 1)
            x = (
                self.scroll_x
                if self.scroll_x <= column < self.scroll_x + width - 1
                else max(column - width // 3, 0)
            )
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
        styles = [base] * len(text)
        found = self.highlight
        if found is not None and found.line == number:
            start = len(self._display_prefix(number, found.column))
            end = len(self._display_prefix(number, found.end_column))
            match_style = base + self.get_component_rich_style("text-view--match", partial=True)
            styles[start:end] = [match_style] * len(styles[start:end])
        selection = self.text_selection
        span = selection.get_span(number) if selection is not None else None
        if span is not None:
            start, end = span
            end = len(text) if end == -1 else end
            selected = self.screen.get_component_rich_style("screen--selection")
            styles[start:end] = [style + selected for style in styles[start:end]]
        segments += _runs(text, styles, scroll_x, scroll_x + room, number)
        return Strip(segments).adjust_cell_length(width, base)


def _runs(text: str, styles: list[Style], left: int, right: int, line: int) -> list[Segment]:
    """The visible columns [left, right) of `text` as segments, one per run of a style, each carrying
    its line and first column (the `offset` meta Textual's selection reads)."""
    segments: list[Segment] = []
    column = left
    end = min(right, len(text))
    while column < end:
        style = styles[column]
        run_end = column + 1
        while run_end < end and styles[run_end] == style:
            run_end += 1
        segments.append(Segment(text[column:run_end], style + Style.from_meta({"offset": (column, line)})))
        column = run_end
    return segments
