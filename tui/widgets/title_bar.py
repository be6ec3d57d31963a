"""TitleBar: app name, working directory, turn state and the model (offline clearly badged).

The workdir is a name from the file system: it is shown through `core.text.visible`, so a directory
named with an escape sequence cannot set the terminal's title.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from core.text import visible


class TitleBar(Horizontal):
    """One line across the top."""

    DEFAULT_CSS = """
    TitleBar {
        height: 1;
        dock: top;
        background: $panel;
        color: $foreground;
        & > #title-name { width: auto; padding: 0 1; text-style: bold; color: $text-primary; }
        & > #title-workdir { width: 1fr; color: $text-muted; text-overflow: ellipsis; text-wrap: nowrap; }
        & > #title-state { width: auto; padding: 0 1; color: $text-muted; }
        & > #title-state.-busy { color: $text-warning; }
        & > #title-model { width: auto; padding: 0 1; background: $primary 30%; color: $text; }
        & > #title-model.-offline { background: $warning; color: $background; text-style: bold; }
    }
    """

    def __init__(self, workdir: str, model_label: str, offline: bool) -> None:
        super().__init__()
        self.workdir = workdir
        self.model_label = model_label
        self.offline = offline

    def compose(self) -> ComposeResult:
        yield Static(Content("ctxtui"), id="title-name")
        yield Static(Content(visible(self.workdir)), id="title-workdir")
        yield Static(Content("idle"), id="title-state")
        badge = f"OFFLINE · {self.model_label}" if self.offline else f"model: {self.model_label}"
        yield Static(Content(visible(badge)), id="title-model", classes="-offline" if self.offline else "")

    def set_state(self, text: str, busy: bool) -> None:
        state = self.query_one("#title-state", Static)
        state.update(Content(visible(text)))
        state.set_class(busy, "-busy")
