"""SessionSwitch: the main screen's session actions (a new session, another one resumed, /compare).

An object the screen holds, like `Steering`: it changes which session the agent runs and shows the
result the way the start would (`--resume`'s replay, the empty chat of a new session).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from core.text import visible
from tui import messages as msg
from tui.screens.steering import SteeringHost

if TYPE_CHECKING:
    from core.sessions.listing import SessionInfo


class SwitchHost(SteeringHost, Protocol):
    """What the session actions need from the screen that holds them: what steering needs, and
    the two ways the screen shows a session (its replayed history, its state in the title bar)."""

    async def replay_history(self, messages: Sequence[dict[str, Any]], chars: int) -> None: ...

    def show_activity(self) -> None: ...


class SessionSwitch:
    """The session actions of the main screen (see the module docstring)."""

    def __init__(self, host: SwitchHost) -> None:
        self.host = host

    def _refused_while_busy(self) -> bool:
        if self.host.busy:
            self.host.notify("A turn is running: press esc to cancel it first.", severity="warning")
        return self.host.busy

    async def new_session(self) -> None:
        """A new, empty session (archives and old sessions stay on disk)."""
        host = self.host
        if self._refused_while_busy():
            return
        changed = host.agent.new_session()
        await host.chat.clear()
        host.inspector.session_started()
        host.inspector.set_notes(host.agent.view.notes, host.agent.view.notes_char_limit)
        host.post_message(msg.HistoryChanged(changed))
        await host.chat.add_notice("new session: the history is empty (archived files stay on disk)")
        host.show_activity()
        host.chat.input.focus()

    async def compare(self) -> None:
        """This session's log replayed under every engine (tui/screens/compare.py)."""
        from tui.screens.compare import CompareScreen

        host = self.host
        path = host.agent.view.session_path
        if path is None or not await asyncio.to_thread(path.is_file):
            host.notify(
                "/compare replays this session's log: nothing has been recorded yet", severity="warning"
            )
            return
        await host.app.push_screen(CompareScreen(path, host.agent.view.settings))

    async def sessions(self) -> None:
        """List this workdir's sessions; the one chosen is resumed here."""
        from core.sessions.listing import list_sessions
        from tui.screens.sessions import SessionsScreen

        host = self.host
        if self._refused_while_busy():
            return
        sessions = await asyncio.to_thread(list_sessions, host.agent.view.state_dir)
        current = host.agent.view.session_path

        async def chosen(info: SessionInfo | None) -> None:
            if info is not None:
                await self.resume(info)

        await host.app.push_screen(SessionsScreen(sessions, current), callback=chosen)

    async def resume(self, info: SessionInfo) -> None:
        """Make the session `info` describes the running one and show it as `--resume` would."""
        from core.compaction.steering import SteeringError

        host = self.host
        try:
            changed = await host.agent.resume(info.path)
        except (SteeringError, OSError) as error:
            host.notify(visible(f"cannot resume {info.path.name}: {error}"), severity="error", markup=False)
            return
        await host.chat.clear()
        host.chat.input.prompt_history.clear()
        host.inspector.session_started()
        host.inspector.set_notes(host.agent.view.notes, host.agent.view.notes_char_limit)
        host.post_message(msg.HistoryChanged(changed))
        replayed = [message for change in changed.changes for message in change.added]
        await host.replay_history(replayed, changed.chars)
        host.show_activity()
        host.chat.input.focus()
