"""SessionsScreen: this workdir's sessions, newest first; Enter dismisses with the one to resume.

Each row says what `ctxtui sessions` says (id, started, last active, messages, characters, the first
request). The first request and the id come from session files, so they are shown through
`core.text.visible` as plain Content, never markup.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from core.sessions.listing import SessionInfo
from core.text import visible
from tui.format import count, display_line, plural
from tui.screens import DIALOG_CSS


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


class SessionsScreen(ModalScreen[SessionInfo | None]):
    """Lists `list_sessions(state_dir)`; dismisses with the session chosen, or None (esc).

    The running session (`current`) and sessions that do not replay to a valid history are shown
    but cannot be chosen."""

    CSS_PATH = DIALOG_CSS

    DEFAULT_CSS = """
    #sessions-dialog { height: 80%; }
    #sessions-list { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="sessions.close")]

    def __init__(self, sessions: list[SessionInfo], current: Path | None = None) -> None:
        super().__init__()
        self.sessions = sessions
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog", classes="dialog"):
            yield Static(
                Content.assemble(
                    ("Sessions", "bold"),
                    (f"  {plural(len(self.sessions), 'session')} in this workdir, newest first", "dim"),
                ),
                classes="dialog--title",
            )
            if self.sessions:
                yield OptionList(
                    *(self._option(index, info) for index, info in enumerate(self.sessions)),
                    id="sessions-list",
                )
            else:
                yield Static(Content("No sessions saved in this workdir yet."), classes="dialog--text")
            yield Static(Content("enter resume · esc close"), classes="dialog--hint")

    def _option(self, index: int, info: SessionInfo) -> Option:
        running = self.current is not None and info.path == self.current
        request = display_line(info.first_request, 70) or ("(empty)" if not info.messages else "-")
        note = " · this session" if running else ("" if info.resumable else " · cannot resume")
        prompt = Content.assemble(
            (visible(info.id), "bold"),
            (
                f"  started {_stamp(info.started)} · last active {_stamp(info.last_active)} · "
                f"{plural(info.messages, 'message')} · {count(info.chars)} chars{note}\n",
                "dim",
            ),
            f"  {request}",
        )
        return Option(prompt, id=str(index), disabled=running or not info.resumable)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.sessions[int(event.option.id or 0)])

    def action_close(self) -> None:
        self.dismiss(None)
