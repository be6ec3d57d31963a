"""CompactPromptScreen: compact the context now, with an optional focus for the summary."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from tui.screens import DIALOG_CSS


class CompactPromptScreen(ModalScreen[str | None]):
    """Dismisses with the focus text ("" for none) or None when cancelled."""

    CSS_PATH = DIALOG_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="compact_prompt.cancel")
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="compact-dialog", classes="dialog"):
            yield Static(
                Content.assemble(("Σ ", "bold"), ("Compact the context now", "bold")), classes="dialog--title"
            )
            yield Static(
                Content(
                    "The whole history goes to a transcript file and is replaced by a summary. "
                    "Optionally say what the summary should focus on."
                ),
                classes="dialog--text",
            )
            yield Input(
                placeholder="focus (optional), e.g. the failing test in parser.py", id="compact-focus"
            )
            yield Static(Content("enter compact · esc cancel"), classes="dialog--hint")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
