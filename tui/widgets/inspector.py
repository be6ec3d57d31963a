"""Inspector: what sits in the model's context, and what compaction did to it.

One widget owns the inspector's state: the gauge, the model's notes under it (hidden while there are
none), the views (message tree, breakdown, timeline, and for ctxtui's own agent dropped, facts and
search: f2 goes round them), the compaction log, the marks of the next call's preview and the count of the next
request. It learns everything from the core's events, which the main screen hands it one by one:
the tree and the breakdown apply the splices each `HistoryChanged` carries, the timeline adds each
`ContextSampled` (which carries the session's cost too). It never reads the agent back: after a
change it asks its `ContextSource` once (`forecast`: the next call's preview, the history's figures,
the request's size), debounced, and the answer fills the gauge and the marks.

The first frame shows the gauge and the tree only: the compaction log (hidden until a step runs) and
the other views (breakdown, timeline, dropped, facts, search) are mounted, hidden, right after it is
painted, or as soon as anything asks for one (their properties), whichever comes first.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import AwaitMount, Widget
from textual.widgets import ContentSwitcher

from core.markers import parse_marker
from tui.format import plural
from tui.history_model import HistoryModel
from tui.screens.opening import ArchiveOpener
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree

if TYPE_CHECKING:  # the views the first frame does not show, and the core's events, load after it
    from core.archive import Archive
    from core.events import (
        CompactionHeld,
        CompactionStep,
        ContextMeasured,
        ContextSampled,
        Forecast,
        HistoryChanged,
        NextCallPreview,
        NotesChanged,
        StepName,
    )
    from core.usage.prices import Window
    from core.values.records import Fact, LedgerEntry
    from core.values.samples import ContextSample, TokenCount
    from tui.widgets.breakdown import BreakdownView
    from tui.widgets.compaction_log import CompactionLog
    from tui.widgets.dropped_view import DroppedView
    from tui.widgets.facts_view import FactsView
    from tui.widgets.notes_line import NotesLine
    from tui.widgets.search_view import Searcher, SearchView
    from tui.widgets.timeline import TimelineView

FORECAST_DEBOUNCE = 0.4
"""Seconds a change waits before the next call is forecast (a newer change cancels the wait)."""
VIEWS = ("tree", "breakdown", "timeline")
AGENT_VIEWS = ("dropped", "facts", "search")
"""The views of ctxtui's own agent (not of a watched client): what compaction took, which facts are
hidden, and the archive's search (what the model's search_context searches)."""
Message_ = dict[str, Any]


class ContextSource(Protocol):
    """What the inspector asks the core (the Agent answers): once after a change, once at the start."""

    def forecast(self, debounce: float = 0.0) -> AsyncIterator[Forecast]: ...

    @property
    def running(self) -> bool:
        """A turn runs: its events carry the figures, and the forecast waits for its end."""
        ...

    async def window(self) -> Window: ...


@dataclass(frozen=True)
class InspectorStart:
    """What the inspector shows before the first event: the history and the calls as they are."""

    archive: Archive | None
    """None before the agent is built (a launch: the archive comes with the agent, `set_archive`)."""
    messages: Sequence[Message_]
    chars: int
    limit: int
    target_ratio: float = 0.8
    offline: bool = False
    paused: bool = False
    samples: Sequence[ContextSample] = ()
    request_extra: dict[str, int] = field(default_factory=dict)
    """Characters the request carries beside the history (system prompt, tool schemas)."""
    ledger: Sequence[LedgerEntry] = ()
    facts: Sequence[Fact] = ()
    watched: bool = False
    """The history is another client's request (the proxy's), not ctxtui's agent's: ctxtui's limit is
    only shown for comparison (no limit line on the timeline, no warning colours on the gauge)."""


class Inspector(Vertical):
    """The context inspector (see the module docstring)."""

    class RestoreRequested(Message):
        """The archive viewer's restore: put this archived result back in context."""

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    class Recompaction(Message):
        """After an undo, the next call would compact again: these steps."""

        def __init__(self, steps: tuple[StepName, ...]) -> None:
            super().__init__()
            self.steps = steps

    def __init__(
        self,
        start: InspectorStart,
        source: ContextSource | None,
        *,
        id: str | None = None,
        extra_views: Sequence[Widget] = (),
    ) -> None:
        super().__init__(id=id)
        self.start = start
        self.source = source
        """What the inspector asks (None until `attach`: the agent is still being built)."""
        self.extra_views = tuple(extra_views)
        """Views of a host's own beside the three (the proxy's diff): each by its id, after the timeline in f2's round."""
        own = AGENT_VIEWS if not start.watched else ()
        self.view_names = (*VIEWS, *own, *(str(view.id) for view in self.extra_views))
        self.request_extra = dict(start.request_extra)
        self.history = HistoryModel(start.messages, start.chars)
        """The UI's one copy of the history, the splices applied once (tui/history_model.py)."""
        self.next_count: TokenCount | None = None
        """The last count of the next request (None until counted, and after a reset)."""
        self.preview: NextCallPreview | None = None
        self._warn_recompaction = False
        self.opener = ArchiveOpener(self, start.archive, self._request_restore, self.summary_of)
        self._notes_line: NotesLine | None = None
        self._views_mounted: AwaitMount | None = None
        """The mount of the views the first frame does not show (None until it starts)."""

    def compose(self) -> ComposeResult:
        yield ContextGauge(id="gauge")  # the notes line goes under it once there are notes (`notes_line`)
        with ContentSwitcher(initial="tree", id="views"):
            yield MessageTree(self.start.archive, self.start.messages, chars=self.start.chars, id="tree")
            yield from self.extra_views

    def on_mount(self) -> None:
        start = self.start
        gauge = self.gauge
        gauge.border_title = "Context"
        gauge.configure(start.limit, start.target_ratio, offline=start.offline, watched=start.watched)
        gauge.history_changed(start.chars, len(start.messages))
        gauge.steering(paused=start.paused)
        if start.samples:
            from core.usage.timeline import session_cost

            gauge.sampled(start.samples[-1], session_cost(start.samples))
        self.call_after_refresh(self._ensure_views)  # after the first frame is painted

    def _ensure_views(self) -> None:
        """Mount the views the first frame does not show, hidden (once; they are in the DOM, with
        their state, as soon as this returns: their own compose follows)."""
        if self._views_mounted is not None:
            return
        from tui.widgets.breakdown import BreakdownView
        from tui.widgets.compaction_log import CompactionLog
        from tui.widgets.dropped_view import DroppedView
        from tui.widgets.facts_view import FactsView
        from tui.widgets.search_view import SearchView
        from tui.widgets.timeline import TimelineView

        start = self.start
        views: list[Widget] = [
            BreakdownView(id="breakdown"),
            TimelineView(limit=None if start.watched else start.limit, id="timeline"),
        ]
        if not start.watched:
            views += [
                DroppedView(start.ledger, id="dropped"),
                FactsView(start.facts, id="facts"),
                SearchView(id="search"),
            ]
        for view in views:
            view.display = False
        self.mount(CompactionLog(id="steps"))  # under the views; hidden until a step runs (its DEFAULT_CSS)
        self._views_mounted = self.views.mount(*views)
        self.breakdown_view.border_title = "Breakdown · f2 → timeline"
        after_timeline = self.view_names[(self.view_names.index("timeline") + 1) % len(self.view_names)]
        self.timeline_view.border_title = f"Timeline · f2 → {after_timeline}"
        for name in AGENT_VIEWS if not start.watched else ():
            after = self.view_names[(self.view_names.index(name) + 1) % len(self.view_names)]
            self.query_one(f"#{name}").border_subtitle = f"f2 → {after}"
        self.timeline_view.set_samples(start.samples)

    async def mount_views(self) -> None:
        """`_ensure_views`, and wait until the views are mounted (before one is shown or focused)."""
        self._ensure_views()
        if self._views_mounted is not None:
            await self._views_mounted

    def attach(self, source: ContextSource, extra: dict[str, int]) -> None:
        """The agent is built (after the first frame): ask it from now on; `extra` is what its
        requests carry beside the history."""
        self.source = source
        self.set_request_extra(extra)

    def begin(self) -> None:
        """After the first frame: the model's window and the first forecast."""
        self.fetch_window()
        self.refresh_forecast(debounce=0.0)

    # --- the widgets --------------------------------------------------------------------------------

    @property
    def gauge(self) -> ContextGauge:
        return self.query_one("#gauge", ContextGauge)

    @property
    def message_tree(self) -> MessageTree:
        return self.query_one("#tree", MessageTree)

    @property
    def views(self) -> ContentSwitcher:
        return self.query_one("#views", ContentSwitcher)

    @property
    def breakdown_view(self) -> BreakdownView:
        self._ensure_views()
        return cast("BreakdownView", self.query_one("#breakdown"))

    @property
    def timeline_view(self) -> TimelineView:
        self._ensure_views()
        return cast("TimelineView", self.query_one("#timeline"))

    @property
    def dropped_view(self) -> DroppedView:
        self._ensure_views()
        return cast("DroppedView", self.query_one("#dropped"))

    @property
    def facts_view(self) -> FactsView:
        self._ensure_views()
        return cast("FactsView", self.query_one("#facts"))

    @property
    def search_view(self) -> SearchView:
        self._ensure_views()
        return cast("SearchView", self.query_one("#search"))

    @property
    def notes_line(self) -> NotesLine:
        """The line of the model's notes under the gauge, mounted the first time it is asked for (the
        first frame, and a session without notes, do without it)."""
        if self._notes_line is None:
            from tui.widgets import notes_line

            self._notes_line = notes_line.NotesLine(id="notes")
            self.mount(self._notes_line, after=self.gauge)
        return self._notes_line

    @property
    def steps(self) -> CompactionLog:
        self._ensure_views()
        return cast("CompactionLog", self.query_one("#steps"))

    # --- the core's events --------------------------------------------------------------------------

    def history_changed(self, event: HistoryChanged) -> None:
        self.history.apply(event.changes, event.chars)
        self.message_tree.push(event.changes, event.chars)
        self.gauge.history_changed(event.chars, event.length)
        if event.reason == "undo":
            self.gauge.undone()
        if not self.start.watched:
            self.dropped_view.apply(event.ledger)
            self.facts_view.apply(event.facts)
        if self.views.current == "breakdown":
            self._paint_breakdown()
        if self.source is None or not self.source.running:  # a turn's end asks once (turn_ended)
            self.refresh_forecast()

    def notes_changed(self, event: NotesChanged) -> None:
        """The note tool changed the model's notes: the line under the gauge says so."""
        self._show_notes(event.notes, event.limit)

    def set_notes(self, notes: Sequence[str], limit: int) -> None:
        """The notes as they are (at the start, after a resume or a new session)."""
        self._show_notes(notes, limit)

    def _show_notes(self, notes: Sequence[str], limit: int) -> None:
        if notes or self._notes_line is not None:  # no line to mount while there are no notes
            self.notes_line.set_notes(notes, limit)

    def set_archive(self, archive: Archive) -> None:
        """The archive the tree resolves markers through and the opener opens from (the agent's,
        once built: the first frame of a fresh session shows an empty history without it)."""
        self.opener.archive = archive
        self.message_tree.use_archive(archive)

    def set_searcher(self, searcher: Searcher) -> None:
        """What answers the search view (the agent, once built)."""
        if not self.start.watched:
            self.search_view.searcher = searcher

    def step(self, event: CompactionStep) -> None:
        self.gauge.step(event)
        self.steps.add_step(event)
        if event.cleared:
            self.message_tree.mark_cleared(event.cleared)

    def measured(self, event: ContextMeasured) -> None:
        self.gauge.measured(event)

    def held(self, event: CompactionHeld) -> None:
        """Cache-aware timing: these steps wait for the cache (until it is cold or the ceiling is reached)."""
        self.gauge.held("cache-aware", event.steps)

    def sampled(self, event: ContextSampled) -> None:
        self.add_sample(event.sample)
        self.steps.sampled(event.sample)
        self.gauge.sampled(event.sample, event.session_cost)

    def add_sample(self, sample: ContextSample) -> None:
        """One more call on the timeline."""
        self.timeline_view.add_sample(sample)

    def turn_began(self) -> None:
        """A turn (or a compaction) starts: until it ends, the inspector learns from its events only."""
        self.gauge.turn_started()

    def turn_ended(self) -> None:
        self.gauge.flush()
        self.refresh_forecast()

    def replace_history(
        self, messages: Sequence[Message_], chars: int, samples: Sequence[ContextSample] = ()
    ) -> None:
        """Show another history altogether, with its calls (the proxy view switching conversations)."""
        self.session_started()
        self.timeline_view.set_samples(samples)
        if samples:
            from core.usage.timeline import session_cost

            self.gauge.sampled(samples[-1], session_cost(samples))
        from core.events import HistoryChanged, Splice

        self.history_changed(
            HistoryChanged(
                length=len(messages),
                chars=chars,
                changes=(Splice(0, len(self.history), tuple(messages)),),
                reason="replace",
            )
        )

    def set_request_extra(self, extra: dict[str, int]) -> None:
        """What the request carries beside the history now (the proxy's system prompt and tools per call)."""
        self.request_extra = dict(extra)
        if self.views.current == "breakdown":
            self._paint_breakdown()

    def session_started(self) -> None:
        """A new or resumed session: no calls, no steps yet (its HistoryChanged brings the history)."""
        self.gauge.reset()
        self.steps.reset()
        self.timeline_view.set_samples([])
        self.next_count = None
        self.gauge.flush()
        if not self.start.watched:  # the session's HistoryChanged brings its ledger and facts
            self.dropped_view.reset()
            self.facts_view.reset()

    def set_paused(self, paused: bool) -> None:
        self.gauge.steering(paused=paused)
        self.refresh_forecast(debounce=0.0)

    def expect_recompaction(self) -> None:
        """Say (a Recompaction message) if the next forecast shows the pipeline compacting again."""
        self._warn_recompaction = True

    # --- the one question to the core ------------------------------------------------------------------

    @work(exclusive=True, group="forecast", exit_on_error=False, description="forecast the next call")
    async def refresh_forecast(self, debounce: float = FORECAST_DEBOUNCE) -> None:
        """Ask the core what the next call would be (exclusive: a newer change cancels this one while
        it waits); nothing comes back while a turn runs."""
        if self.source is None:
            return
        from core.events import ContextMeasured, NextCallPreview

        async for item in self.source.forecast(debounce):
            if isinstance(item, NextCallPreview):
                self._show_preview(item)
            elif isinstance(item, ContextMeasured):
                self.gauge.measured(item)
                self.gauge.flush()
            else:
                self.next_count = item
                self.gauge.counted(item)
                if self.views.current == "breakdown":
                    self._paint_breakdown()

    def _show_preview(self, preview: NextCallPreview) -> None:
        from tui.screens.preview import LOSSY, preview_summary

        self.preview = preview
        steps = preview.steps
        line = preview_summary(steps) if steps else ""
        if preview.server:  # a server engine: what the API does on its side too
            line = f"{line} · {preview.server}" if line else f"next call: {preview.server}"
        if preview.at_risk:  # before a summary: what only the summary could keep
            constraints = [fact for fact in preview.at_risk if fact.kind == "constraint"]
            line += (
                f" · ⚠ {plural(len(preview.at_risk), 'fact')} ({plural(len(constraints), 'constraint')}) "
                "only the summary could keep"
            )
        self.gauge.steering(
            paused=preview.paused, preview=line, warning=any(step.step == LOSSY for step in steps)
        )
        self.message_tree.set_marks(preview.pinned, preview.shortened)
        if not self.start.offline:
            self.gauge.held(preview.timing, preview.held)
        if self._warn_recompaction:
            self._warn_recompaction = False
            if preview.fired and not preview.paused:
                self.post_message(self.Recompaction(preview.fired))

    @work(exclusive=True, group="window", exit_on_error=False, description="the model's window")
    async def fetch_window(self) -> None:
        if self.source is not None:
            self.gauge.windowed(await self.source.window())

    # --- the views ----------------------------------------------------------------------------------

    def show_view(self, name: str, *, focus: bool = False) -> None:
        """Switch to `name` (one of `view_names`); `focus` moves the focus to it (not for the tree)."""
        self.views.current = name
        if name == "breakdown":
            self._paint_breakdown()
        if focus and name != "tree":  # after the switch is painted: a hidden widget takes no focus
            target = (
                self.breakdown_view.query_one("#breakdown-table")
                if name == "breakdown"
                else self.search_view.query_input
                if name == "search"
                else self.query_one(f"#{name}")
            )
            self.call_after_refresh(target.focus)

    @property
    def next_view(self) -> str:
        names = self.view_names
        current = self.views.current if self.views.current in names else "tree"
        return names[(names.index(current) + 1) % len(names)]

    def _paint_breakdown(self) -> None:
        found = self.next_count
        self.breakdown_view.follow(
            self.history.breakdown,
            tokens=found.tokens if found is not None else None,
            exact=found is not None and found.exact,
            request_extra=self.request_extra,
        )

    def select_message(self, index: int, block: int | None) -> None:
        """Show the tree with its cursor on message `index` (and its block, expanded)."""
        self.show_view("tree")
        self.call_after_refresh(self.message_tree.select_entry, index, block)

    # --- opening what a node or a log line points at -----------------------------------------------------

    @on(MessageTree.OpenMarker)
    async def _open_marker(self, event: MessageTree.OpenMarker) -> None:
        await self.opener.open_marker(event.info)

    @on(MessageTree.OpenBlock)
    async def _open_block(self, event: MessageTree.OpenBlock) -> None:
        await self.opener.open_block(event.info)

    @on(MessageTree.Untrusted)
    def _untrusted(self, event: MessageTree.Untrusted) -> None:
        self.opener.untrusted(event.info)

    async def on_compaction_log_open_file(self, event: CompactionLog.OpenFile) -> None:
        await self.opener.open_step_file(event.step, event.path)

    # the views' messages (their handlers by name: the views' modules load after the first frame)

    def on_breakdown_view_selected(self, event: BreakdownView.Selected) -> None:
        if event.message is not None:
            self.select_message(event.message, event.block)

    async def on_dropped_view_open(self, event: DroppedView.Open) -> None:
        await self.opener.open_step_file(event.entry.step, event.entry.path or "")

    def on_dropped_view_restore(self, event: DroppedView.Restore) -> None:
        if event.entry.path is not None:
            self._request_restore(event.entry.path)

    async def on_facts_view_open(self, event: FactsView.Open) -> None:
        await self.opener.open_step_file("", event.fact.path or "")

    async def on_search_view_open(self, event: SearchView.Open) -> None:
        await self.opener.open_hit(event.hit.path, event.hit.line)

    def run_search(self, query: str) -> None:
        """Show the search view with `query` run (`/search QUERY`)."""
        self.show_view("search", focus=True)
        self.search_view.run_query(query)

    def summary_of(self, transcript: str) -> str | None:
        """The summary now in context that replaced `transcript` (the UI's history)."""
        summary = None
        for message in self.history.messages:
            content = message.get("content")
            texts = (
                [content]
                if isinstance(content, str)
                else [block.get("text") for block in content or [] if isinstance(block, dict)]
            )
            for text in texts:
                marker = parse_marker(text)
                if marker is not None and marker.summary is not None and marker.path == transcript:
                    summary = marker.summary
        return summary

    def _request_restore(self, path: str) -> None:
        self.post_message(self.RestoreRequested(path))


def request_extra(system_prompt: str, tool_schemas: Sequence[Any]) -> dict[str, int]:
    """The characters a request carries beside the history, for the breakdown's request line."""
    return {
        "system": len(system_prompt),
        "tools": len(json.dumps(list(tool_schemas), default=str, ensure_ascii=False)),
    }
