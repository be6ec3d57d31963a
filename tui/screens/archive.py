"""ArchiveScreen: a read-only, searchable view of archived text (or of a transcript, or of a block).

The text sits in a read-only TextArea (virtualised, fine with 150,000+ characters). The search box
finds every match (case-insensitive); Enter jumps to the next one, selects it and centres it.
"""

from __future__ import annotations

import re
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static, TextArea
from textual.widgets.text_area import Selection

from tui.format import count

MAX_MATCHES = 100_000


class ArchiveScreen(ModalScreen[None]):
    """Full text with a title line (what, path, size) and a search box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="archive.close"),
        Binding("ctrl+f,slash", "search", "Search", id="archive.search"),
        Binding("f3", "next_match", "Next match", id="archive.next"),
        Binding("shift+f3,shift+enter", "previous_match", "Previous match", id="archive.previous"),
        Binding("pageup", "scroll_text('page_up')", "Page up", show=False, id="archive.page_up"),
        Binding("pagedown", "scroll_text('page_down')", "Page down", show=False, id="archive.page_down"),
        Binding("up", "scroll_text('up')", "Scroll up", show=False, id="archive.up"),
        Binding("down", "scroll_text('down')", "Scroll down", show=False, id="archive.down"),
        Binding("ctrl+home", "scroll_text('home')", "Top", show=False, id="archive.top"),
        Binding("ctrl+end", "scroll_text('end')", "Bottom", show=False, id="archive.bottom"),
    ]

    def __init__(self, title: str, text: str, *, path: str | None = None, size: int | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.path = path
        self.file_size = size
        self.matches: list[tuple[int, int]] = []
        self.current = -1
        self._query = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="archive-dialog", classes="dialog"):
            yield Static(self._title(), id="archive-title", classes="dialog--title")
            with Horizontal(id="archive-search-row"):
                yield Input(placeholder="search (case-insensitive)…", id="archive-search")
                yield Static(Content(""), id="archive-count")
            yield TextArea(
                self.text, read_only=True, soft_wrap=True, show_line_numbers=True, id="archive-text",
                highlight_cursor_line=False,
            )
            yield Static(
                Content("esc close · type to search · enter/F3 next · shift+F3 previous · ↑↓ PgUp PgDn scroll · tab to the text"),
                classes="dialog--hint",
            )

    def _title(self) -> Content:
        parts: list[str | tuple[str, str]] = [(self.title_text, "bold")]
        if self.path:
            parts.append(("  " + self.path, "$text-accent"))
        lines = self.text.count("\n") + (0 if not self.text or self.text.endswith("\n") else 1)
        parts.append((f"  · {count(len(self.text))} chars · {count(lines)} lines", "dim"))
        if self.file_size is not None:
            parts.append((f" · {count(self.file_size)} bytes on disk", "dim"))
        return Content.assemble(*parts)

    def on_mount(self) -> None:
        self.query_one("#archive-search", Input).focus()

    def action_scroll_text(self, how: str) -> None:
        """Scroll the text while the search box has focus (the text area handles its own keys)."""
        area = self.text_area
        moves = {
            "page_up": area.scroll_page_up,
            "page_down": area.scroll_page_down,
            "up": area.scroll_up,
            "down": area.scroll_down,
            "home": area.scroll_home,
            "end": area.scroll_end,
        }
        moves[how](animate=False)

    # --- search ---------------------------------------------------------------------------------

    @property
    def text_area(self) -> TextArea:
        return self.query_one("#archive-text", TextArea)

    def find(self, query: str) -> None:
        """Find every match of `query` (case-insensitive, literal)."""
        self._query = query
        self.current = -1
        self.matches = []
        if query:
            pattern = re.compile(re.escape(query), re.IGNORECASE)
            for number, match in enumerate(pattern.finditer(self.text)):
                if number >= MAX_MATCHES:
                    break
                self.matches.append((match.start(), match.end()))
        self._show_count()

    def _show_count(self) -> None:
        label = self.query_one("#archive-count", Static)
        if not self._query:
            label.update(Content(""))
        elif not self.matches:
            label.update(Content.styled("no matches", "$text-error"))
        else:
            position = self.current + 1 if self.current >= 0 else 0
            more = "+" if len(self.matches) >= MAX_MATCHES else ""
            label.update(Content(f"{position}/{count(len(self.matches))}{more} matches"))

    def jump(self, step: int) -> None:
        if not self.matches:
            return
        self.current = (self.current + step) % len(self.matches)
        start, end = self.matches[self.current]
        area = self.text_area
        document = area.document
        area.selection = Selection(
            document.get_location_from_index(start),  # type: ignore[attr-defined]
            document.get_location_from_index(end),  # type: ignore[attr-defined]
        )
        area.scroll_cursor_visible(center=True)
        self._show_count()

    @on(Input.Changed, "#archive-search")
    def _changed(self, event: Input.Changed) -> None:
        self.find(event.value)

    @on(Input.Submitted, "#archive-search")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value != self._query:
            self.find(event.value)
        self.jump(1)

    def action_search(self) -> None:
        self.query_one("#archive-search", Input).focus()

    def action_next_match(self) -> None:
        self.jump(1)

    def action_previous_match(self) -> None:
        self.jump(-1)

    def action_close(self) -> None:
        self.dismiss(None)
