"""ProxyScreen: `ctxtui proxy`'s live view: the inspector without the chat, for any client's calls.

The data flow is one way. A worker (`follow`) iterates the watch's events (`Watch.events()`, or
`ProxyThread.events()` when the proxy runs on a loop of its own) and posts one message per event
to this screen; the `@on` handlers hand each to the widgets, which own their state:
`ConversationList` (every conversation and its calls), `ProxyStatus` (the totals), the `Inspector`
(message tree and breakdown of the shown conversation's latest request, applied from the
request's splices; the timeline of its calls) and `CallDiffView` (two of its calls compared). The
inspector's questions (the request's size in tokens, the model's window) go to a `ProxyContext`
this screen hands each shown call; nothing here reads the watch back. Keys come from
tui/proxy_actions.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, OptionList

from core.archive import Archive
from core.events import ContextSampled
from core.proxy.calls import CallFinished, CallStarted, ProxyCall, ProxyEvent, ProxyNotice
from core.proxy.context import ProxyContext
from core.sessions.audit import CompactionWatch, Finding, findings
from core.text import visible
from core.usage.prices import window_for
from tui.proxy_actions import proxy_availability, proxy_bindings
from tui.screens.archive import ArchiveScreen
from tui.widgets.call_diff import CallDiffView
from tui.widgets.conversations import ConversationCalls, ConversationList
from tui.widgets.inspector import Inspector, InspectorStart
from tui.widgets.proxy_status import ProxyAbout, ProxyStatus
from tui.widgets.timeline import TimelineView

EventSource = Callable[[], AsyncGenerator[ProxyEvent, None]]
NARROW_WIDTH = 110
SHORT_HEIGHT = 34


class ProxyMessage(Message, bubble=False):
    """One of the watch's events, posted by the `follow` worker to the screen that runs it."""


@dataclass
class CallStartedMessage(ProxyMessage, bubble=False):
    event: CallStarted


@dataclass
class CallFinishedMessage(ProxyMessage, bubble=False):
    event: CallFinished


@dataclass
class ProxyNoticeMessage(ProxyMessage, bubble=False):
    event: ProxyNotice


def wrap(event: ProxyEvent) -> ProxyMessage:
    if isinstance(event, CallStarted):
        return CallStartedMessage(event)
    if isinstance(event, CallFinished):
        return CallFinishedMessage(event)
    return ProxyNoticeMessage(event)


def request_extra(call: ProxyCall) -> dict[str, int]:
    """The characters the request carries beside its messages (the breakdown's system and tools rows)."""
    extra = {}
    for name, part in (("system", call.system), ("tools", call.tools)):
        if part:
            extra[name] = (
                len(part) if isinstance(part, str) else len(json.dumps(part, default=str, ensure_ascii=False))
            )
    return extra


