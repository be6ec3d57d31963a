"""`ctxtui inspect FILE`: the inspector on a history read from a file, read-only.

The gauge, the message tree and the report (totals, breakdown, dry run) of core/sessions/inspection.py; no
agent, no model, no prompt. Markers open what they point at when the archive under the file's
workdir vouches for the path (a Claude Code session has no ctxtui archive, so its markers, if any,
stay plain text); any other node shows its in-context text.

With `compare` (`ctxtui inspect FILE --compare` in a terminal) the compare view (tui/widgets/compare_view.py)
is shown first: the session replayed under every engine, computed in a worker thread; `c` switches
between it and the inspector.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import ContentSwitcher, Footer, Static

from core.archive import Archive, ArchiveError
from core.config import Settings
from core.events import ContextMeasured
from core.sessions.inspection import Inspected, report_text
from core.text import visible
from tui.format import plural, transcript_text
from tui.screens.archive import ArchiveScreen
from tui.widgets.compare_view import CompareView
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree, NodeInfo


class InspectApp(App[int]):
    """A read-only inspector for one history file."""

    CSS_PATH = "app.tcss"
    TITLE = "ctxtui inspect"
    CSS = """
    #report-pane { width: 1fr; padding: 0 1; }
    #file-title { height: 1; background: $panel; color: $text; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="inspect.quit"),
        Binding("ctrl+t", "focus_tree", "Tree", id="inspect.tree"),
        Binding("c", "toggle_compare", "Compare/inspect", id="inspect.compare"),
    ]

    def __init__(
        self,
        inspected: Inspected,
        report: dict[str, Any],
        workdir: Path | None = None,
        compare: Settings | None = None,
    ) -> None:
        """`compare`: the settings to replay the file under every engine with (the compare view opens)."""
        super().__init__()
        self.inspected = inspected
        self.report = report
        self.archive = Archive(workdir or inspected.workdir or inspected.path.parent)
        self.compare_settings = compare

    def compose(self) -> ComposeResult:
        data = self.report
        title = f"{data['file']} · {data['kind']} · read-only"
        yield Static(Text(visible(title)), id="file-title")
        with ContentSwitcher(initial="compare" if self.compare_settings is not None else "main", id="views"):
            with Horizontal(id="main"):
                with VerticalScroll(id="report-pane"):
                    yield Static(Text(visible(report_text(data))), id="report")
                with Vertical(id="inspector"):
                    yield ContextGauge(id="gauge")
                    yield MessageTree(
                        self.archive, self.inspected.messages, chars=self.report["message_chars"], id="tree"
                    )
            if self.compare_settings is not None:
                yield CompareView(id="compare")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        data = self.report
        gauge = self.query_one(ContextGauge)
        gauge.configure(data["limit"], data["settings"]["micro_target_ratio"])
        gauge.measured(
            ContextMeasured(
                chars=data["message_chars"],
                limit=data["limit"],
                messages=data["messages"],
                tokens=data["tokens"],
            )
        )
        gauge.flush()
        if self.compare_settings is not None:
            self.query_one("#compare-timelines").focus()
            self.query_one(CompareView).compare(
                self.inspected.path, self.compare_settings, self.inspected.conversation
            )
        else:
            self.query_one(MessageTree).focus()

    def action_focus_tree(self) -> None:
        self.query_one(ContentSwitcher).current = "main"
        self.query_one(MessageTree).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.compare_settings is not None if action == "toggle_compare" else True

    def action_toggle_compare(self) -> None:
        """Between the compare view and the inspector."""
        switcher = self.query_one(ContentSwitcher)
        switcher.current = "main" if switcher.current == "compare" else "compare"
        (
            self.query_one(MessageTree)
            if switcher.current == "main"
            else self.query_one("#compare-timelines")
        ).focus()

    @on(MessageTree.OpenMarker)
    async def _open_marker(self, event: MessageTree.OpenMarker) -> None:
        marker = event.info.marker
        archived = self.archive.resolve(marker.path) if marker is not None else None
        if archived is None:
            self.notify(
                "not an archive path (shown as plain text, not opened)", severity="warning", markup=False
            )
            return
        try:
            if archived.kind == "transcript":
                messages = await self.archive.read_transcript(archived.path)
                text = f"{plural(len(messages), 'message')} in this transcript.\n" + await asyncio.to_thread(
                    transcript_text, messages
                )
            else:
                text = await self.archive.read_text(archived.path)
        except ArchiveError as error:
            self.notify(str(error), severity="error", markup=False)
            return
        await self.push_screen(
            ArchiveScreen(f"archived · {event.info.kind}", text, path=archived.path, size=archived.size)
        )

    @on(MessageTree.OpenBlock)
    async def _open_block(self, event: MessageTree.OpenBlock) -> None:
        info: NodeInfo = event.info
        where = f"#{info.index + 1}" + (f" block {info.block + 1}" if info.block is not None else "")
        await self.push_screen(ArchiveScreen(f"{where} · {info.kind} · in the file", info.text))

    @on(MessageTree.Untrusted)
    def _untrusted(self, event: MessageTree.Untrusted) -> None:
        self.notify("not an archive path (shown as plain text, not opened)", severity="warning", markup=False)
