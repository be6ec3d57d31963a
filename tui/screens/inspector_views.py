"""InspectorViews: the inspector's three views and the figures they show (a part of MainScreen).

The message tree, the breakdown and the timeline share the inspector (a `ContentSwitcher`; f2 goes
round them). The breakdown follows the history through `Breakdown` (kept current from HistoryChanged
splices, never re-walked); the next request is counted in a debounced worker, exact from
count_tokens when the API offers it, else a labelled estimate.
"""

from __future__ import annotations

import json

from textual import work
from textual.widgets import ContentSwitcher

from core.history.categories import Breakdown
from core.usage.counting import model_window
from core.usage.timeline import TokenCount, session_cost
from tui import messages as msg
from tui.screens.main_base import MainScreenBase
from tui.widgets.breakdown import BreakdownView
from tui.widgets.timeline import TimelineView

COUNT_DEBOUNCE = 0.4
"""Seconds a history change waits before the next request is counted (a newer change cancels it)."""
VIEWS = ("tree", "breakdown", "timeline")


class InspectorViews(MainScreenBase):
    """Switching the inspector's views (f2, the palette, slash commands) and keeping them current."""

    tracker: Breakdown
    """The breakdown of the history, kept current from HistoryChanged splices (never re-walked)."""
    next_count: TokenCount | None
    """The last count of the next request (None until counted, and after a reset)."""

    @property
    def views(self) -> ContentSwitcher:
        return self.query_one("#views", ContentSwitcher)

    @property
    def breakdown_view(self) -> BreakdownView:
        return self.query_one("#breakdown", BreakdownView)

    @property
    def timeline_view(self) -> TimelineView:
        return self.query_one("#timeline", TimelineView)

    def _mount_views(self) -> None:
        self.breakdown_view.border_title = "Breakdown · f2 → timeline"
        self.timeline_view.border_title = "Timeline · f2 → tree"
        self.timeline_view.set_samples(self.agent.timeline)
        if self.agent.timeline:
            self.gauge.sampled(self.agent.timeline[-1], session_cost(self.agent.timeline))
        self.fetch_window()
        self.count_next(debounce=0.0)

    def show_view(self, name: str) -> None:
        """Switch the inspector to `name` (tree, breakdown, timeline), showing the inspector if hidden."""
        if not self.inspector_visible:
            self._inspector_choice = True
            self.layout_for(self.size)
        self.views.current = name
        if name == "breakdown":
            self._tracker_check()
            self._paint_breakdown()
        elif name == "timeline":
            self.timeline_view.set_samples(self.agent.timeline)

    def action_next_view(self) -> None:
        """f2: the message tree, then the breakdown, then the timeline, then the tree again."""
        current = self.views.current if self.views.current in VIEWS else "tree"
        following = VIEWS[(VIEWS.index(current) + 1) % len(VIEWS)]
        {"tree": self.action_show_tree, "breakdown": self.action_show_breakdown,
         "timeline": self.action_show_timeline}[following]()

    def action_show_tree(self) -> None:
        self.show_view("tree")

    def action_show_breakdown(self) -> None:
        self.show_view("breakdown")
        self.breakdown_view.query_one("#breakdown-table").focus()

    def action_show_timeline(self) -> None:
        self.show_view("timeline")
        self.timeline_view.focus()

    def _views_reset(self) -> None:
        self.tracker.reset(self.agent.messages)
        self.timeline_view.set_samples(self.agent.timeline)
        self.next_count = None
        self._paint_breakdown()
        self.count_next()

    def _views_history_changed(self, message: msg.HistoryChanged) -> None:
        self.tracker.update(message.event, self.agent.messages)
        if self.views.current == "breakdown":
            self._paint_breakdown()
        self.count_next()

    def _views_turn_ended(self) -> None:
        self._tracker_check()
        if self.views.current == "breakdown":
            self._paint_breakdown()

    def _tracker_check(self) -> None:
        """When idle: a change made without a HistoryChanged (e.g. outside a turn) is caught up with."""
        if self.agent.running:
            return
        if len(self.tracker) != len(self.agent.messages) or self.tracker.chars != self.agent.chars:
            self.tracker.reset(self.agent.messages)

    def _paint_breakdown(self) -> None:
        found = self.next_count
        extra = {
            "system": len(self.agent.system_prompt),
            "tools": len(json.dumps(list(self.agent.toolbox.schemas), default=str, ensure_ascii=False)),
        }
        self.breakdown_view.follow(
            self.tracker,
            tokens=found.tokens if found is not None else None,
            exact=found is not None and found.exact,
            request_extra=extra,
        )

    @work(exclusive=True, group="count", exit_on_error=False, description="count the next request")
    async def count_next(self, debounce: float = COUNT_DEBOUNCE) -> None:
        """The next request's tokens: exact from count_tokens, else the labelled estimate (debounced:
        this worker is exclusive, so a newer history change cancels an older count while it sleeps)."""
        found = await self.agent.count_next_request(debounce=debounce)
        self.next_count = found
        self.gauge.counted(found)
        if self.views.current == "breakdown":
            self._paint_breakdown()

    @work(exclusive=True, group="window", exit_on_error=False, description="the model's window")
    async def fetch_window(self) -> None:
        self.gauge.windowed(await model_window(self.agent.model))

    def select_message(self, index: int, block: int | None) -> None:
        """A category or item chosen in the breakdown: show the tree with its cursor on that message."""
        self.show_view("tree")
        self.call_after_refresh(self._select_in_tree, index, block)

    def _select_in_tree(self, index: int, block: int | None) -> None:
        tree = self.message_tree
        if not 0 <= index < len(tree.entries):
            return
        node = tree.node_for(index)
        if block is not None and node.allow_expand:
            tree.populate(node)
            node.expand()
            if 0 <= block < len(node.children):
                node = node.children[block]
        tree.focus()

        def move() -> None:
            tree._tree_lines  # noqa: B018 - builds the line cache, which gives each node its line
            tree.move_cursor(node)
            tree.scroll_to_node(node, animate=False)

        self.call_after_refresh(move)
