"""MainScreen: the chat on the left, the context inspector on the right, and the turn that feeds them.

The data flow is one way. The prompt posts `ChatInput.Submitted`; `submit` starts the turn worker
(`drive`), which iterates `agent.run_turn` (or `agent.compact`) inside `contextlib.aclosing` and
posts one `tui.messages` message per core event to this screen; the `@on` handlers below hand each
to the widget that shows it, through that widget's public methods. Widgets never touch the history:
they ask the agent (compact, new session) and show the events that come back. The actions come from
`tui.actions` (bindings, availability, slash commands, help).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import ContentSwitcher, Footer

from core.agent import Agent
from core.archive import ArchivedFile, ArchiveError
from core.breakdown import Breakdown
from core.counting import model_window
from core.events import AgentEvent, CompactionStep, HistoryChanged, Notice
from core.markers import parse_marker
from core.session import SessionInfo, list_sessions
from core.steering import SteeringError
from core.text import visible
from core.usage import TokenCount, session_cost
from tui import actions
from tui import messages as msg
from tui.format import count, plural, transcript_text
from tui.screens.archive import ArchiveScreen
from tui.screens.archive_list import ArchiveListScreen
from tui.screens.compact_prompt import CompactPromptScreen
from tui.screens.oversize import OversizeScreen
from tui.screens.permission import PermissionScreen
from tui.screens.preview import LOSSY, PreviewScreen, preview_summary
from tui.screens.sessions import SessionsScreen
from tui.screens.summary_review import SummaryReviewScreen
from tui.widgets.breakdown import BreakdownView
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_pane import ChatPane
from tui.widgets.compaction_log import CompactionLog
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree, NodeInfo
from tui.widgets.timeline import TimelineView
from tui.widgets.title_bar import TitleBar

STEERING_WITH_ARGUMENT = ("toggle_pin", "unpin", "drop", "restore")
"""Steering actions whose slash command takes an argument (else they act on the tree's selection)."""
PREVIEW_DEBOUNCE = 0.25

NARROW_WIDTH = 110
SHORT_HEIGHT = 34
MIN_INSPECTOR = 28
MIN_CHAT = 30

COUNT_DEBOUNCE = 0.4
"""Seconds a history change waits before the next request is counted (a newer change cancels it)."""
VIEWS = ("tree", "breakdown", "timeline")
SUMMARY_STEPS = ("compact_history", "reactive_compact")

MARKER_TITLES = {
    "placeholder": "↩ archived tool result",
    "persisted": "⇲ persisted output (full text)",
    "compacted": "Σ compacted summary · transcript before compaction",
    "reactive": "Σ reactive compact · transcript before compaction",
}


def permission_mode(agent: Agent) -> str:
    """"preset" (--yes), "session" (bash allowed for this session) or "ask"."""
    if agent.allow_all:
        return "preset"
    return "session" if "bash" in agent.allowed_for_session else "ask"


class MainScreen(Screen[None]):
    """The layout, the actions of `tui.actions` and the handlers of the core's events."""

    BINDINGS: ClassVar[list[BindingType]] = list(actions.bindings(app_wide=False))

    busy: reactive[bool] = reactive(False)
    inspector_visible: reactive[bool] = reactive(True)
    inspector_width: reactive[int] = reactive(60)

    def __init__(self, agent: Agent) -> None:
        super().__init__(id="main-screen")
        self.agent = agent
        self.turn_idle = asyncio.Event()
        self.turn_idle.set()
        self.turns_completed = 0
        self._activity = "idle"
        self._inspector_choice: bool | None = None
        self._preview_timer: Timer | None = None
        self.preview_steps: list[CompactionStep] = []
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

    def action_compact(self) -> None:
        if self.busy:
            self.notify("A turn is running: compact when it is done (esc cancels it).", severity="warning")
            return

        def chosen(focus: str | None) -> None:
            if focus is not None:
                self.review_compact(focus or None)

        self.app.push_screen(CompactPromptScreen(), callback=chosen)

    def action_compact_now(self) -> None:
        self.start_compact(None)

    def action_archive(self) -> None:
        """The archive list; the file chosen opens in a viewer, and closing it comes back to the list."""

        async def chosen(archived: ArchivedFile | None) -> None:
            if archived is not None:
                title = "Σ transcript" if archived.kind == "transcript" else "↩ archived tool result"
                await self.open_archived(archived, title, then=self.action_archive)

        self.app.push_screen(ArchiveListScreen(self.agent.archive.list_files(), restore=self._restore_path),
                             callback=chosen)

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

    # --- sending ---------------------------------------------------------------------------------

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        await self.submit(event.text)

    async def submit(self, text: str) -> bool:
        """Run `text` as a user turn (or a slash command). False when a turn is already running."""
        stripped = text.strip()
        if stripped.startswith("/") and await self._slash(stripped):
            return True
        if self.busy:
            self.notify("A turn is running: wait for it, or press esc to cancel it.", severity="warning")
            return False
        limit = self.agent.compactor.settings.context_char_limit
        size = len(json.dumps(text, ensure_ascii=False))
        if size > limit:
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

    # --- core events -----------------------------------------------------------------------------

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

    @work(exclusive=True, group="measure", exit_on_error=False, description="measure the context")
    async def measure_context(self) -> None:
        """Exact figures (with the tiktoken estimate) once a turn is over."""
        if self.agent.running:
            return
        measured = await self.agent.measure()
        if not self.agent.running:
            self.gauge.measured(measured)
            self.gauge.flush()

    # --- the inspector: opening what a node points at ---------------------------------------------

    def _not_archived(self, path: str, suffix: str = "") -> None:
        self.notify(f"not an archive path: {visible(path)}{suffix}", severity="warning", markup=False)

    @on(MessageTree.OpenMarker)
    async def _open_marker(self, event: MessageTree.OpenMarker) -> None:
        info = event.info
        marker = info.marker
        assert marker is not None
        archived = self.agent.archive.resolve(marker.path)
        if archived is None:
            self._not_archived(marker.path)
            return
        title = MARKER_TITLES.get(info.kind, "archive")
        if info.kind == "snip":
            title = f"✂ snipped messages ({plural(marker.count or 0, 'message')} archived) · transcript"
        await self.open_archived(archived, title, summary=marker.summary)

    async def open_archived(
        self, archived: ArchivedFile, title: str, summary: str | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        """Push an ArchiveScreen for a trusted archive file (a transcript is rendered readably);
        `then` runs when the viewer closes."""
        archive = self.agent.archive
        try:
            if archived.kind == "transcript":
                messages = await archive.read_transcript(archived.path)
                text = await asyncio.to_thread(transcript_text, messages)
                head = f"{plural(len(messages), 'message')} in this transcript.\n"
                if summary:
                    head += f"\nThe summary now in context:\n{summary}\n"
                text = head + text
                screen = ArchiveScreen(title, text, path=archived.path, size=archived.size)
            else:
                screen = await ArchiveScreen.for_file(title, archived.absolute, path=archived.path, size=archived.size)
                if archived.kind == "tool-result":
                    screen.restore = self._restore_path
        except (ArchiveError, OSError) as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return

        def closed(_: object) -> None:
            if then is not None:
                then()

        await self.app.push_screen(screen, callback=closed)

    @on(MessageTree.OpenBlock)
    async def _open_block(self, event: MessageTree.OpenBlock) -> None:
        info: NodeInfo = event.info
        where = f"#{info.index + 1}" + (f" block {info.block + 1}" if info.block is not None else "")
        await self.app.push_screen(ArchiveScreen(f"{where} · {info.kind} · in context now", info.text))

    @on(MessageTree.Untrusted)
    def _untrusted(self, event: MessageTree.Untrusted) -> None:
        self._not_archived(event.info.marker.path if event.info.marker else "?", " (shown as plain text, not opened)")

    @on(CompactionLog.OpenFile)
    async def _open_step_file(self, event: CompactionLog.OpenFile) -> None:
        archived = self.agent.archive.resolve(event.path)
        if archived is None:
            self._not_archived(event.path)
            return
        if event.step in SUMMARY_STEPS and archived.kind == "transcript":
            await self._open_summary_step(event.step, archived)
            return
        title = "Σ transcript written by the step" if archived.kind == "transcript" else "↩ archived tool result"
        await self.open_archived(archived, title)

    # --- the session picker ------------------------------------------------------------------------

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
    # --- steering: pin, drop, restore, undo, pause, preview, a summary reviewed first ---------------

    async def _steer(self, action: Callable[[], Awaitable[HistoryChanged | Notice | None]], nothing: str) -> None:
        """Run one steering call; its HistoryChanged / Notice goes out as the turn worker posts core events."""
        if self.busy:
            self.notify("A turn is running: steer the context when it is done.", severity="warning")
            return
        try:
            result = await action()
        except SteeringError as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return
        if not result:
            self.notify(nothing, markup=False)
            return
        message = msg.wrap(result)
        if message is not None:
            self.post_message(message)
        if isinstance(result, Notice):
            self.request_preview()  # pins change no message, only what the next call may do

    def _said(self, text: str) -> Callable[[HistoryChanged | None], Awaitable[HistoryChanged | Notice | None]]:
        async def then(changed: HistoryChanged | None) -> HistoryChanged | Notice | None:
            if changed:
                await self.chat.add_notice(text)
            return changed
        return then

    def _selected_id(self, given: str | None) -> str | None:
        tool_use_id = given or self.message_tree.selected_tool_use_id()
        if tool_use_id is None:
            self.notify("Select a tool result in the tree first (ctrl+t), or give its id: /pin toolu_…",
                        severity="warning", markup=False)
        return tool_use_id

    async def action_toggle_pin(self, tool_use_id: str | None = None) -> None:
        chosen = self._selected_id(tool_use_id)
        if chosen is None:
            return
        agent = self.agent

        async def pin() -> Notice:
            return await (agent.unpin(chosen) if chosen in agent.pinned else agent.pin(chosen))

        await self._steer(pin, "")

    async def action_unpin(self, tool_use_id: str | None = None) -> None:
        chosen = self._selected_id(tool_use_id)
        if chosen is not None:
            await self._steer(lambda: self.agent.unpin(chosen), "")

    async def action_drop(self, tool_use_id: str | None = None) -> None:
        chosen = self._selected_id(tool_use_id)
        if chosen is None:
            return

        async def drop() -> HistoryChanged | Notice | None:
            return await self._said(f"dropped the result of {visible(chosen)}: archived, a placeholder left")(
                await self.agent.drop(chosen))

        await self._steer(drop, "nothing to drop")

    async def action_restore(self, path: str | None = None) -> None:
        chosen = path or self.message_tree.selected_archive_path()
        if chosen is None:
            self.notify("Select a placeholder or persisted output in the tree, or give a path: /restore PATH",
                        severity="warning", markup=False)
            return
        await self._restore(chosen)

    def _restore_path(self, path: str) -> None:
        """Restore from the archive viewer or list (they close first)."""
        self.call_later(self._restore, path)

    async def _restore(self, path: str) -> None:
        async def restore() -> HistoryChanged | Notice | None:
            return await self._said(f"restored {visible(path)}: its full text is back in context")(
                await self.agent.restore(path))

        await self._steer(restore, "that text is already in context")

    async def action_undo(self) -> None:
        async def undo() -> HistoryChanged | Notice | None:
            changed = await self.agent.undo_compaction()
            if changed:
                await self.chat.add_notice("undid the last compaction: what it removed is back, in place")
                warning = await self.agent.recompact_warning()
                if warning is not None:
                    await self.chat.add_notice(
                        f"{warning.message} (f5 pauses automatic compaction, ctrl+o compacts with a focus)",
                        warning=True)
            return changed

        await self._steer(undo, "no compaction to undo")

    async def action_toggle_pause(self) -> None:
        agent = self.agent
        agent.auto_compact = not agent.auto_compact
        paused = not agent.auto_compact
        self.gauge.steering(paused=paused)
        text = ("automatic compaction paused: the whole history goes to the model (reactive compaction still "
                "guards an API refusal; f5 resumes)" if paused else "automatic compaction resumed")
        await self.chat.add_notice(text, warning=paused)
        self.request_preview()

    async def action_preview(self) -> None:
        if self.busy:
            return
        try:
            steps = await self.agent.preview()
        except SteeringError as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return
        await self.app.push_screen(PreviewScreen(
            steps, chars=self.agent.chars, limit=self.agent.compactor.settings.context_char_limit,
            paused=not self.agent.auto_compact))

    def request_preview(self) -> None:
        """Preview the next call soon (debounced): the gauge's "next call" line and the tree's marks."""
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_DEBOUNCE, self.refresh_preview)

    @work(exclusive=True, group="preview", exit_on_error=False, description="preview the next call")
    async def refresh_preview(self) -> None:
        agent = self.agent
        if agent.running or self.busy:
            return
        steps = await agent.preview() if agent.auto_compact else []
        if agent.running:
            return
        self.preview_steps = steps
        files = {path for step in steps for path in step.files_written}
        shortened: set[str] = set()
        if files:
            for message in agent.messages:
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        tool_use_id = str(block.get("tool_use_id"))
                        if agent.archive.expected_tool_result_path(tool_use_id) in files:
                            shortened.add(tool_use_id)
        line = preview_summary(steps) if steps else ""
        self.gauge.steering(paused=not agent.auto_compact, preview=line,
                            warning=any(step.step == LOSSY for step in steps))
        self.message_tree.set_marks(agent.pinned, frozenset(shortened))

    @work(exclusive=True, group="draft", exit_on_error=False, description="draft the summary")
    async def review_compact(self, focus: str | None) -> None:
        """Summary first: draft it, show it for review (accept / edit / cancel), compact with that text."""
        if self.busy:
            return
        self.busy = True
        self.chat.set_activity("drafting the summary")
        try:
            draft = await self.agent.draft_summary(focus)
        except SteeringError as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return
        finally:
            self.busy = False
        screen = SummaryReviewScreen(draft, messages=len(self.agent.messages), chars=self.agent.chars, focus=focus)

        async def reviewed(text: str | None) -> None:
            if text is None:
                await self.chat.add_notice("compact cancelled: nothing changed")
            else:
                self.start_compact(focus, summary=text)

        await self.app.push_screen(screen, callback=reviewed)
    # --- the inspector's views: breakdown, timeline, exact counts (issue 9) ----------------------

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
        self.breakdown_view.border_title = "Breakdown · f2 tree · f4 timeline"
        self.timeline_view.border_title = "Timeline · f2 tree · f3 breakdown"
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
        order = ("tree", "breakdown", "timeline")
        current = self.views.current if self.views.current in order else "tree"
        following = order[(order.index(current) + 1) % len(order)]
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

    @on(msg.ContextSampled)
    def _sampled(self, message: msg.ContextSampled) -> None:
        sample = message.event.sample
        self.timeline_view.add_sample(sample)
        self.steps.sampled(sample)
        self.gauge.sampled(sample, session_cost(self.agent.timeline))

    @on(BreakdownView.Selected)
    def _breakdown_selected(self, event: BreakdownView.Selected) -> None:
        """A category or item chosen in the breakdown: show the tree with its cursor on that message."""
        if event.message is None:
            return
        self.show_view("tree")
        self.call_after_refresh(self._select_in_tree, event.message, event.block)

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

    async def _open_summary_step(self, step: str, archived: ArchivedFile) -> None:
        """A summary step's transcript, with the summary (decoded) that replaced it on top."""
        summary: str | None = None
        for message in self.agent.messages:
            content = message.get("content")
            texts = [content] if isinstance(content, str) else [
                block.get("text") for block in content or [] if isinstance(block, dict)
            ]
            for text in texts:
                marker = parse_marker(text)
                if marker is not None and marker.summary is not None and marker.path == archived.path:
                    summary = marker.summary
        title = MARKER_TITLES["compacted" if step == "compact_history" else "reactive"]
        if summary is None:
            title += " (its summary is no longer in context)"
        await self.open_archived(archived, title, summary=summary)

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
