"""ArchiveListScreen: every file in the archive, newest first; Enter dismisses with the one to open.

A file the archive's manifest does not vouch for (ctxtui did not write it, or it changed since) is
marked `⚠ not written by ctxtui` and cannot be restored from here (it can still be read).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from core.archive import ArchivedFile
from core.text import visible
from tui.format import plural, size_bytes
from tui.screens import DIALOG_CSS

UNVOUCHED = "not written by ctxtui (or changed since)"


class ArchiveListScreen(ModalScreen[ArchivedFile | None]):
    """Lists `agent.archive.list_files()`; dismisses with the file chosen, or None (esc)."""

    CSS_PATH = DIALOG_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="archive_list.close"),
        Binding("ctrl+e", "restore", "Restore to context", show=False, id="archive_list.restore"),
    ]

    def __init__(self, files: list[ArchivedFile], restore: Callable[[str], object] | None = None) -> None:
        super().__init__()
        self.files = files
        self.restore = restore
        """Put the highlighted archived tool result back in context (ctrl+e)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="archive-list-dialog", classes="dialog"):
            transcripts = sum(1 for item in self.files if item.kind == "transcript")
            results = len(self.files) - transcripts
            yield Static(
                Content.assemble(
                    ("Archive", "bold"),
                    (f"  {plural(results, 'tool result')} · {plural(transcripts, 'transcript')}", "dim"),
                ),
                classes="dialog--title",
            )
            if self.files:
                yield OptionList(
                    *(self._option(index, item) for index, item in enumerate(self.files)), id="archive-files"
                )
            else:
                yield Static(
                    Content("Nothing archived yet: compaction writes here before it removes anything."),
                    classes="dialog--text",
                )
            hint = (
                "enter open · ctrl+e restore a tool result to context · esc close"
                if self.restore
                else "enter open · esc close"
            )
            yield Static(Content(hint), classes="dialog--hint")

    @staticmethod
    def _option(index: int, item: ArchivedFile) -> Option:
        try:
            stamp = time.strftime("%H:%M:%S", time.localtime(item.absolute.stat().st_mtime))
        except OSError:
            stamp = "--:--:--"
        icon = "Σ" if item.kind == "transcript" else "↩"
        foreign = item.own is False
        prompt = Content.assemble(
            ("⚠ " if foreign else f"{icon} ", "bold $text-warning" if foreign else "bold"),
            (f"{stamp}  ", "dim"),
            (f"{size_bytes(item.size):>9}  ", "dim"),
            visible(item.path),
            (f"  {UNVOUCHED}" if foreign else "", "$text-warning"),
        )
        return Option(prompt, id=str(index))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.files[int(event.option.id or 0)])

    def action_restore(self) -> None:
        """Restore the highlighted tool result (transcripts are opened, not restored)."""
        options = self.query(OptionList)
        if self.restore is None or not options or options.first().highlighted is None:
            return
        item = self.files[options.first().highlighted or 0]
        if item.kind == "transcript":
            self.notify("A transcript is not a tool result: open it to read it (enter).", severity="warning")
            return
        if item.own is False:
            self.notify(
                f"{visible(item.path)} is {UNVOUCHED}: it is not restored (open it to read it).",
                severity="warning",
                markup=False,
            )
            return
        restore = self.restore
        self.dismiss(None)
        restore(item.path)

    def action_close(self) -> None:
        self.dismiss(None)
