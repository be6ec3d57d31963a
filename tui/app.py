"""CtxApp: the app-wide part of ctxtui; the chat and the inspector live on `MainScreen`.

The app owns what outlives a screen: the agent (closed, and its session flushed, however the app
ends; given as a `Launch`, it is built after the first frame: tui/screens/front.py), quitting, the command palette provider, the theme (a theme chosen from the palette is saved
to the config file for the next start), and the demo to start. Everything a turn does is on
`tui.screens.main.MainScreen`; the properties below hand its state to callers (tests, the demo).
A screenshot (the palette's "Save screenshot") goes to the downloads folder, or to the home folder
when there is none, and the notice says where, or why it could not be saved.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from platformdirs import user_downloads_path
from textual import events
from textual.app import App
from textual.binding import BindingType
from textual.command import CommandPalette
from textual.screen import Screen
from textual.theme import Theme
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from core.agent.launch import Launch
from core.text import visible
from tui import actions
from tui.commands import CtxCommands
from tui.screens.front import front_of, permission_mode
from tui.screens.main import MainScreen
from tui.startup import resume_collector
from tui.widgets.chat_pane import ChatPane
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree

if TYPE_CHECKING:
    from core.agent import Agent

NARROW_DIALOGS = 70
"""Below this width a dialog's row of buttons (the permission dialog's: 61 columns) does not fit."""


class CtxApp(App[None]):
    """The ctxtui terminal app."""

    CSS_PATH = "app.tcss"
    TITLE = "ctxtui"
    COMMANDS = App.COMMANDS | {CtxCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(actions.bindings(app_wide=True))

    def __init__(
        self,
        agent: Agent | Launch,
        demo_commands: list[str] | None = None,
        demo_pause: float = 0.4,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        self._given = agent
        self._theme_problem = self._start_theme(theme)
        self._saved_theme = self.theme
        self._theme_timer: Timer | None = None
        self.demo_commands = list(demo_commands) if demo_commands else None
        self.demo_pause = demo_pause
        self._main: MainScreen | None = None
        self._quitting = False
        self._agent_closed = False
        self._held_input: list[events.Key | events.Paste] | None = []
        """Keys and pastes that came before the prompt could take them (None once it can)."""

    def get_default_screen(self) -> Screen[None]:
        self._main = MainScreen(self._given)
        return self._main

    @property
    def built_agent(self) -> Agent | None:
        """The agent, or None before it is built (or when its build failed)."""
        if not isinstance(self._given, Launch):
            return self._given
        return self._main.built_agent if self._main is not None else None

    @property
    def start_failure(self) -> str | None:
        """Why the agent could not be built after the first frame (the app has ended), else None."""
        return self._main.start_failure if self._main is not None else None

    @property
    def agent(self) -> Agent:
        """The agent (given, or built after the first frame: RuntimeError until then)."""
        return self.main.agent if isinstance(self._given, Launch) else self._given

    @property
    def main(self) -> MainScreen:
        """The main screen (made when the app starts)."""
        if self._main is None:
            raise RuntimeError("the app is not running yet")
        return self._main

    def on_mount(self) -> None:
        self._fit_width(self.size.width)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_width(event.size.width)

    def _fit_width(self, width: int) -> None:
        """The app is `-narrow` below `NARROW_DIALOGS` columns: a dialog's buttons stand one under the
        other there (app.tcss), side by side the last one was cut. A class of the app's own, set only
        when it changes, rather than Textual's breakpoints, which restyle every widget at the first
        resize (~7 ms of the first frame)."""
        self.set_class(width < NARROW_DIALOGS, "-narrow")

    def on_ready(self) -> None:
        """The main screen's first layout is done: after its paint, what the first frame did not need;
        follow theme changes, start the demo, if any."""
        # Ready comes after the first layout; what is queued after the next refresh runs once it is painted.
        self.call_after_refresh(self._first_frame_painted)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        if self._theme_problem:
            self.notify(self._theme_problem, severity="warning", markup=False)
        if self.demo_commands:
            from tui.demo import play

            self.main.run_demo(play, self.demo_commands, self.demo_pause)

    # --- typed-ahead keys -------------------------------------------------------------------------

    async def on_event(self, event: events.Event) -> None:
        """Every key and paste from the terminal passes here, one at a time and in the order typed.
        Until the prompt is mounted and focused they are held (typed ahead: some were written before
        the terminal was even the app's); after, a key typed for the prompt moves the focus to it
        before the key is handed on (`MainScreen.route_typing`), so no key waits in a queue that a
        later one skips."""
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded:
            if self._held_input is not None:
                self._held_input.append(event)
                return
            if self._main is not None and self.screen is self._main:
                if isinstance(event, events.Key):
                    self._main.route_typing(event)
                else:
                    self._main.route_paste()
        await super().on_event(event)

    async def on_main_screen_prompt_ready(self, message: MainScreen.PromptReady) -> None:
        """Hand the held keys and pastes on, in order, through the usual routing."""
        message.stop()
        held, self._held_input = self._held_input or [], None
        for event in held:
            await self.on_event(event)

    def _first_frame_painted(self) -> None:
        resume_collector()  # paused by `ctxtui` until now (tui/startup.py)
        # a worker, not awaited here: the screen keeps handling keys and messages meanwhile
        self.main.run_worker(
            self.main.after_first_frame(),
            group="first-frame",
            exit_on_error=False,
            description="after the first frame",
        )

    # --- the main screen's state, for callers -----------------------------------------------------

    @property
    def chat(self) -> ChatPane:
        return self.main.chat

    @property
    def gauge(self) -> ContextGauge:
        return self.main.gauge

    @property
    def message_tree(self) -> MessageTree:
        return self.main.message_tree

    @property
    def busy(self) -> bool:
        return self.main.busy

    @property
    def turn_idle(self) -> asyncio.Event:
        return self.main.turn_idle

    @property
    def turns_completed(self) -> int:
        return self.main.turns_completed

    @property
    def permission_mode(self) -> str:
        """ "preset" (--yes), "session" (bash allowed for this session) or "ask"."""
        front = self._main.front if self._main is not None else front_of(self._given)
        return permission_mode(self.built_agent, front)

    async def submit(self, text: str) -> bool:
        """Run `text` as a user turn (or a slash command). False when a turn is already running."""
        return await self.main.submit(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The table's answer (tui/actions.py) for the main screen's state."""
        return actions.availability(action, self.main) if self._main is not None else True

    def palette_commands(self) -> list[tuple[str, str, str]]:
        """(name, help, action) of the palette's commands right now."""
        return [
            (action.palette or "", action.help, action.action)
            for action in actions.palette_entries(self.main)
        ]

    # --- the theme ------------------------------------------------------------------------------

    def _start_theme(self, name: str | None) -> str | None:
        """Use the configured theme; an unknown name keeps the default and returns the one-line notice."""
        if not name or name == self.theme:
            return None
        if name in self.available_themes:
            self.theme = name
            return None
        return visible(
            f"unknown theme {name!r} in the settings: using {self.theme} (ctrl+p > Theme picks one)"
        )

    def _theme_changed(self, theme: Theme) -> None:
        """Save the theme once the choice settles (the palette's theme list previews as it moves)."""
        if self._theme_timer is not None:
            self._theme_timer.stop()
        self._theme_timer = self.set_timer(0.3, self._save_theme)

    def _save_theme(self) -> None:
        if isinstance(self.screen, CommandPalette):
            self._theme_timer = self.set_timer(0.3, self._save_theme)  # still choosing
            return
        if self.theme != self._saved_theme:
            self.run_worker(
                self._write_theme(self.theme),
                group="theme",
                exclusive=True,
                exit_on_error=False,
                description="save the theme",
            )

    async def _write_theme(self, name: str) -> None:
        from core.config import ConfigError, save_setting

        try:
            path = await asyncio.to_thread(save_setting, "theme", name)
        except (ConfigError, OSError) as error:
            self.notify(visible(f"the theme was not saved: {error}"), severity="warning", markup=False)
            return
        self._saved_theme = name
        self.log.info(f"theme {name} saved to {path}")

    # --- screenshots -------------------------------------------------------------------------------

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """Textual's screenshot, saved where it can be: the downloads folder when it exists, else home."""
        if path is None and not self.is_web:
            path = str(screenshot_folder())
        return super().deliver_screenshot(filename, path, time_format)

    def on_delivery_complete(self, event: events.DeliveryComplete) -> None:
        if event.name == "screenshot":
            event.prevent_default()  # Textual's own notice shows the path as markup
            where = f" to {event.path}" if event.path is not None else ""
            self.notify(visible(f"Saved screenshot{where}"), title="Screenshot", markup=False)

    def on_delivery_failed(self, event: events.DeliveryFailed) -> None:
        if event.name == "screenshot":
            event.prevent_default()  # Textual's own notice does not say why
            error = event.exception
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            where = f": {error.filename}" if isinstance(error, OSError) and error.filename else ""
            self.notify(
                visible(f"The screenshot was not saved: {reason}{where}"),
                title="Screenshot",
                severity="error",
                markup=False,
            )

    # --- ending ----------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Cancel a running turn (the core repairs the history), flush the session, exit."""
        if self._quitting:
            return
        self._quitting = True
        running = [w for w in self.workers if w.group in ("turn", "demo") and not w.is_finished]
        for worker in running:
            worker.cancel()
        for worker in running:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=5)
        await self._close_agent()
        self.exit()

    async def _close_agent(self) -> None:
        if self._agent_closed:
            return
        self._agent_closed = True
        if self.built_agent is None and self._main is not None:
            with contextlib.suppress(
                Exception
            ):  # quit in the first moments: the agent being built is closed too
                await asyncio.wait_for(self._main.agent_settled.wait(), timeout=5)
        agent = self.built_agent
        if agent is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(agent.aclose(), timeout=5)

    async def on_unmount(self) -> None:
        """However the app ends (quit, crash, ctrl+c twice), the session is flushed."""
        await self._close_agent()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """One place for failed workers (a turn's failures are already in the chat)."""
        worker = event.worker
        if event.state == WorkerState.ERROR and worker.group != "turn":
            name = worker.description or worker.name
            self.notify(visible(f"{name} failed: {worker.error}"), severity="error", markup=False)


def screenshot_folder() -> Path:
    """Where a screenshot is saved: the user's downloads folder if there is one, else the home folder."""
    downloads = user_downloads_path()
    return downloads if downloads.is_dir() else Path.home()
