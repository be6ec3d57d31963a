"""SummaryReviewScreen: read (and edit) the summary before it replaces the history.

A manual compact can draft its summary first. The screen shows what the summary would replace and
the draft in an editable area, and under it which of the facts the model sees now the summary keeps
and which it drops (`Agent.review_summary`, checked again as the text is edited), constraints
first, the dropped ones in the warning colour; ctrl+s accepts the text as it stands (edited or not), esc cancels and
nothing changes. Dismisses with the accepted text, or None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from core.compaction.review import SummaryReview
from core.text import one_line, visible
from tui.format import count, plural
from tui.screens import DIALOG_CSS


class SummaryReviewScreen(ModalScreen[str | None]):
    """The draft summary of a manual compact, for review: accept, edit, or cancel."""

    CSS_PATH = DIALOG_CSS

    DEFAULT_CSS = """
    #summary-dialog { height: 90%; }
    #summary-text { height: 1fr; }
    #summary-facts { height: auto; max-height: 12; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "accept", "Accept", id="summary_review.accept", priority=True),
        Binding("escape", "cancel", "Cancel", id="summary_review.cancel"),
    ]

    def __init__(
        self,
        draft: str,
        *,
        messages: int,
        chars: int,
        focus: str | None = None,
        review: Callable[[str], SummaryReview] | None = None,
    ) -> None:
        super().__init__()
        self.review = review
        """Which visible facts a summary with a given text keeps and drops (None: not shown)."""
        self.reviewed: SummaryReview | None = None
        self.draft = draft
        self.messages = messages
        self.chars = chars
        self.focus_text = focus

    def compose(self) -> ComposeResult:
        with Vertical(id="summary-dialog", classes="dialog"):
            yield Static(
                Content.assemble(("Σ ", "bold"), ("Review the summary", "bold")), classes="dialog--title"
            )
            what = (
                f"It replaces {plural(self.messages, 'message')} ({count(self.chars)} chars); the whole history "
                "goes to a transcript first. Edit it if you like: the text below is exactly what goes in."
            )
            if self.focus_text:
                what += f" Focus: {visible(self.focus_text)}"
            yield Static(Content(what), classes="dialog--text")
            yield TextArea(visible(self.draft), soft_wrap=True, show_line_numbers=False, id="summary-text")
            if self.review is not None:
                yield Static(id="summary-facts", classes="dialog--text")
            with Horizontal(classes="dialog--buttons"):
                yield Button(Content("Accept  ctrl+s"), id="accept", variant="primary", compact=True)
                yield Button(Content("Cancel  esc"), id="cancel", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#summary-text", TextArea).focus()
        self.check_facts()

    @on(TextArea.Changed, "#summary-text")
    def _edited(self, event: TextArea.Changed) -> None:
        self.check_facts()

    def check_facts(self) -> None:
        """Which facts the text as it stands keeps and drops."""
        if self.review is None:
            return
        self.reviewed = review = self.review(self.text)
        parts: list[str | tuple[str, str]] = []
        if review.dropped:
            parts.append(
                (
                    f"⚠ it drops {len(review.dropped)} of the facts the model sees now "
                    f"({plural(len(review.dropped_constraints()), 'constraint')}):\n",
                    "$text-warning bold",
                )
            )
            parts += [
                (f"  {fact.kind}: {visible(one_line(fact.text, 100))}\n", "$text-warning")
                for fact in review.dropped[:8]
            ]
            if len(review.dropped) > 8:
                parts.append((f"  … and {len(review.dropped) - 8} more\n", "$text-warning"))
        else:
            parts.append(("it drops none of the facts the model sees now\n", "$text-success"))
        kept = ", ".join(visible(one_line(fact.text, 40)) for fact in review.kept[:6])
        more = f" and {len(review.kept) - 6} more" if len(review.kept) > 6 else ""
        parts.append(
            (f"it keeps {plural(len(review.kept), 'fact')}" + (f": {kept}{more}" if kept else ""), "dim")
        )
        self.query_one("#summary-facts", Static).update(Content.assemble(*parts))

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
