"""MainScreenBase: what the parts of the main screen share.

`MainScreen` is assembled from parts with one job each (`tui.screens.turn`, `.steering`,
`.inspector_views`, `.opening`, `.session_actions`); each part is a class over this base, so it can
reach the agent, the turn state and the widgets, and `MainScreen` inherits them all. The state is
made in `MainScreen.__init__` and the widgets in `MainScreen.compose`; the accessors of the widgets
the parts share are here, and the few methods one part calls on another are declared here for the
type checker only (each group says where it is defined).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual.reactive import reactive
from textual.screen import Screen

from tui.widgets.chat_pane import ChatPane
from tui.widgets.compaction_log import CompactionLog
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.worker import Worker

    from core.agent import Agent


class MainScreenBase(Screen[None]):
    """The shared state and widgets of the main screen (see the module docstring)."""

    busy: reactive[bool] = reactive(False)
    inspector_visible: reactive[bool] = reactive(True)
    inspector_width: reactive[int] = reactive(60)

    agent: Agent
    turn_idle: asyncio.Event
    """Set while no turn runs (tests and the demo wait on it)."""
    turns_completed: int
    _activity: str
    """What the running turn is doing (the title bar and the chat's busy line show it)."""
    _inspector_choice: bool | None
    """The user's show/hide choice for the inspector (None: follow the terminal's width)."""

    # --- the widgets `MainScreen.compose` makes ---

    @property
    def chat(self) -> ChatPane:
        return self.query_one("#chat", ChatPane)

    @property
    def gauge(self) -> ContextGauge:
        return self.query_one("#gauge", ContextGauge)

    @property
    def message_tree(self) -> MessageTree:
        return self.query_one("#tree", MessageTree)

    @property
    def steps(self) -> CompactionLog:
        return self.query_one("#steps", CompactionLog)

    if TYPE_CHECKING:
        # --- defined in tui/screens/main.py (the layout) ---
        def layout_for(self, size: Size) -> None: ...
        def _show_activity(self) -> None: ...
        async def _replay(self, messages: list[dict[str, Any]] | None = None, chars: int | None = None) -> None: ...

        # --- defined in tui/screens/turn.py ---
        def start_compact(self, focus: str | None, summary: str | None = None) -> None: ...
        def measure_context(self) -> Worker[None]: ...

        # --- defined in tui/screens/steering.py ---
        def review_compact(self, focus: str | None) -> Worker[None]: ...
        def request_preview(self) -> None: ...
        def _restore_path(self, path: str) -> None: ...

        # --- defined in tui/screens/inspector_views.py ---
        def _views_reset(self) -> None: ...
