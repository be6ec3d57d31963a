"""ArchiveScreen: a read-only, searchable view of archived text (or of a transcript, or of a block).

The text sits in a TextView that renders only the lines on screen, over a line index: a string in
memory, or a file of any size read at the offsets of the visible lines (`ArchiveScreen.for_file`;
the index of a large file is built in a worker, a chunk at a time, while the first lines already
show). The search box finds every match (case-insensitive, literal); a large text is searched in a
worker that shows its progress and is cancelled by the next keystroke. Enter jumps to the next
match, highlights it and centres its line. Text selected with the mouse is copied with ctrl+c (with
nothing selected, the whole text when it is not too large), as shown: escapes visible.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from core.text import visible
from tui.format import count, plural
from tui.line_source import FileLines, Found, LineSource, TextLines, search
from tui.screens import DIALOG_CSS
from tui.widgets.text_view import TAB, TextView

MAX_MATCHES = 100_000
SMALL_FILE = 2 * 1024 * 1024  # files up to this size are read whole and searched at once
SYNC_SEARCH_CHARS = 2_000_000  # texts up to this size are searched without a worker
COPY_ALL_CHARS = 1_000_000  # with nothing selected, ctrl+c copies the whole text up to this size
TYPING_PAUSE = 0.15  # seconds without a keystroke before a worker search starts


class ArchiveScreen(ModalScreen[None]):
    """Full text with a title line (what, path, size) and a search box."""

    CSS_PATH = DIALOG_CSS

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
        Binding("ctrl+e", "restore", "Restore to context", show=False, priority=True, id="archive.restore"),
        Binding("ctrl+c", "copy_text", "Copy", id="archive.copy"),
    ]

    def __init__(
        self,
        title: str,
        text: str,
        *,
        path: str | None = None,
        size: int | None = None,
        source: LineSource | None = None,
        restore: Callable[[str], object] | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__()
        self.restore = restore
        """Put the archived result at `path` back in context (only for archived tool results)."""
        self.line = line
        """The line (1-based) to show and highlight when the viewer opens (a search hit's), or None."""
        self.title_text = title
        self.source: LineSource = source if source is not None else TextLines(text)
        self.path = path
        self.file_size = size
        self.matches: list[tuple[int, int]] = []
        self.found: list[Found] = []
        self.current = -1
        self.searching = False
        self._query = ""
        self._pending_jump = 0
        self._search_timer: Timer | None = None

    @classmethod
    async def for_file(
        cls,
        title: str,
        absolute: Path,
        *,
        path: str | None = None,
        size: int | None = None,
        line: int | None = None,
    ) -> ArchiveScreen:
        """View a file without reading it whole (a small one is simply read, off the event loop).

        Raises OSError when the file cannot be read.
        """
        on_disk = (await asyncio.to_thread(absolute.stat)).st_size
        if on_disk <= SMALL_FILE:
            data = await asyncio.to_thread(absolute.read_bytes)
            return cls(title, data.decode("utf-8", errors="replace"), path=path, size=size, line=line)
        return cls(title, "", path=path, size=size, source=FileLines(absolute, on_disk), line=line)

    @property
    def text(self) -> str:
        """The whole text (a large file is read whole: for tests and small files)."""
        return self.source.full_text()

    @property
    def indexing(self) -> bool:
        return not self.source.done

    def compose(self) -> ComposeResult:
        with Vertical(id="archive-dialog", classes="dialog"):
            yield Static(self._title(), id="archive-title", classes="dialog--title")
            with Horizontal(id="archive-search-row"):
                yield Input(placeholder="search (case-insensitive)…", id="archive-search")
                yield Static(Content(""), id="archive-count")
            yield TextView(self.source, id="archive-text")
            yield Static(
                Content(
                    "esc close · type to search · enter/F3 next · shift+F3 previous · ↑↓ PgUp PgDn scroll · "
                    "drag to select, ctrl+c copy · tab to the text"
                ),
                classes="dialog--hint",
            )

    def _title(self) -> Content:
        parts: list[str | tuple[str, str]] = [(self.title_text, "bold")]
        if self.path:
            parts.append(("  " + self.path, "$text-accent"))
        source = self.source
        if source.chars is None:
            progress = source.progress if isinstance(source, FileLines) else 0.0
            parts.append((f"  · indexing {progress:.0%} · {plural(source.line_count, 'line')} so far", "dim"))
        else:
            parts.append((f"  · {plural(source.chars, 'char')} · {plural(source.line_count, 'line')}", "dim"))
        if self.file_size is not None:
            parts.append((f" · {count(self.file_size)} bytes on disk", "dim"))
        return Content.assemble(*parts)

    def on_mount(self) -> None:
        self.query_one("#archive-search", Input).focus()
        self.text_area.update_size()
        if self.line is not None:
            self.call_after_refresh(self._go_to_line)
        if isinstance(self.source, FileLines) and not self.source.done:
            self.run_worker(
                self._index,
                thread=True,
                exclusive=True,
                group="archive-index",
                exit_on_error=False,
                description="index the archived file",
            )

    def on_unmount(self) -> None:
        if isinstance(self.source, FileLines):
            self.source.close()

    def _index(self) -> None:
        """Worker thread: index the file a chunk at a time; the view grows after each chunk."""
        source = self.source
        assert isinstance(source, FileLines)
        worker = get_current_worker()
        with source.path.open("rb") as handle:
            while not worker.is_cancelled and not source.index_chunk(handle):
                self._from_thread(self._indexed)
        self._from_thread(self._indexed)

    def _from_thread(self, callback: Callable[..., object], *args: object) -> None:
        try:
            self.app.call_from_thread(callback, *args)
        except RuntimeError:  # the app is closing
            pass

    def _indexed(self) -> None:
        if not self.is_mounted:
            return
        self.text_area.update_size()
        self.query_one("#archive-title", Static).update(self._title())
        if self.line is not None:
            self._go_to_line()

    def _go_to_line(self) -> None:
        """Show and highlight `line` once the text has it (a large file's index may still be growing)."""
        if self.line is None or not self.is_mounted:
            return
        number = max(self.line - 1, 0)
        if number >= self.source.line_count:
            if self.source.done:  # the file is shorter: show its end
                number = max(self.source.line_count - 1, 0)
            else:
                return
        self.line = None
        text = self.source.line(number) if self.source.line_count else ""
        self.text_area.show(Found(0, len(text), number, 0, len(text)))

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
    def text_area(self) -> TextView:
        return self.query_one("#archive-text", TextView)

    def find(self, query: str, now: bool = True) -> None:
        """Find every match of `query` (case-insensitive, literal): at once for a small text, else in a worker.

        `now=False` (typing) waits a moment for the next keystroke before a worker search starts.
        """
        if self._search_timer is not None:
            self._search_timer.stop()
            self._search_timer = None
        self._query = query
        self.current = -1
        self._pending_jump = 0
        self._set_found([])
        self.text_area.show(None)
        small = isinstance(self.source, TextLines) and len(self.source.text) <= SYNC_SEARCH_CHARS
        if not query or small:
            self.searching = False
            self.workers.cancel_group(self, "archive-search")
            self._set_found(search(self.source, query, MAX_MATCHES) or [] if query else [])
            self._show_count()
            return
        self.searching = True
        self._show_count(0)
        self.workers.cancel_group(self, "archive-search")
        if now:
            self._start_search(query)
        else:
            self._search_timer = self.set_timer(TYPING_PAUSE, lambda: self._start_search(query))

    def _start_search(self, query: str) -> None:
        self._search_timer = None
        if query != self._query:
            return
        self.run_worker(
            lambda: self._search(query),
            thread=True,
            exclusive=True,
            group="archive-search",
            exit_on_error=False,
            description="search the archived text",
        )

    def _search(self, query: str) -> None:
        """Worker thread: scan the text chunk by chunk; stops when a newer search replaces it."""
        worker = get_current_worker()
        source = self.source
        while not source.done and not worker.is_cancelled:  # the index is still being built
            time.sleep(0.01)
        total = source.chars or 1

        def progress(scanned: int, matches: int) -> None:
            self._from_thread(self._search_progress, query, scanned / total, matches)

        found = search(source, query, MAX_MATCHES, lambda: worker.is_cancelled, progress)
        if found is not None and not worker.is_cancelled:
            self._from_thread(self._search_done, query, found)

    def _search_progress(self, query: str, fraction: float, matches: int) -> None:
        if query != self._query or not self.searching or not self.is_mounted:
            return
        self._show_count(fraction, matches)

    def _search_done(self, query: str, found: list[Found]) -> None:
        if query != self._query or not self.is_mounted:
            return
        self.searching = False
        self._set_found(found)
        self._show_count()
        self._jump_if_pending()

    def _jump_if_pending(self) -> None:
        if self._pending_jump and self.found:
            step, self._pending_jump = self._pending_jump, 0
            self.jump(step)

    def _set_found(self, found: list[Found]) -> None:
        self.found = found
        self.matches = [(item.start, item.end) for item in found]

    def _show_count(self, searching: float | None = None, so_far: int = 0) -> None:
        label = self.query_one("#archive-count", Static)
        if not self._query:
            label.update(Content(""))
        elif searching is not None:
            label.update(Content(f"searching… {searching:.0%} · {count(so_far)} so far"))
        elif not self.matches:
            label.update(Content.styled("no matches", "$text-error"))
        else:
            position = self.current + 1 if self.current >= 0 else 0
            more = "+" if len(self.matches) >= MAX_MATCHES else ""
            label.update(
                Content(
                    f"{position}/{count(len(self.matches))}{more} {'match' if len(self.matches) == 1 else 'matches'}"
                )
            )

    def jump(self, step: int) -> None:
        """Go to the next (`step` 1) or previous (-1) match; while a search runs, once it finds one."""
        if not self.found:
            if self.searching:
                self._pending_jump = step
            return
        self.current = (self.current + step) % len(self.found)
        self.text_area.show(self.found[self.current])
        if not self.searching:
            self._show_count()

    @on(Input.Changed, "#archive-search")
    def _changed(self, event: Input.Changed) -> None:
        self.find(event.value, now=False)

    @on(Input.Submitted, "#archive-search")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value != self._query or self._search_timer is not None:
            self.find(event.value)  # start now: no need to wait for another keystroke
        self.jump(1)

    def action_search(self) -> None:
        self.query_one("#archive-search", Input).focus()

    def action_next_match(self) -> None:
        self.jump(1)

    def action_previous_match(self) -> None:
        self.jump(-1)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restore":
            return self.restore is not None and self.path is not None
        return True

    def action_restore(self) -> None:
        """Close the viewer and ask for this archived result to be back in context."""
        if self.restore is None or self.path is None:
            return
        restore, path = self.restore, self.path
        self.dismiss(None)
        restore(path)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_copy_text(self) -> None:
        """Copy the selection (the search box's, else the text's), or the whole text when nothing is
        selected and it is small enough, to the clipboard (the terminal's, where it takes OSC 52)."""
        selected = self.get_selected_text()
        if not selected:
            chars = self.source.chars
            if chars is None or chars > COPY_ALL_CHARS:
                self.notify(
                    "Select the part to copy with the mouse: the whole text is too large for the clipboard.",
                    severity="warning",
                    markup=False,
                )
                return
            selected = visible(self.source.full_text()).expandtabs(TAB)
        self.app.copy_to_clipboard(selected)
        self.notify(f"copied {plural(len(selected), 'char')} to the clipboard", markup=False)
