"""SessionActions: a new session, and resuming one from the session picker (a part of MainScreen).

Either way every view is reset from the agent's new history: the chat, the gauge, the compaction
log, the tree and the inspector's views.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.compaction.steering import SteeringError
from core.sessions.listing import SessionInfo, list_sessions
from core.text import visible
from tui.screens.main_base import MainScreenBase
from tui.screens.sessions import SessionsScreen


class SessionActions(MainScreenBase):
    """ctrl+n (a new, empty session) and ctrl+s (pick one of this workdir's sessions and resume it)."""

    async def action_new_session(self) -> None:
        if self.busy:
            self.notify("A turn is running: press esc to cancel it first.", severity="warning")
            return
        changed = self.agent.new_session()
        await self.chat.clear()
        self.gauge.reset()
        self.steps.reset()
        self._views_reset()
        self.gauge.history_changed(changed.chars, changed.length)
        self.gauge.flush()
        self.message_tree.request_sync()
        await self.chat.add_notice("new session: the history is empty (archived files stay on disk)")
        self._show_activity()
        self.chat.input.focus()

    async def action_sessions(self) -> None:
        """List this workdir's sessions; the one chosen is resumed here (chat, prompt history, inspector)."""
        if self.busy:
            self.notify("A turn is running: press esc to cancel it first.", severity="warning")
            return
        sessions = await asyncio.to_thread(list_sessions, self.agent.settings.state_dir)
        current = self.agent.session.path if self.agent.session is not None else None

        async def chosen(info: SessionInfo | None) -> None:
            if info is not None:
                await self.resume_session(info.path)

        await self.app.push_screen(SessionsScreen(sessions, current), callback=chosen)

    async def resume_session(self, path: Path) -> None:
        """Make the session in `path` the running one and show it as `--resume` would."""
        try:
            changed = await self.agent.resume(path)
        except (SteeringError, OSError) as error:
            self.notify(visible(f"cannot resume {path.name}: {error}"), severity="error", markup=False)
            return
        await self.chat.clear()
        self.chat.input.prompt_history.clear()
        self.gauge.reset()
        self.steps.reset()
        self.gauge.history_changed(changed.chars, changed.length)
        self.gauge.flush()
        self.message_tree.request_sync()
        await self._replay()
        self._show_activity()
        self.measure_context()
        self.chat.input.focus()
