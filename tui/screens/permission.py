"""PermissionScreen: may the agent run this tool call? Allow once (y), for the session (a), deny (n/esc).

The dialog shows the call exactly as the tool will run it: the whole command (every control
character as a visible escape, so cursor movement cannot make `ls -la` stand for something else),
every other input field, and the event's `preview` (the diff a file write would make) in a scrollable
area. An input too large to lay out (a 10 MB command) is shown as its head and tail with a line that
says how many characters are not shown. The answer goes into the event's `reply` future; if the turn
is closed while the dialog is up (the future resolves without it), the dialog closes itself.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from core.events import PermissionRequested
from core.text import visible
from tui.format import count

Choice = Literal["once", "session", "deny"]

SHOWN_CHARS = 40_000
"""Up to this many characters of an input (or preview) are shown whole; beyond, head and tail."""
HEAD_CHARS = 30_000
TAIL_CHARS = 10_000


def bounded(text: str) -> tuple[str, str, int]:
    """(head, tail, hidden): the whole text (escapes visible) as head when it is short enough, else its
    first HEAD_CHARS and last TAIL_CHARS and how many characters lie between them unshown."""
    if len(text) <= SHOWN_CHARS:
        return visible(text), "", 0
    return visible(text[:HEAD_CHARS]), visible(text[-TAIL_CHARS:]), len(text) - HEAD_CHARS - TAIL_CHARS


def _assemble(text: str) -> list[str | tuple[str, str]]:
    head, tail, hidden = bounded(text)
    if not hidden:
        return [head]
    notice = (
        f"\n⚠ {count(hidden)} of {count(len(text))} chars in the middle are not shown: this input is too "
        "large to check here. Deny unless you know what it is.\n"
    )
    return [head, (notice, "bold $text-error"), tail]


def command_content(tool_input: dict[str, Any]) -> Content:
    """The command (or the whole input as JSON) and every other field: nothing left out silently."""
    command = tool_input.get("command")
    if not isinstance(command, str):
        return Content.assemble(*_assemble(json.dumps(tool_input, ensure_ascii=False, indent=2, default=str)))
    parts = _assemble(command)
    for key, value in tool_input.items():
        if key != "command":
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            parts += [(f"\n{visible(str(key))}: ", "bold"), *_assemble(text)]
    return Content.assemble(*parts)


def preview_content(preview: str) -> Content:
    """A unified diff, coloured by line (added, removed, hunk headers), bounded."""
    head, tail, hidden = bounded(preview)
    parts: list[str | tuple[str, str]] = []
    for line in (head + ("\n…\n" if hidden else "") + tail).splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            parts.append((line, "bold"))
        elif line.startswith("+"):
            parts.append((line, "$text-success"))
        elif line.startswith("-"):
            parts.append((line, "$text-error"))
        elif line.startswith("@@"):
            parts.append((line, "$text-accent"))
        else:
            parts.append(line)
    if hidden:
        parts.append((f"\n⚠ {count(hidden)} chars in the middle of the preview are not shown", "bold $text-warning"))
    return Content.assemble(*parts)


class PermissionScreen(ModalScreen[Choice | None]):
    """Asks once; dismisses with the choice, or None when the turn was closed while it asked."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose('once')", "Allow once", id="permission.once"),
        Binding("a", "choose('session')", "Allow for this session", id="permission.session"),
        Binding("n,escape", "choose('deny')", "Deny", id="permission.deny"),
    ]

    def __init__(self, request: PermissionRequested) -> None:
        super().__init__()
        self.request = request
        self.tool_name = request.tool
        self.tool_input = request.input
        self._dismissing = False

    @property
    def reply(self) -> asyncio.Future[str]:
        return self.request.reply

    def compose(self) -> ComposeResult:
        kind = "command" if isinstance(self.tool_input.get("command"), str) else "call"
        with Vertical(id="permission-dialog", classes="dialog"):
            yield Static(
                Content.assemble(("⚠ ", "bold"), "The agent wants to run a ", (visible(self.tool_name), "bold"),
                                 f" {kind}"),
                classes="dialog--title",
            )
            with VerticalScroll(id="permission-command"):
                yield Static(command_content(self.tool_input), id="permission-text")
            if self.request.preview:
                yield Static(Content("What it would change:"), classes="dialog--text")
                with VerticalScroll(id="permission-preview", can_focus=True):
                    yield Static(preview_content(self.request.preview), id="permission-diff")
            with Horizontal(classes="dialog--buttons"):
                yield Button(Content("Allow once  y"), id="once", variant="primary", compact=True)
                yield Button(Content("Allow for this session  a"), id="session", variant="warning", compact=True)
                yield Button(Content("Deny  n / esc"), id="deny", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#once", Button).focus()
        self.reply.add_done_callback(self._reply_done)

    def _reply_done(self, _: object) -> None:
        """The future resolved: by this dialog (it is closing already) or because the turn closed."""
        if not self._dismissing:
            self._close(None)

    def on_screen_resume(self) -> None:
        if self.reply.done() and not self._dismissing:
            self._close(None)

    def _close(self, choice: Choice | None) -> None:
        if self._dismissing or not self.is_attached:
            return
        if self.app.screen is not self:
            return  # closes when it is on top again (on_screen_resume)
        self._dismissing = True
        self.dismiss(choice)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(str(event.button.id))

    def action_choose(self, choice: str) -> None:
        if choice not in ("once", "session", "deny") or self._dismissing or self.reply.done():
            return
        self.reply.set_result(choice)  # its done callback finds the dialog already closing
        self._close(choice)  # type: ignore[arg-type]

    def on_unmount(self) -> None:
        """However the dialog goes, the turn is never left waiting (deny)."""
        if not self.reply.done():
            self.reply.set_result("deny")
