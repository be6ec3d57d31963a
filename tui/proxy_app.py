"""ProxyApp: `ctxtui proxy`'s live view as an app (the screen is tui/screens/proxy.py).

The app owns what outlives the screen: quitting (ctrl+q or ctrl+c, as Ctrl-C stops the headless
proxy; SIGTERM too when it runs as the command), the theme, and where its events come from. It
does not own the proxy: the command starts the proxy before the app and stops it after, so the
`listening on ...` line is on stdout before the app takes the screen (Textual paints on stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import ClassVar

from textual.app import App
from textual.binding import BindingType
from textual.driver import Driver
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from core.archive import Archive
from core.text import visible
from tui.proxy_actions import proxy_bindings
from tui.screens.proxy import EventSource, ProxyScreen
from tui.terminal_size import stderr_sized
from tui.widgets.proxy_status import ProxyAbout


class ProxyApp(App[None]):
    """The proxy's live view."""

    CSS_PATH = "app.tcss"
    TITLE = "ctxtui proxy"
    CSS = """
    #proxy-main { height: 1fr; }
    #proxy-screen #conversations {
        width: 38; height: 1fr; border: none; border-top: solid $panel-lighten-2;
        border-title-color: $text-primary; border-title-style: bold;
        text-wrap: nowrap; text-overflow: ellipsis;
        &:focus { border: none; border-top: thick $accent; border-title-color: $text-accent; }
    }
    #proxy-screen #inspector { width: 1fr; }
    #diff {
        border-top: solid $panel-lighten-2; border-title-color: $text-primary; border-title-style: bold;
        &:focus-within { border-top: thick $accent; border-title-color: $text-accent; }
    }
    #proxy-screen.-narrow #proxy-main { layout: vertical; }
    #proxy-screen.-narrow #conversations { width: 1fr; height: 6; }
    #proxy-screen.-narrow #inspector { border-left: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(proxy_bindings(app_wide=True))

    def __init__(
        self,
        events: EventSource,
        about: ProxyAbout,
        workdir: Path,
        *,
        limit: int,
        target_ratio: float = 0.8,
        theme: str | None = None,
        stop_on_sigterm: bool = False,
    ) -> None:
        super().__init__()
        self.events = events
        self.about = about
        self.archive = Archive(workdir)
        """ctxtui's archive under the workdir: a ctxtui agent watched through the proxy has its markers opened."""
        self.limit = limit
        self.target_ratio = target_ratio
        self.stop_on_sigterm = stop_on_sigterm
        self._screen: ProxyScreen | None = None
        if theme and theme in self.available_themes:
            self.theme = theme

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this platform, sized from stderr (where it paints: stdout may be a file)."""
        return stderr_sized(super().get_driver_class())

    def get_default_screen(self) -> Screen[None]:
        self._screen = ProxyScreen(
            self.events, self.about, self.archive, limit=self.limit, target_ratio=self.target_ratio
        )
        return self._screen

    @property
    def view(self) -> ProxyScreen:
        """The view's screen (made when the app starts)."""
        if self._screen is None:
            raise RuntimeError("the app is not running yet")
        return self._screen

    def on_mount(self) -> None:
        if self.stop_on_sigterm:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.exit)

    def on_unmount(self) -> None:
        if self.stop_on_sigterm:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """One place for failed workers: said in a notice, the view goes on."""
        worker = event.worker
        if event.state == WorkerState.ERROR:
            name = worker.description or worker.name
            self.notify(visible(f"{name} failed: {worker.error}"), severity="error", markup=False)