class ProxyScreen(Screen[None]):
    """The layout, the keys of tui/proxy_actions.py and the routing of the watch's events."""

    BINDINGS: ClassVar[list[BindingType]] = list(proxy_bindings(app_wide=False))

    def __init__(
        self,
        events: EventSource,
        about: ProxyAbout,
        archive: Archive,
        *,
        limit: int,
        target_ratio: float = 0.8,
    ) -> None:
        super().__init__(id="proxy-screen")
        self.events = events
        self.about = about
        self.archive = archive
        self.limit = limit
        self.target_ratio = target_ratio
        self.context = ProxyContext(limit)
        self.shown_conversation: int | None = None
        self.shown_call: ProxyCall | None = None
        """The call the tree and the breakdown show (the shown conversation's latest)."""
        self.events_seen = 0
        """Events handled so far (tests wait on it)."""
        self.audits: dict[int, CompactionWatch] = {}
        """Each conversation's compactions, as its calls end (`inspect --audit`'s rules, live)."""
        self.findings: dict[int, list[Finding]] = {}

    # --- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        start = InspectorStart(
            archive=self.archive,
            messages=[],
            chars=2,
            limit=self.limit,
            target_ratio=self.target_ratio,
            watched=True,
        )
        yield ProxyStatus(self.about, id="proxy-status")
        with Horizontal(id="proxy-main"):
            yield ConversationList(id="conversations")
            yield Inspector(start, self.context, id="inspector", extra_views=[CallDiffView(id="diff")])
        yield Footer(compact=True)

    @property
    def conversations(self) -> ConversationList:
        return self.query_one("#conversations", ConversationList)

    @property
    def inspector(self) -> Inspector:
        return self.query_one("#inspector", Inspector)

    @property
    def diff_view(self) -> CallDiffView:
        return self.query_one("#diff", CallDiffView)

    @property
    def status(self) -> ProxyStatus:
        return self.query_one("#proxy-status", ProxyStatus)

    @property
    def current_view(self) -> str:
        return str(self.inspector.views.current or "tree")

    def on_mount(self) -> None:
        self.conversations.border_title = "Conversations · none yet"
        self.inspector.message_tree.border_title = "Messages · waiting for the first call"
        self.layout_for(self.app.size.width, self.app.size.height)
        self.inspector.message_tree.focus()
        self.inspector.begin()
        self.follow()

    def on_resize(self, event: events.Resize) -> None:
        self.layout_for(event.size.width, event.size.height)

    def layout_for(self, width: int, height: int) -> None:
        self.set_class(width < NARROW_WIDTH, "-narrow")
        short = height < SHORT_HEIGHT
        self.inspector.set_class(short, "-short")
        self.inspector.gauge.dense = short

    # --- the watch's events ------------------------------------------------------------------------

    @work(exclusive=True, group="proxy-events", exit_on_error=False, description="follow the proxy's calls")
    async def follow(self) -> None:
        """Post one message per event of the watch, in order, until the proxy stops."""
        async with contextlib.aclosing(self.events()) as stream:
            async for event in stream:
                self.post_message(wrap(event))

    @on(CallStartedMessage)
    def _call_started(self, message: CallStartedMessage) -> None:
        call = message.event.call
        conversation = self.conversations.call_started(call)
        self.status.call_started(call)
        if self.shown_conversation is None:
            self.show_conversation(conversation.number)
        elif call.conversation == self.shown_conversation:
            self._follow_call(call, conversation)
        self.events_seen += 1

    def _follow_call(self, call: ProxyCall, conversation: ConversationCalls) -> None:
        """A new call of the shown conversation: its request's splices go to the tree and the breakdown."""
        shown = self.shown_call
        self.shown_call = call
        self.context.follow(call)
        if shown is not None and call.diff.previous == shown.id:
            self.inspector.history_changed(call.diff.history_changed(call.messages))
            self.inspector.add_sample(conversation.sample(call))
            self.diff_view.call_started(call)
        else:  # not the call the tree shows next to: show the conversation afresh
            self.inspector.replace_history(call.messages, call.chars, conversation.samples())
            self.diff_view.show_calls(conversation.calls)
        self.inspector.set_request_extra(request_extra(call))
        if shown is None or shown.model != call.model:
            self.inspector.fetch_window()

    @on(CallFinishedMessage)
    def _call_finished(self, message: CallFinishedMessage) -> None:
        call = message.event.call
        conversation = self.conversations.call_finished(call)
        self.status.call_finished(call)
        self._audit(call)
        if conversation is not None and call.conversation == self.shown_conversation:
            self.diff_view.call_finished(call)
            sample = conversation.sample(call)
            if self.shown_call is not None and self.shown_call.id == call.id:
                self.shown_call = call
                self.context.follow(call)
                self.inspector.sampled(ContextSampled(sample, conversation.cost))
                self.inspector.refresh_forecast(debounce=0.0)
            else:
                self.inspector.add_sample(sample)
        self.events_seen += 1

    def _audit(self, call: ProxyCall) -> None:
        """The audit's rules on the call's conversation: a new finding is said once (its sentence, as
        data), and the status line counts the shown conversation's."""
        watch = self.audits.setdefault(call.conversation, CompactionWatch())
        tokens = call.usage.prompt_figure if call.usage is not None else None
        if watch.add(call.messages, tokens) is None:
            return
        window = window_for(call.model).tokens if call.model else None
        found = findings(watch.compactions, window)
        known = self.findings.get(call.conversation, [])
        self.findings[call.conversation] = found
        for finding in found[len(known) :]:
            self.notify(visible(finding.sentence or finding.detail), severity="warning", markup=False)
        if call.conversation == self.shown_conversation:
            self.status.audited(found)

    @on(ProxyNoticeMessage)
    def _notice(self, message: ProxyNoticeMessage) -> None:
        self.status.noticed()
        self.notify(visible(message.event.message), severity="warning", markup=False)
        self.events_seen += 1

    def show_conversation(self, number: int) -> None:
        """Every view shows conversation `number`: its latest request, its calls, their diff."""
        conversation = self.conversations.conversations.get(number)
        if conversation is None:
            return
        self.shown_conversation = number
        self.conversations.show(number)
        self.status.audited(self.findings.get(number, []))
        call = conversation.latest
        self.shown_call = call
        self.context.follow(call)
        self.inspector.replace_history(call.messages, call.chars, conversation.samples())
        self.inspector.set_request_extra(request_extra(call))
        self.inspector.fetch_window()
        self.diff_view.show_calls(conversation.calls)

    # --- what the widgets ask for ------------------------------------------------------------------

    @on(ConversationList.Chosen)
    def _chosen(self, message: ConversationList.Chosen) -> None:
        if message.number != self.shown_conversation:
            self.show_conversation(message.number)

    @on(CallDiffView.Open)
    async def _open_row(self, message: CallDiffView.Open) -> None:
        await self.app.push_screen(ArchiveScreen(message.title, message.text))

    @on(TimelineView.Selected)
    def _timeline_selected(self, message: TimelineView.Selected) -> None:
        """A call chosen in the timeline is the one the diff compares (with the call before it)."""
        self.diff_view.compare(message.sample.call - 1)

    @on(Inspector.RestoreRequested)
    def _restore_requested(self, message: Inspector.RestoreRequested) -> None:
        self.notify(
            "the proxy only watches: restore it from the ctxtui session that archived it",
            severity="warning",
            markup=False,
        )

    # --- actions (described in tui/proxy_actions.py) -------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.app.screen is not self:
            return False
        return proxy_availability(action, self)

    async def action_next_view(self) -> None:
        await self.action_show_view(self.inspector.next_view)

    async def action_show_view(self, name: str) -> None:
        inspector = self.inspector
        await inspector.mount_views()
        inspector.show_view(name)
        if name == "tree":
            inspector.message_tree.focus()
        elif name == "breakdown":
            inspector.breakdown_view.query_one("#breakdown-table", OptionList).focus()
        elif name == "timeline":
            inspector.timeline_view.focus()
        else:
            self.diff_view.focus_rows()
        self.refresh_bindings()

    def action_focus_conversations(self) -> None:
        self.conversations.focus()

    def action_diff_call(self, step: int) -> None:
        self.diff_view.move_later(step)

    def action_diff_base(self, step: int) -> None:
        self.diff_view.move_base(step)

    def action_toggle_keys(self) -> None:
        if self.app.screen.query("HelpPanel"):
            self.app.action_hide_help_panel()
        else:
            self.app.action_show_help_panel()
