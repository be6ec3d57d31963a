"""CtxApp: chat with the agent on the left, the context inspector on the right.

One direction of data: a turn runs in a worker that iterates `agent.run_turn(text)` (inside
`contextlib.aclosing`, so a cancel closes the generator and the core repairs the history) and posts
one typed message per core event; the `@on` handlers below hand each to the widget that shows it.
Widgets never touch the history: they ask the agent (compact, new session) and re-read it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Footer
from textual.worker import Worker, WorkerState

from core.agent import Agent
from core.archive import ArchivedFile, ArchiveError
from core.events import AgentEvent
from tui import messages as msg
from tui.commands import CtxCommands
from tui.format import count, plural, transcript_text
from tui.screens.archive import ArchiveScreen
from tui.screens.archive_list import ArchiveListScreen
from tui.screens.compact_prompt import CompactPromptScreen
from tui.screens.permission import PermissionScreen
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_pane import ChatPane
from tui.widgets.compaction_log import CompactionLog
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree, NodeInfo
from tui.widgets.title_bar import TitleBar

NARROW_WIDTH = 110
SHORT_HEIGHT = 34
MIN_INSPECTOR = 28
MIN_CHAT = 30

HELP_TEXT = """\
**Keys**: `enter` send · `ctrl+j` new line · `↑/↓` earlier prompts · `esc` cancel the turn ·
`ctrl+b` inspector · `ctrl+t` tree ⇄ prompt · `ctrl+o` compact now · `ctrl+r` archive ·
`ctrl+g` expand/collapse tool calls · `ctrl+n` new session · `f8`/`f9` inspector narrower/wider ·
`ctrl+p` command palette · `ctrl+q` quit

**In the tree**: `enter` opens a placeholder / persisted output (the archived file), a snip marker or
summary (the archived transcript), or shows a block's text; `space` expands a message.

