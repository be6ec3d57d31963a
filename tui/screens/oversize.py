"""OversizeScreen: a message larger than the whole context limit, caught before anything is sent.

No compaction step can shrink a user message, so sending it as it is means an over-limit context.
The choice: archive it as a file the model reads with read_file (a short message naming it is sent
instead), send it anyway, or cancel (the text goes back to the prompt). Dismisses with "archive",
"send" or None.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.format import count
from tui.screens import DIALOG_CSS

OversizeChoice = Literal["archive", "send"]


class OversizeScreen(ModalScreen[OversizeChoice | None]):
    """Archive the long message as a file, send it anyway, or cancel."""

    CSS_PATH = DIALOG_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "choose('archive')", "Archive as a file", id="oversize.archive"),
        Binding("s", "choose('send')", "Send anyway", id="oversize.send"),
        Binding("escape,c", "choose('cancel')", "Cancel", id="oversize.cancel"),
    ]

    def __init__(self, chars: int, limit: int) -> None:
        super().__init__()
        self.chars = chars
        self.limit = limit

    def compose(self) -> ComposeResult:
        with Vertical(id="oversize-dialog", classes="dialog"):
            yield Static(
                Content.assemble(("⚠ ", "bold"), ("This message alone is over the context limit", "bold")),
                classes="dialog--title",
            )
            yield Static(
                Content(
                    f"It is {count(self.chars)} chars; the limit is {count(self.limit)}. No compaction step can "
                    "shrink a user message. Archive it as a file (the model reads it with read_file, a short "
                    "message naming it is sent instead), send it as it is, or cancel and edit it."
                ),
                classes="dialog--text",
            )
            with Horizontal(classes="dialog--buttons"):
                yield Button(Content("Archive as a file  a"), id="archive", variant="primary", compact=True)
                yield Button(Content("Send anyway  s"), id="send", variant="warning", compact=True)
                yield Button(Content("Cancel  esc"), id="cancel", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#archive", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(str(event.button.id))

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice if choice in ("archive", "send") else None)  # type: ignore[arg-type]
