"""PermissionScreen: may the agent run this bash command? Allow once (y), for the session (a), deny (n)."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

Choice = Literal["once", "session", "deny"]


class PermissionScreen(ModalScreen[Choice]):
    """Shows the command exactly as the tool will run it; the answer resolves the app's future."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose('once')", "Allow once", id="permission.once"),
        Binding("a", "choose('session')", "Allow for this session", id="permission.session"),
        Binding("n,escape", "choose('deny')", "Deny", id="permission.deny"),
    ]

    def __init__(self, tool_name: str, tool_input: dict[str, Any]) -> None:
        super().__init__()
        self.tool_name = tool_name
        self.tool_input = tool_input

    def compose(self) -> ComposeResult:
        command = self.tool_input.get("command")
        shown = command if isinstance(command, str) else json.dumps(self.tool_input, ensure_ascii=False, indent=2)
        with Vertical(id="permission-dialog", classes="dialog"):
            yield Static(
                Content.assemble(("⚠ ", "bold"), ("The agent wants to run a ", ""), (self.tool_name, "bold"), " command"),
                classes="dialog--title",
            )
            with VerticalScroll(id="permission-command"):
                yield Static(Content(shown), id="permission-text")
            with Horizontal(classes="dialog--buttons"):
                yield Button(Content("Allow once  y"), id="once", variant="primary", compact=True)
                yield Button(Content("Allow for this session  a"), id="session", variant="warning", compact=True)
                yield Button(Content("Deny  n / esc"), id="deny", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#once", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(str(event.button.id))

    def action_choose(self, choice: str) -> None:
        if choice in ("once", "session", "deny"):
            self.dismiss(choice)  # type: ignore[arg-type]
