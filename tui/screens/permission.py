"""PermissionScreen: may the agent run this tool call? Allow once (y), for the session (a), deny (n/esc).

The dialog shows the call exactly as the tool will run it: the whole command (every control
character as a visible escape, styled apart from the text around it, so cursor movement cannot make
`ls -la` stand for something else and a real ESC never looks like the typed text `\\x1b`), every
other input field, and the event's `preview` (the diff a file write would make). An input too large
to lay out (a 10 MB command) is shown as its head and tail with a line that says how many characters
are not shown, and the same warning sits at the top, under the title. The title and the buttons stay
on screen at any terminal size; the call and its diff scroll between them (arrows, page keys, home,
end, the wheel). The answer goes into the event's `reply` future; if the turn is closed while the
dialog is up (the future resolves without it), the dialog closes itself.
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
from core.text import visible, visible_parts
from tui.format import article, count
from tui.screens import DIALOG_CSS

Choice = Literal["once", "session", "deny"]
Part = str | tuple[str, str]

SHOWN_CHARS = 40_000
"""Up to this many characters of an input (or preview) are shown whole; beyond, head and tail."""
HEAD_CHARS = 30_000
TAIL_CHARS = 10_000
ESCAPE_STYLE = "reverse $text-warning"
"""How an escape that `visible` made looks: apart from any text that merely reads like one."""


def bounded(text: str) -> tuple[str, str, int]:
    """(head, tail, hidden): the whole text as head when it is short enough, else its first HEAD_CHARS
    and last TAIL_CHARS and how many characters lie between them unshown. The text is cut before its
    control characters are made visible, so an escape is never split."""
    if len(text) <= SHOWN_CHARS:
        return text, "", 0
    return text[:HEAD_CHARS], text[-TAIL_CHARS:], len(text) - HEAD_CHARS - TAIL_CHARS


def escaped(text: str, style: str = "") -> list[Part]:
    """`text` with its control characters as visible escapes in ESCAPE_STYLE, the rest in `style`."""
    return [
        (piece, f"{style} {ESCAPE_STYLE}".strip() if escape else style) if style or escape else piece
        for piece, escape in visible_parts(text)
    ]


def _assemble(text: str) -> tuple[list[Part], int]:
    head, tail, hidden = bounded(text)
    if not hidden:
        return escaped(head), 0
    notice = (
        f"\n⚠ {count(hidden)} of {count(len(text))} chars in the middle are not shown: this input is too "
        "large to check here. Deny unless you know what it is.\n"
    )
    return [*escaped(head), (notice, "bold $text-error"), *escaped(tail)], hidden


def command_content(tool_input: dict[str, Any]) -> tuple[Content, list[str]]:
    """The command (or the whole input as JSON) and every other field: nothing left out silently.
    Also returns what is cut ("command: 11,620 of 51,620 chars"), for the warning at the top."""
    command = tool_input.get("command")
    if not isinstance(command, str):
        whole = json.dumps(tool_input, ensure_ascii=False, indent=2, default=str)
        parts, hidden = _assemble(whole)
        return Content.assemble(*parts), [
            f"the input: {count(hidden)} of {count(len(whole))} chars"
        ] if hidden else []
    parts, hidden = _assemble(command)
    cut = [f"the command: {count(hidden)} of {count(len(command))} chars"] if hidden else []
    for key, value in tool_input.items():
        if key != "command":
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            field, hidden = _assemble(text)
            parts += [(f"\n{visible(str(key))}: ", "bold"), *field]
            if hidden:
                cut.append(f"{visible(str(key))}: {count(hidden)} of {count(len(text))} chars")
    return Content.assemble(*parts), cut


def preview_content(preview: str) -> tuple[Content, list[str]]:
    """A unified diff, coloured by line (added, removed, hunk headers), bounded; and what is cut."""
    head, tail, hidden = bounded(preview)
    parts: list[Part] = []
    for line in (head + ("\n…\n" if hidden else "") + tail).splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            parts += escaped(line, "bold")
        elif line.startswith("+"):
            parts += escaped(line, "$text-success")
        elif line.startswith("-"):
            parts += escaped(line, "$text-error")
        elif line.startswith("@@"):
            parts += escaped(line, "$text-accent")
        else:
            parts += escaped(line)
    if hidden:
        parts.append(
            (f"\n⚠ {count(hidden)} chars in the middle of the preview are not shown", "bold $text-warning")
        )
    return Content.assemble(*parts), [
        f"the preview: {count(hidden)} of {count(len(preview))} chars"
    ] if hidden else []


def hidden_notice(cut: list[str]) -> Content:
    """The warning under the title when part of the call is not shown."""
    return Content.assemble(
        (f"⚠ Part of this call is not shown ({'; '.join(cut)}, in the middle)", "bold $text-error"),
        (": too large to check here. Deny unless you know what it is.", "$text-error"),
    )


class PermissionScreen(ModalScreen[Choice | None]):
    """Asks once; dismisses with the choice, or None when the turn was closed while it asked."""

    CSS_PATH = DIALOG_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose('once')", "Allow once", id="permission.once"),
        Binding("a", "choose('session')", "Allow for this session", id="permission.session"),
        Binding("n,escape", "choose('deny')", "Deny", id="permission.deny"),
        Binding("up", "scroll_body('up')", "Scroll up", show=False, id="permission.up"),
        Binding("down", "scroll_body('down')", "Scroll down", show=False, id="permission.down"),
        Binding("pageup", "scroll_body('page_up')", "Page up", show=False, id="permission.page_up"),
        Binding("pagedown", "scroll_body('page_down')", "Page down", show=False, id="permission.page_down"),
        Binding("home", "scroll_body('home')", "Top", show=False, id="permission.top"),
        Binding("end", "scroll_body('end')", "Bottom", show=False, id="permission.bottom"),
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
        command, cut = command_content(self.tool_input)
        preview, preview_cut = preview_content(self.request.preview) if self.request.preview else (None, [])
        with VerticalScroll(id="permission-dialog", classes="dialog", can_focus=False):
            with Vertical(id="permission-head"):
                name = visible(self.tool_name)
                yield Static(
                    Content.assemble(
                        ("⚠ ", "bold"), f"The agent wants to run {article(name)} ", (name, "bold"), f" {kind}"
                    ),
                    classes="dialog--title",
                )
                if cut or preview_cut:
                    yield Static(hidden_notice(cut + preview_cut), id="permission-hidden")
            yield Static(command, id="permission-text")
            if preview is not None:
                yield Static(Content("What it would change:"), classes="dialog--text")
                yield Static(preview, id="permission-diff")
            with Horizontal(id="permission-buttons", classes="dialog--buttons"):
                yield Button(Content("Allow once  y"), id="once", variant="primary", compact=True)
                yield Button(
                    Content("Allow for this session  a"), id="session", variant="warning", compact=True
                )
                yield Button(Content("Deny  n / esc"), id="deny", variant="error", compact=True)

    @property
    def body(self) -> VerticalScroll:
        """What scrolls between the title and the buttons: the call and its diff."""
        return self.query_one("#permission-dialog", VerticalScroll)

    def action_scroll_body(self, how: str) -> None:
        body = self.body
        {
            "up": body.scroll_up,
            "down": body.scroll_down,
            "page_up": body.scroll_page_up,
            "page_down": body.scroll_page_down,
            "home": body.scroll_home,
            "end": body.scroll_end,
        }[how](animate=False)

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
