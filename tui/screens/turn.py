"""TurnDriver: sending what the user typed and running the turn worker (a part of MainScreen).

`submit` is where typed text goes: a slash command from `tui.actions`, else a user turn (a message
larger than the whole context limit is asked about first, `OversizeScreen`). `drive` is the one
turn worker: it iterates `agent.run_turn` (or `agent.compact`) inside `contextlib.aclosing` and posts
one `tui.messages` message per core event to the screen, whose `@on` handlers route each one on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

from textual import work

from core.archive import ArchiveError
from core.events import AgentEvent
from core.text import visible
from tui import actions
from tui import messages as msg
from tui.screens.main_base import MainScreenBase
from tui.screens.oversize import OversizeScreen
from tui.screens.steering import STEERING_WITH_ARGUMENT


class TurnDriver(MainScreenBase):
    """Typed text to a turn or a slash command; the turn worker; the exact measure after a turn."""

    async def submit(self, text: str) -> bool:
        """Run `text` as a user turn (or a slash command). False when a turn is already running."""
        stripped = text.strip()
        if stripped.startswith("/") and await self._slash(stripped):
            return True
        if self.busy:
            self.notify("A turn is running: wait for it, or press esc to cancel it.", severity="warning")
            return False
        size = self.agent.oversize(text)
        if size is not None:
            limit = self.agent.compactor.settings.context_char_limit
            self.app.push_screen(OversizeScreen(size, limit), callback=lambda choice: self._oversize(text, choice))
            return True
        await self._send(text)
        return True

    async def _send(self, text: str) -> None:
        await self.chat.add_user(text)
        self._begin("working")
        self.drive(self.agent.run_turn(text))

    async def _oversize(self, text: str, choice: str | None) -> None:
        """The answer to OversizeScreen: archive the text first, send it anyway, or give it back to the prompt."""
        if choice is None:
            self.chat.input.load_text(text)
            return
        if choice == "archive":
            try:
                text = await self.agent.archive_request(text)
            except ArchiveError as error:
                self.notify(visible(f"cannot archive the message: {error}"), severity="error", markup=False)
                self.chat.input.load_text(text)
                return
        await self._send(text)

    async def _slash(self, command: str) -> bool:
        """A slash command from the table (`/compact [focus]` passes its argument); False if unknown."""
        name, _, rest = command[1:].partition(" ")
        action = actions.BY_SLASH.get(name)
        if action is None:
            return False
        if action.name == "compact":
            if self.busy:
                self.notify("A turn is running: compact when it is done.", severity="warning")
            else:
                self.review_compact(rest.strip() or None)
            return True
        if action.name in STEERING_WITH_ARGUMENT:
            await getattr(self, f"action_{action.name}")(rest.strip() or None)
            return True
        target = self.app if action.app_wide else self
        await target.run_action(action.action)
        return True

    def _begin(self, activity: str) -> None:
        self._activity = activity
        self.turn_idle.clear()
        self.busy = True

    def start_compact(self, focus: str | None, summary: str | None = None) -> None:
        """Compact now; `summary`, when given (reviewed), goes in as it is."""
        if self.busy:
            return
        self._begin("compacting")
        how = " with the reviewed summary" if summary is not None else ""
        self.call_later(self.chat.add_notice, f"compacting now{f' (focus: {focus})' if focus else ''}{how}", icon="Σ")
        self.drive(self.agent.compact(focus, summary))

    @work(exclusive=True, group="turn", exit_on_error=False, description="agent turn")
    async def drive(self, stream: AsyncGenerator[AgentEvent, None]) -> None:
        """Post one message per core event; aclosing makes a cancel close (and repair) the turn."""
        cancelled = False
        try:
            async with contextlib.aclosing(stream) as events_:
                async for event in events_:
                    message = msg.wrap(event)
                    if message is not None:
                        self.post_message(message)
        except asyncio.CancelledError:
            cancelled = True
            self.post_message(msg.TurnCancelled())
            raise
        except Exception as error:  # the core should not raise, but the UI must survive it
            self.post_message(msg.TurnCrashed(f"{type(error).__name__}: {error}"))
        finally:
            self.post_message(msg.TurnEnded(cancelled))

    @work(exclusive=True, group="measure", exit_on_error=False, description="measure the context")
    async def measure_context(self) -> None:
        """Exact figures (with the tiktoken estimate) once a turn is over."""
        if self.agent.running:
            return
        measured = await self.agent.measure()
        if not self.agent.running:
            self.gauge.measured(measured)
            self.gauge.flush()