**Slash commands** (not sent to the model): `/compact [focus]`, `/new`, `/archive`, `/inspector`,
`/help`, `/quit`.
"""


class CtxApp(App[None]):
    """The ctxtui terminal app."""

    CSS_PATH = "app.tcss"
    TITLE = "ctxtui"
    COMMANDS = App.COMMANDS | {CtxCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True, tooltip="Cancel any turn, save the session, exit"),
        Binding("escape", "cancel_turn", "Cancel", id="cancel_turn", tooltip="Cancel the running turn"),
        Binding("ctrl+b", "toggle_inspector", "Inspector", id="toggle_inspector", tooltip="Show/hide the inspector"),
        Binding("ctrl+t", "focus_tree", "Tree", id="focus_tree", tooltip="Move focus between the prompt and the tree"),
        Binding("ctrl+o", "compact", "Compact", id="compact", tooltip="Compact the context now (optional focus)"),
        Binding("ctrl+r", "archive", "Archive", id="archive", tooltip="List the archived files"),
        Binding("ctrl+g", "toggle_tools", "Tools", id="toggle_tools", tooltip="Expand/collapse every tool call"),
        Binding("ctrl+n", "new_session", "New", id="new_session", tooltip="Start a new session (archives stay)"),
        Binding("f8", "resize_inspector(-4)", "Narrower", id="inspector_narrower", tooltip="Narrow the inspector"),
        Binding("f9", "resize_inspector(4)", "Wider", id="inspector_wider", tooltip="Widen the inspector"),
    ]

    busy: reactive[bool] = reactive(False)
    inspector_visible: reactive[bool] = reactive(True)
    inspector_width: reactive[int] = reactive(60)

    def __init__(
        self,
        agent: Agent,
        demo_commands: list[str] | None = None,
        demo_pause: float = 0.4,
    ) -> None:
        super().__init__()
        self.agent = agent
        self.demo_commands = list(demo_commands) if demo_commands else None
        self.demo_pause = demo_pause
        self.turn_idle = asyncio.Event()
        self.turn_idle.set()
        self._turn_worker: Worker[None] | None = None
        self._activity = "idle"
        self._inspector_choice: bool | None = None
        self._width_choice: int | None = None
        self._quitting = False
        self._agent_closed = False
        self._asking = False
        self.turns_completed = 0

    # --- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        model = self.agent.model
        yield TitleBar(str(self.agent.toolbox.workspace.root), model.label, model.offline)
        with Horizontal(id="main"):
            yield ChatPane(id="chat")
            with Vertical(id="inspector"):
                yield ContextGauge(id="gauge")
                yield MessageTree(
                    self.agent.archive,
                    lambda: self.agent.messages,
                    measure=self.agent.compactor.estimate_chars,
                    id="tree",
                )
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

    def on_mount(self) -> None:
        settings = self.agent.compactor.settings
        gauge = self.gauge
        gauge.border_title = "Context"
        gauge.mirror = self.query_one("#mini-gauge", ContextGauge)
        gauge.configure(settings.context_char_limit, settings.micro_target_ratio)
        gauge.history_changed(self.agent.chars, len(self.agent.messages))
        self._layout_inspector()
        self._show_activity()
        self.chat.input.focus()
        if not self.agent.messages:
            self.call_later(self.chat.add_welcome, self._welcome())
        else:
            self.call_later(
                self.chat.add_notice,
                f"resumed {plural(len(self.agent.messages), 'message')} "
                f"({count(self.agent.chars)} chars): the inspector shows them",
            )
        self.message_tree.request_sync()
        self.call_after_refresh(self.measure_context)  # tiktoken loads after the first frame
        if self.demo_commands:
            self.run_demo(self.demo_commands)

    def _welcome(self) -> str:
        if self.agent.model.offline:
            first = (
                "**Offline model** (no API key): it understands `help`, `read PATH`, `$ CMD`, "
                "`glob PATTERN`, `write PATH` + text, `compact [focus]` and runs the real tools. "
                "Set `ANTHROPIC_API_KEY` to talk to Claude."
            )
        else:
            first = f"Talking to **{self.agent.model.name}**. Ask for anything in `{self.agent.toolbox.workspace.root}`."
        return (
            f"{first}\n\nThe inspector shows what sits in the model's context and what compaction did to it: "
            "`ctrl+t` browses the messages, `enter` opens what a marker points at. "
            "`ctrl+p` lists every command, `/help` the keys."
        )

    def on_resize(self) -> None:
        self._layout_inspector()

    def _layout_inspector(self) -> None:
        width, height = self.size
        short = height < SHORT_HEIGHT
        self.query_one("#inspector").set_class(short, "-short")
        self.gauge.dense = short
        visible = self._inspector_choice if self._inspector_choice is not None else width >= NARROW_WIDTH
        preferred = self._width_choice if self._width_choice is not None else max(int(width * 0.4), 36)
        self.inspector_width = max(MIN_INSPECTOR, min(preferred, max(width - MIN_CHAT, MIN_INSPECTOR)))
        self.inspector_visible = visible

    def watch_inspector_visible(self, visible: bool) -> None:
        self.query_one("#inspector").display = visible
        self.query_one("#mini-gauge").display = not visible
        if not visible and self.message_tree.has_focus:
            self.chat.input.focus()

    def watch_inspector_width(self, width: int) -> None:
        self.query_one("#inspector").styles.width = width

    def watch_busy(self, busy: bool) -> None:
        self.chat.input.set_class(busy, "-busy")
        if busy:
            self.chat.indicator.start(self._activity)
        else:
            self.chat.indicator.stop()
        self._show_activity()
        self.refresh_bindings()

    @property
    def permission_mode(self) -> str:
        """"preset" (--yes), "session" (bash allowed for this session) or "ask"."""
        if self.agent.allow_all:
            return "preset"
        return "session" if "bash" in self.agent.allowed_for_session else "ask"

    def _show_activity(self) -> None:
        bash = {"ask": "bash: ask", "session": "bash: allowed this session", "preset": "bash: pre-approved"}[
            self.permission_mode
        ]
        state = self._activity if self.busy else "idle"
        self.query_one(TitleBar).set_state(f"{state} · {bash}", self.busy)

    # --- actions and their availability ------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "quit":
            return True
        if len(self.screen_stack) > 1 and action in {
            "cancel_turn", "toggle_inspector", "focus_tree", "compact", "archive", "toggle_tools",
            "new_session", "resize_inspector",
        }:
            return False
        if action == "cancel_turn":
            return self.busy
        if action in ("compact", "new_session"):
            return None if self.busy else True
        if action == "resize_inspector":
            return self.inspector_visible
        return True

    def palette_commands(self) -> list[tuple[str, str, str]]:
        """(name, help, action) for the command palette; only what makes sense now."""
        commands = []
        if self.busy:
            commands.append(("Cancel the running turn", "Esc: stop the turn; the history stays valid", "cancel_turn"))
        else:
            commands += [
                ("Compact context now…", "Summarise the history into one message (optional focus)", "compact"),
                ("Compact context now (no focus)", "Summarise the history right away", "compact_now"),
                ("New session", "Forget the history and start again (archives stay on disk)", "new_session"),
            ]
        commands += [
            ("Toggle inspector", "Show or hide the context gauge and message tree", "toggle_inspector"),
            ("Focus message tree", "Browse the messages in context", "focus_tree"),
            ("Archived files", "List everything compaction saved; open one", "archive"),
            ("Expand/collapse tool calls", "Show or hide every tool call's input and output", "toggle_tools"),
            ("Widen inspector", "Make the inspector wider", "resize_inspector(8)"),
            ("Narrow inspector", "Make the inspector narrower", "resize_inspector(-8)"),
            ("Help: keys and commands", "Show the keys and slash commands in the chat", "show_help"),
            ("Quit", "Cancel any turn, save the session and exit", "quit"),
        ]
        return commands

    def action_toggle_inspector(self) -> None:
        self._inspector_choice = not self.inspector_visible
        self._layout_inspector()

    def action_resize_inspector(self, delta: int) -> None:
        if not self.inspector_visible:
            return
        self._width_choice = self.inspector_width + delta
        self._layout_inspector()
        self._width_choice = self.inspector_width

    def action_focus_tree(self) -> None:
        if self.message_tree.has_focus:
            self.chat.input.focus()
            return
        if not self.inspector_visible:
            self._inspector_choice = True
            self._layout_inspector()
        self.message_tree.focus()

    def action_toggle_tools(self) -> None:
        self.chat.toggle_tools()

    async def action_show_help(self) -> None:
        from tui.widgets.chat_blocks import AssistantBlock

        await self.chat._add(AssistantBlock(HELP_TEXT, classes="help"))

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
                self.start_compact(focus or None)

        self.push_screen(CompactPromptScreen(), callback=chosen)

    def action_compact_now(self) -> None:
        self.start_compact(None)

    def action_archive(self) -> None:
        self.push_screen(ArchiveListScreen(self.agent.archive.list_files()))

    async def action_new_session(self) -> None:
        if self.busy:
            self.notify("A turn is running: press esc to cancel it first.", severity="warning")
            return
        changed = self.agent.new_session()
        await self.chat.clear()
        self.gauge.reset()
        self.query_one("#steps", CompactionLog).reset()
        self.gauge.history_changed(changed.chars, changed.length)
        self.gauge.flush()
        self.message_tree.request_sync()
        await self.chat.add_notice("new session: the history is empty (archived files stay on disk)")
        self._show_activity()
        self.chat.input.focus()

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
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.agent.aclose(), timeout=5)

    async def on_unmount(self) -> None:
        """However the app ends (quit, crash, ctrl+c twice), the session is flushed."""
        await self._close_agent()

    # --- sending ---------------------------------------------------------------------------------

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        await self.submit(event.text)

    async def submit(self, text: str) -> bool:
        """Run `text` as a user turn (or a slash command). False when a turn is already running."""
        stripped = text.strip()
        if stripped.startswith("/") and await self._slash(stripped):
            return True
        if self.busy or (self._turn_worker is not None and not self._turn_worker.is_finished):
            self.notify("A turn is running: wait for it, or press esc to cancel it.", severity="warning")
            return False
        await self.chat.add_user(text)
        self._begin("working")
        self._turn_worker = self.run_turn(text)
        return True

    async def _slash(self, command: str) -> bool:
        name, _, rest = command[1:].partition(" ")
        actions: dict[str, Callable[[], Any]] = {
            "help": self.action_show_help,
            "new": self.action_new_session,
            "archive": self.action_archive,
            "inspector": self.action_toggle_inspector,
            "quit": self.action_quit,
        }
        if name == "compact":
            if self.busy:
                self.notify("A turn is running: compact when it is done.", severity="warning")
            else:
                self.start_compact(rest.strip() or None)
            return True
        if name in actions:
            result = actions[name]()
            if asyncio.iscoroutine(result):
                await result
            return True
        return False

    def _begin(self, activity: str) -> None:
        self._activity = activity
        self.turn_idle.clear()
        self.busy = True

    def start_compact(self, focus: str | None) -> None:
        if self.busy:
            return
        self._begin("compacting")
        self.call_later(self.chat.add_notice, f"compacting now{f' (focus: {focus})' if focus else ''}", icon="Σ")
        self._turn_worker = self.run_compact(focus)

    @work(exclusive=True, group="turn", exit_on_error=False, description="agent turn")
    async def run_turn(self, text: str) -> None:
        await self._drive(lambda: self.agent.run_turn(text))

    @work(exclusive=True, group="turn", exit_on_error=False, description="compact now")
    async def run_compact(self, focus: str | None) -> None:
        await self._drive(lambda: self.agent.compact(focus))

    async def _drive(self, start: Callable[[], AsyncIterator[AgentEvent]]) -> None:
        """Post one message per core event; aclosing makes a cancel close (and repair) the turn."""
        cancelled = False
        try:
            events = cast(AsyncGenerator[AgentEvent, None], start())
            async with contextlib.aclosing(events) as stream:
                async for event in stream:
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
        self.chat.indicator.set_label(f"running {event.name}")

    @on(msg.PermissionRequested)
    async def _permission(self, message: msg.PermissionRequested) -> None:
        """Ask in a modal; the answer resolves the event's future (closing the turn answers "deny")."""
        event = message.event
        reply = event.reply
        if reply.done():
            return
        screen = PermissionScreen(event.tool, event.input)

        def answered(choice: str | None) -> None:
            self._set_asking(False)
            if not reply.done():
                reply.set_result(choice or "deny")
            self._show_activity()

        def turn_closed(_: object) -> None:
            if screen.is_attached and self.screen is screen:
                screen.dismiss(None)

        reply.add_done_callback(turn_closed)
        self._set_asking(True)
        await self.push_screen(screen, callback=answered)

    @on(msg.ToolCallFinished)
    async def _tool_finished(self, message: msg.ToolCallFinished) -> None:
        event = message.event
        await self.chat.finish_tool(
            event.tool_use_id, event.name, event.input, event.output, event.output_chars, event.duration,
            event.is_error,
        )
        self.chat.indicator.set_label(self._activity)

    @on(msg.CompactionStep)
    async def _compaction(self, message: msg.CompactionStep) -> None:
        await self.chat.add_compaction(message.event)
        self.gauge.step(message.event)
        self.query_one("#steps", CompactionLog).add_step(message.event)

    @on(msg.ContextMeasured)
    def _measured(self, message: msg.ContextMeasured) -> None:
        self.gauge.measured(message.event)

    @on(msg.HistoryChanged)
    def _history_changed(self, message: msg.HistoryChanged) -> None:
        self.gauge.history_changed(message.event.chars, message.event.length)
        self.message_tree.request_sync()

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

    @work(exclusive=True, group="measure", exit_on_error=False, description="measure the context")
    async def measure_context(self) -> None:
        """Exact figures (with the tiktoken estimate) once a turn is over."""
        if self.agent.running:
            return
        measured = await self.agent.measure()
        if not self.agent.running:
            self.gauge.measured(measured)
            self.gauge.flush()

    # --- permission ------------------------------------------------------------------------------

    def _set_asking(self, asking: bool) -> None:
        self._asking = asking
        self.chat.indicator.set_label("waiting for your permission" if asking else self._activity)
        for block in self.chat.tools.values():
            if not block.finished:
                block.set_waiting(asking)

    # --- the inspector: opening what a node points at ---------------------------------------------

    @on(MessageTree.OpenMarker)
    async def _open_marker(self, event: MessageTree.OpenMarker) -> None:
        info = event.info
        marker = info.marker
        assert marker is not None
        archived = self.agent.archive.resolve(marker.path)
        if archived is None:
            self.notify(f"not an archive path: {marker.path}", severity="warning", markup=False)
            return
        titles = {
            "placeholder": "↩ archived tool result",
            "persisted": "⇲ persisted output (full text)",
            "snip": f"✂ snipped messages ({plural(marker.count or 0, 'message')} archived) · transcript",
            "compacted": "Σ compacted summary · transcript before compaction",
            "reactive": "Σ reactive compact · transcript before compaction",
        }
        await self.open_archived(archived, titles.get(info.kind, "archive"), summary=marker.summary)

    async def open_archived(self, archived: ArchivedFile, title: str, summary: str | None = None) -> None:
        """Push an ArchiveScreen for a trusted archive file (a transcript is rendered readably)."""
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
        except (ArchiveError, OSError) as error:
            self.notify(str(error), severity="error", markup=False)
            return
        await self.push_screen(screen)

    @on(MessageTree.OpenBlock)
    async def _open_block(self, event: MessageTree.OpenBlock) -> None:
        info: NodeInfo = event.info
        where = f"#{info.index + 1}" + (f" block {info.block + 1}" if info.block is not None else "")
        await self.push_screen(ArchiveScreen(f"{where} · {info.kind} · in context now", info.text))

    @on(MessageTree.Untrusted)
    def _untrusted(self, event: MessageTree.Untrusted) -> None:
        path = event.info.marker.path if event.info.marker else "?"
        self.notify(f"not an archive path: {path} (shown as plain text, not opened)", severity="warning", markup=False)

    @on(CompactionLog.OpenFile)
    async def _open_step_file(self, event: CompactionLog.OpenFile) -> None:
        archived = self.agent.archive.resolve(event.path)
        if archived is None:
            self.notify(f"not an archive path: {event.path}", severity="warning", markup=False)
            return
        title = "Σ transcript written by the step" if archived.kind == "transcript" else "↩ archived tool result"
        await self.open_archived(archived, title)

    @on(ArchiveListScreen.Open)
    async def _open_listed(self, event: ArchiveListScreen.Open) -> None:
        title = "Σ transcript" if event.file.kind == "transcript" else "↩ archived tool result"
        await self.open_archived(event.file, title)

    # --- the demo --------------------------------------------------------------------------------

    @work(exclusive=True, group="demo", exit_on_error=False, description="demo")
    async def run_demo(self, commands: list[str]) -> None:
        """Type and send each command as a user would, waiting for each turn plus `demo_pause`."""
        try:
            await self._demo(commands)
        except asyncio.CancelledError:
            self.notify("Demo stopped.", title="demo", severity="warning")
            raise

    async def _demo(self, commands: list[str]) -> None:
        prompt = self.chat.input
        await asyncio.sleep(min(self.demo_pause, 1.0))
        for number, command in enumerate(commands, start=1):
            await self.turn_idle.wait()
            self.chat.indicator.set_label(f"demo {number}/{len(commands)}")
            prompt.clear()
            delay = min(0.03, self.demo_pause / 20)
            if delay > 0 and len(command) < 200:
                for char in command:
                    prompt.insert(char)
                    await asyncio.sleep(delay)
            else:
                prompt.insert(command)
            await asyncio.sleep(self.demo_pause / 2)
            prompt.clear()
            if prompt.prompt_history[-1:] != [command]:
                prompt.prompt_history.append(command)
            await self.submit(command)
            await self.turn_idle.wait()
            await asyncio.sleep(self.demo_pause)
        self.notify(f"Demo finished: {plural(len(commands), 'command')} ran. Your turn!", title="demo")

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR and worker.group != "turn":
            self.notify(f"{worker.description or worker.name} failed: {worker.error}", severity="error", markup=False)
