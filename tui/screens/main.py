"""MainScreen: the chat on the left, the context inspector on the right, and the turn that feeds them.

The data flow is one way. The prompt posts `ChatInput.Submitted`; `submit` starts the turn worker
(`drive`), which iterates `agent.run_turn` (or `agent.compact`) inside `contextlib.aclosing` and
posts one `tui.messages` message per core event to this screen; the `@on` handlers below hand each
to the widget that shows it, through that widget's public methods. Widgets never touch the history:
they ask the agent (compact, new session) and show the events that come back. The actions come from
`tui.actions` (bindings, availability, slash commands, help).

This module is the layout and the routing: what the screen composes and how it lays out, and one
`@on` handler per message. The work is done by the parts it is assembled from, one job each:
`tui.screens.turn` (sending, the turn worker), `.steering` (pin, drop, restore, undo, pause, preview,
the reviewed summary), `.inspector_views` (tree, breakdown, timeline), `.opening` (the archive
viewers) and `.session_actions` (new session, resume); `.main_base` holds what they share.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.timer import Timer
from textual.widgets import ContentSwitcher, Footer

from core.agent import Agent
from core.history.categories import Breakdown
from core.text import visible
from core.usage.timeline import TokenCount, session_cost
from tui import actions
from tui import messages as msg
from tui.format import count, plural
from tui.screens.inspector_views import InspectorViews
from tui.screens.opening import ArchiveOpening
from tui.screens.permission import PermissionScreen
from tui.screens.session_actions import SessionActions
from tui.screens.steering import SteeringActions
from tui.screens.turn import TurnDriver
from tui.widgets.breakdown import BreakdownView
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_pane import ChatPane
from tui.widgets.compaction_log import CompactionLog
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree
from tui.widgets.timeline import TimelineView
from tui.widgets.title_bar import TitleBar

NARROW_WIDTH = 110
SHORT_HEIGHT = 34
MIN_INSPECTOR = 28
MIN_CHAT = 30


def permission_mode(agent: Agent) -> str:
    """"preset" (--yes), "session" (bash allowed for this session) or "ask"."""
    if agent.allow_all:
        return "preset"
    return "session" if "bash" in agent.allowed_for_session else "ask"


class MainScreen(TurnDriver, SteeringActions, InspectorViews, ArchiveOpening, SessionActions):
    """The layout, the actions of `tui.actions` and the handlers of the core's events."""

    BINDINGS: ClassVar[list[BindingType]] = list(actions.bindings(app_wide=False))

    def __init__(self, agent: Agent) -> None:
        super().__init__(id="main-screen")
        self.agent = agent
        self.turn_idle = asyncio.Event()
        self.turn_idle.set()
        self.turns_completed = 0
        self._activity = "idle"
        self._inspector_choice: bool | None = None
        self._preview_timer: Timer | None = None
        """The last preview of the next call (what the gauge line and the tree marks show)."""
        self._width_choice: int | None = None
        self.tracker = Breakdown(agent.messages)
        """The breakdown of the history, kept current from HistoryChanged splices (never re-walked)."""
        self.next_count: TokenCount | None = None
        self._history_at_start = (list(agent.messages), agent.chars)
        """What the chat shows after the first frame (a message sent before then is shown as it is sent)."""

    # --- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        model = self.agent.model
        yield TitleBar(str(self.agent.toolbox.workspace.root), model.label, model.offline)
        with Horizontal(id="main"):
            yield ChatPane(id="chat")
            with Vertical(id="inspector"):
                yield ContextGauge(id="gauge")
                with ContentSwitcher(initial="tree", id="views"):
                    yield MessageTree(
                        self.agent.archive,
                        lambda: self.agent.messages,
                        measure=self.agent.compactor.estimate_chars,
                        id="tree",
                    )
                    yield BreakdownView(id="breakdown")
                    yield TimelineView(limit=self.agent.compactor.settings.context_char_limit, id="timeline")
                yield CompactionLog(id="steps")
        yield ContextGauge(compact=True, id="mini-gauge")
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        settings = self.agent.compactor.settings
        gauge = self.gauge
        gauge.border_title = "Context"
        gauge.mirror = self.query_one("#mini-gauge", ContextGauge)
        gauge.configure(settings.context_char_limit, settings.micro_target_ratio, offline=self.agent.model.offline)
        gauge.history_changed(self.agent.chars, len(self.agent.messages))
        self.layout_for(self.app.size)
        self._show_activity()
        self.chat.input.focus()
        self.message_tree.request_sync()
        self.gauge.steering(paused=not self.agent.auto_compact)
        if self.agent.messages:
            self.request_preview()

    async def after_first_frame(self) -> None:
        """What the first frame does not need, run once it is painted (the app calls this from its
        Ready event): the chat's first blocks (Markdown), tiktoken, the views, the count and the window."""
        messages, chars = self._history_at_start
        if messages:
            await self._replay(messages, chars)
        else:
            await self.chat.add_welcome(self._welcome())
        self.measure_context()
        self._mount_views()

    async def _replay(self, messages: list[dict[str, Any]] | None = None, chars: int | None = None) -> None:
        messages = self.agent.messages if messages is None else messages
        chars = self.agent.chars if chars is None else chars
        where = f" from {self.agent.resumed_from}" if self.agent.resumed_from else ""
        await self.chat.replay(messages, notice=(
            f"resumed {plural(len(messages), 'message')} ({count(chars)} chars){where}: "
            "the chat shows the conversation, the inspector what sits in context"
        ))

    def _welcome(self) -> str:
        model = self.agent.model
        if model.offline:
            first = (
                f"**{model.label[:1].upper()}{model.label[1:]}**: it understands `help`, `read PATH`, `$ CMD`, "
                "`glob PATTERN`, `write PATH` + text, `compact [focus]` and runs the real tools. "
                "Set `ANTHROPIC_API_KEY` (without `--offline`) to talk to Claude."
            )
        else:
            first = f"Talking to **{model.name}**. Ask for anything in `{self.agent.toolbox.workspace.root}`."
        return (
            f"{first}\n\nThe inspector shows what sits in the model's context and what compaction did to it: "
            "`ctrl+t` browses the messages, `enter` opens what a marker points at. "
            "`ctrl+p` lists every command, `/help` the keys."
        )

    def on_resize(self, event: events.Resize) -> None:
        """Lay out for the new size (the event's, not `self.size`, which may still be the old one)."""
        self.layout_for(event.size)

    def layout_for(self, size: Size) -> None:
        width, height = size
        short = height < SHORT_HEIGHT
        self.query_one("#inspector").set_class(short, "-short")
        self.gauge.dense = short
        visible_now = self._inspector_choice if self._inspector_choice is not None else width >= NARROW_WIDTH
        preferred = self._width_choice if self._width_choice is not None else max(int(width * 0.4), 36)
        self.inspector_width = max(MIN_INSPECTOR, min(preferred, max(width - MIN_CHAT, MIN_INSPECTOR)))
        self.inspector_visible = visible_now

    def watch_inspector_visible(self, shown: bool) -> None:
        self.query_one("#inspector").display = shown
        self.query_one("#mini-gauge").display = not shown
        if not shown and self.message_tree.has_focus:
            self.chat.input.focus()
        self.refresh_bindings()

    def watch_inspector_width(self, width: int) -> None:
        self.query_one("#inspector").styles.width = width

    def watch_busy(self, busy: bool) -> None:
        self.chat.set_busy(busy, self._activity)
        self._show_activity()
        self.refresh_bindings()

    def _show_activity(self) -> None:
        bash = {"ask": "bash: ask", "session": "bash: allowed this session", "preset": "bash: pre-approved"}[
            permission_mode(self.agent)
        ]
        state = self._activity if self.busy else "idle"
        self.query_one(TitleBar).set_state(f"{state} · {bash}", self.busy)

    # --- typing goes to the prompt ----------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """A printable key the focused widget does not use goes to the prompt (it is never lost)."""
        if not event.is_printable or event.character is None:
            return
        prompt = self.chat.input
        focused = self.focused
        if focused is prompt:
            return
        if focused is not None and focused.check_consume_key(event.key, event.character):
            return
        if event.key in self.active_bindings:
            return  # the tree's space, a tool block's space: the focused widget uses it
        event.stop()
        event.prevent_default()
        prompt.focus()
        prompt.insert(event.character)

    # --- actions (described in tui/actions.py) ------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in actions.BY_NAME and self.app.screen is not self:
            return False  # a dialog is up: the footer below it shows none of these keys
        return actions.availability(action, self)

    def on_screen_suspend(self) -> None:
        self.refresh_bindings()

    def on_screen_resume(self) -> None:
        self.refresh_bindings()

    def action_toggle_inspector(self) -> None:
        self._inspector_choice = not self.inspector_visible
        self.layout_for(self.size)

    def action_resize_inspector(self, delta: int) -> None:
        if not self.inspector_visible:
            return
        self._width_choice = self.inspector_width + delta
        self.layout_for(self.size)
        self._width_choice = self.inspector_width

    def action_focus_tree(self) -> None:
        if self.message_tree.has_focus:
            self.chat.input.focus()
            return
        if not self.inspector_visible:
            self._inspector_choice = True
            self.layout_for(self.size)
        self.message_tree.focus()

    def action_toggle_tools(self) -> None:
        self.chat.toggle_tools()

    async def action_show_help(self) -> None:
        await self.chat.add_help(actions.help_markdown())

    def action_cancel_turn(self) -> None:
        for worker in self.workers:
            if worker.group in ("turn", "demo") and not worker.is_finished:
                worker.cancel()

    # --- routing: one handler per message (sending and core events, then the inspector's widgets) ----

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        await self.submit(event.text)

    @on(msg.TurnStarted)
    def _turn_started(self, message: msg.TurnStarted) -> None:
        self.gauge.turn_started()

    @on(msg.TextDelta)
    async def _text(self, message: msg.TextDelta) -> None:
        await self.chat.add_text(message.event.text)

    @on(msg.AssistantMessage)
    async def _assistant(self, message: msg.AssistantMessage) -> None:
        await self.chat.end_assistant(message.event.content)

    @on(msg.ToolCallStarted)
    async def _tool_started(self, message: msg.ToolCallStarted) -> None:
        event = message.event
        await self.chat.add_tool(event.tool_use_id, event.name, event.input)
        self.chat.set_activity(f"running {visible(event.name)}")

    @on(msg.PermissionRequested)
    async def _permission(self, message: msg.PermissionRequested) -> None:
        """Ask in a modal; the dialog answers the event's future (and closes itself if the turn closes)."""
        if message.event.reply.done():
            return
        self._set_asking(True)

        def answered(_: str | None) -> None:
            self._set_asking(False)
            self._show_activity()

        await self.app.push_screen(PermissionScreen(message.event), callback=answered)

    def _set_asking(self, asking: bool) -> None:
        self.chat.set_activity("waiting for your permission" if asking else self._activity)
        self.chat.set_waiting(asking)

    @on(msg.ToolCallFinished)
    async def _tool_finished(self, message: msg.ToolCallFinished) -> None:
        event = message.event
        await self.chat.finish_tool(
            event.tool_use_id, event.name, event.input, event.output, event.output_chars, event.duration,
            event.is_error,
        )
        self.chat.set_activity(self._activity)

    @on(msg.CompactionStep)
    async def _compaction(self, message: msg.CompactionStep) -> None:
        await self.chat.add_compaction(message.event)
        self.gauge.step(message.event)
        self.steps.add_step(message.event)

    @on(msg.ContextMeasured)
    def _measured(self, message: msg.ContextMeasured) -> None:
        self.gauge.measured(message.event)

    @on(msg.HistoryChanged)
    def _history_changed(self, message: msg.HistoryChanged) -> None:
        self.gauge.history_changed(message.event.chars, message.event.length)
        self.message_tree.request_sync()
        self.request_preview()
        self._views_history_changed(message)

    @on(msg.Notice)
    async def _notice(self, message: msg.Notice) -> None:
        await self.chat.add_notice(message.event.message, warning=message.event.kind != "info")

    @on(msg.ErrorEvent)
    async def _error(self, message: msg.ErrorEvent) -> None:
        await self.chat.add_error(message.event.message, message.event.kind)

    @on(msg.TurnFinished)
    async def _turn_finished(self, message: msg.TurnFinished) -> None:
        await self.chat.end_assistant()

    @on(msg.TurnCancelled)
    async def _turn_cancelled(self, message: msg.TurnCancelled) -> None:
        await self.chat.cancelled()

    @on(msg.TurnCrashed)
    async def _turn_crashed(self, message: msg.TurnCrashed) -> None:
        await self.chat.add_error(message.error, "internal error")

    @on(msg.TurnEnded)
    async def _turn_ended(self, message: msg.TurnEnded) -> None:
        await self.chat.end_assistant()
        self.gauge.flush()
        self.message_tree.request_sync()
        self.busy = False
        self._activity = "idle"
        self._show_activity()
        self.turns_completed += 1
        self.turn_idle.set()
        self.measure_context()
        self.request_preview()
        self._views_turn_ended()

    @on(msg.ContextSampled)
    def _sampled(self, message: msg.ContextSampled) -> None:
        sample = message.event.sample
        self.timeline_view.add_sample(sample)
        self.steps.sampled(sample)
        self.gauge.sampled(sample, session_cost(self.agent.timeline))

    @on(MessageTree.OpenMarker)
    async def _open_marker(self, event: MessageTree.OpenMarker) -> None:
        await self.open_marker(event.info)

    @on(MessageTree.OpenBlock)
    async def _open_block(self, event: MessageTree.OpenBlock) -> None:
        await self.open_block(event.info)

    @on(MessageTree.Untrusted)
    def _untrusted(self, event: MessageTree.Untrusted) -> None:
        self.untrusted(event.info)

    @on(CompactionLog.OpenFile)
    async def _open_step_file(self, event: CompactionLog.OpenFile) -> None:
        await self.open_step_file(event.step, event.path)

    @on(BreakdownView.Selected)
    def _breakdown_selected(self, event: BreakdownView.Selected) -> None:
        """A category or item chosen in the breakdown: show the tree with its cursor on that message."""
        if event.message is not None:
            self.select_message(event.message, event.block)

    # --- the demo --------------------------------------------------------------------------------

    @work(exclusive=True, group="demo", exit_on_error=False, description="demo")
    async def run_demo(self, commands: list[str], pause: float) -> None:
        """Type and send each command as a user would (tui/demo.py plays the script)."""
        from tui.demo import play

        try:
            await play(self, commands, pause)
        except asyncio.CancelledError:
            self.notify("Demo stopped.", title="demo", severity="warning")
            raise
