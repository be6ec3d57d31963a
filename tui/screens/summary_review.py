"""SummaryReviewScreen: read (and edit) the summary before it replaces the history.

A manual compact can draft its summary first. The screen shows what the summary would replace and
the draft in an editable area; ctrl+s accepts the text as it stands (edited or not), esc cancels and
nothing changes. Dismisses with the accepted text, or None.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from core.text import visible
from tui.format import count, plural


class SummaryReviewScreen(ModalScreen[str | None]):
    """The draft summary of a manual compact, for review: accept, edit, or cancel."""

    DEFAULT_CSS = """
    #summary-dialog { height: 90%; }
    #summary-text { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "accept", "Accept", id="summary_review.accept", priority=True),
        Binding("escape", "cancel", "Cancel", id="summary_review.cancel"),
    ]

    def __init__(self, draft: str, *, messages: int, chars: int, focus: str | None = None) -> None:
        super().__init__()
        self.draft = draft
        self.messages = messages
        self.chars = chars
        self.focus_text = focus

    def compose(self) -> ComposeResult:
        with Vertical(id="summary-dialog", classes="dialog"):
            yield Static(Content.assemble(("Σ ", "bold"), ("Review the summary", "bold")), classes="dialog--title")
            what = (
                f"It replaces {plural(self.messages, 'message')} ({count(self.chars)} chars); the whole history "
                "goes to a transcript first. Edit it if you like: the text below is exactly what goes in."
            )
            if self.focus_text:
                what += f" Focus: {visible(self.focus_text)}"
            yield Static(Content(what), classes="dialog--text")
            yield TextArea(visible(self.draft), soft_wrap=True, show_line_numbers=False, id="summary-text")
            with Horizontal(classes="dialog--buttons"):
                yield Button(Content("Accept  ctrl+s"), id="accept", variant="primary", compact=True)
                yield Button(Content("Cancel  esc"), id="cancel", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#summary-text", TextArea).focus()

    @property
    def text(self) -> str:
        return self.query_one("#summary-text", TextArea).text

    @on(Button.Pressed, "#accept")
    def _accept_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_accept()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()

    def action_accept(self) -> None:
        text = self.text
        if text.strip():
            self.dismiss(text)
        else:
            self.notify("An empty summary would lose the history: cancel instead.", severity="warning")

    def action_cancel(self) -> None:
        self.dismiss(None)
