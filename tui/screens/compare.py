"""CompareScreen: `/compare` in the app: the running session's log replayed under every engine.

The compare view of `ctxtui inspect FILE --compare` (tui/widgets/compare_view.py) on a screen of its
own; esc closes it. The log is read as it is on disk when the screen opens.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from core.config import Settings
from core.text import visible
from tui.widgets.compare_view import CompareView


class CompareScreen(Screen[None]):
    """The engines compared on one session file."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Close", id="compare.close")]
    DEFAULT_CSS = """
    CompareScreen #compare-title { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, path: Path, settings: Settings) -> None:
        super().__init__()
        self.path = path
        self.settings = settings

    def compose(self) -> ComposeResult:
        yield Static(
            Content.assemble(("compare engines · ", "bold"), visible(str(self.path))), id="compare-title"
        )
        yield CompareView(id="compare")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#compare-timelines").focus()
        self.query_one(CompareView).compare(self.path, self.settings)
