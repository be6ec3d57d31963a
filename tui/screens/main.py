"""MainScreen: the chat on the left, the inspector on the right, and the turn that feeds them.

The data flow is one way. The prompt posts `ChatInput.Submitted`; `submit` starts the turn worker
(`drive`), which iterates `agent.run_turn` (or `agent.compact`) inside `contextlib.aclosing` and
posts one `tui.messages` message per core event to this screen; the `@on` handlers below hand each
to the chat and the inspector, whose widgets apply what the event carries (the history's splices,
the call's sample and the session's cost). Nothing here reads the agent back during a turn. The
screen holds its parts: the `Inspector` widget (every figure and view of the context) and
`Steering` (the user's actions on the context); the actions themselves come from `tui.actions`.
Given a `Launch` instead of an agent, the screen draws its first frame from the settings and builds
the agent right after (tui/screens/front.py); until then the keys that need the agent are disabled
and a message sent waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, TextArea

from core.agent.launch import Launch
from core.text import visible
from tui import actions
from tui import messages as msg
from tui.format import count, pin_cost_line, plural
from tui.screens.front import PERMISSION_TEXT, front_of, permission_mode, welcome_text
from tui.widgets.chat_input import NEWLINE_KEYS, ChatInput, prompt_text_of
from tui.widgets.chat_pane import ChatPane
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.inspector import Inspector, request_extra
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.message_tree import MessageTree
from tui.widgets.title_bar import TitleBar

if TYPE_CHECKING:
    from core.agent import Agent
    from core.events import AgentEvent
    from core.sessions.listing import SessionInfo
    from tui.screens.session_switch import SessionSwitch
    from tui.screens.steering import Steering
    from tui.widgets.breakdown import BreakdownView
    from tui.widgets.facts_view import FactsView
    from tui.widgets.timeline import TimelineView

NARROW_WIDTH = 110
SHORT_HEIGHT = 34
MIN_INSPECTOR = 28
MIN_CHAT = 30
STACK_WIDTH = MIN_CHAT + MIN_INSPECTOR
"""Below this width the chat and the inspector do not fit side by side: the inspector, when shown, goes
under the chat (at 40 columns, beside it, it left the chat 8)."""


class DemoScript(Protocol):
    """`tui.demo.play`: types the demo's commands into a screen."""

    async def __call__(self, screen: MainScreen, commands: list[str], pause: float) -> None: ...


class MainScreen(Screen[None]):
    """The layout, the actions of `tui.actions` and the routing of the core's events."""

    AUTO_FOCUS = "#prompt"
    """The prompt has focus from the start (Textual's default, the first focusable widget, then a
    move to the prompt in `on_mount`, restyled two widgets twice before the first frame)."""

    class PromptReady(Message):
        """Posted to the app once the prompt is mounted and focused: the keys the app held until now
        go to it (`CtxApp.on_main_screen_prompt_ready`), in the app's queue, so in order."""

    BINDINGS: ClassVar[list[BindingType]] = list(actions.bindings(app_wide=False))

    busy: reactive[bool] = reactive(False)
    inspector_visible: reactive[bool] = reactive(True)
    inspector_width: reactive[int] = reactive(60)
    stacked: reactive[bool] = reactive(False)
    """The inspector is under the chat, as wide as the terminal (narrower than `STACK_WIDTH`)."""

    def __init__(self, agent: Agent | Launch) -> None:
        super().__init__(id="main-screen")
        self.launch = agent if isinstance(agent, Launch) else None
        """The agent still to build after the first frame (None: the screen was given a built one)."""
        self._agent = None if isinstance(agent, Launch) else agent
        self.front = front_of(agent)
        self.agent_ready = asyncio.Event()
        """Set once the agent is built (at once when the screen was given one)."""
        self.agent_settled = asyncio.Event()
        """Set once the agent is built or its build has failed (quitting waits for it)."""
        self.start_failure: str | None = None
        """Why the agent could not be built (the app then ends; the CLI prints this line)."""
        if self._agent is not None:
            self.agent_ready.set()
            self.agent_settled.set()
        self.turn_idle = asyncio.Event()
        """Set while no turn runs (tests and the demo wait on it)."""
        self.turn_idle.set()
        self.turns_completed = 0
        self._activity = "idle"
        """What the running turn is doing (the title bar and the chat's busy line show it)."""
        self._inspector_choice: bool | None = None
        """The user's show/hide choice for the inspector (None: follow the terminal's width)."""
        self._width_choice: int | None = None
        self._styled_at_mount: str | None = None
        """The theme the screen's widgets were styled with as they mounted (None once it resumed)."""
        self._laid_out = False
        """`layout_for` has run (on_mount): a reactive read before it (the footer's bindings check
        reads `stacked`) runs its watcher before the inspector's widgets exist."""

    @functools.cached_property
    def steering(self) -> Steering:
        """The user's actions on the context (made at the first use: its module is not needed for the
        first frame)."""
        from tui.screens.steering import Steering

        return Steering(self)

    @functools.cached_property
    def sessions(self) -> SessionSwitch:
        """New session, resume, switch (made at the first use)."""
        from tui.screens.session_switch import SessionSwitch

        return SessionSwitch(self)

    @property
    def agent(self) -> Agent:
        """The agent (RuntimeError while it is still being built: wait on `agent_ready`)."""
        if self._agent is None:
            raise RuntimeError("the agent is still starting")
        return self._agent

    @property
    def built_agent(self) -> Agent | None:
        """The agent, or None while it is still being built (or if its build failed)."""
        return self._agent

    @property
    def starting(self) -> bool:
        """The agent is still being built: the keys that need it are disabled."""
        return self._agent is None

    # --- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        front = self.front
        yield TitleBar(front.workdir, front.label, front.offline)
        with Horizontal(id="main"):
            yield ChatPane(id="chat")
            yield Inspector(front.inspector, self._agent, id="inspector")
        yield KeysFooter(groups=actions.footer_groups())

    @property
    def chat(self) -> ChatPane:
        return self.query_one("#chat", ChatPane)

    @property
    def inspector(self) -> Inspector:
        return self.query_one("#inspector", Inspector)

    @property
    def gauge(self) -> ContextGauge:
        return self.inspector.gauge

    @property
    def message_tree(self) -> MessageTree:
        return self.inspector.message_tree

    @property
    def views(self) -> ContentSwitcher:
        return self.inspector.views

    @property
    def breakdown_view(self) -> BreakdownView:
        return self.inspector.breakdown_view

    @property
    def timeline_view(self) -> TimelineView:
        return self.inspector.timeline_view

    async def on_mount(self) -> None:
        self._styled_at_mount = self.app.theme
        self._laid_out = True
        self.layout_for(self.app.size)
        self.show_activity()
        self.set_focus(self.chat.input)
        # keys typed before now (even before the terminal was the app's) were held by the app: in order, to the prompt
        self.app.post_message(self.PromptReady())

    async def after_first_frame(self) -> None:
        """What the first frame does not need, run once it is painted (the app calls this from its
        Ready event): the chat's first blocks (Markdown), the model's window and the first forecast."""
        start = (
            self.front.inspector
        )  # the history at the start (a message sent since is shown as it was sent)
        messages, chars = start.messages, start.chars
        if messages:
            await self.replay_history(messages, chars)
        else:
            await self.chat.add_welcome(welcome_text(self.front))
        if self.launch is not None and self._agent is None and not await self._build(self.launch):
            return
        # the search view asks the agent; the notes line shows the notes it has (a resume's too)
        self.inspector.set_searcher(self.agent)
        self.inspector.set_notes(self.agent.view.notes, self.agent.view.notes_char_limit)
        self.inspector.begin()

    async def _build(self, launch: Launch) -> bool:
        """Build the agent of `launch` (its imports in a thread: keys keep working); a failure ends the
        app with its one line (the CLI prints it once the terminal is back)."""
        try:
            agent = await launch.build()
        except Exception as error:
            self.start_failure = f"the agent could not start: {type(error).__name__}: {error}"
            self.agent_settled.set()
            self.app.exit(return_code=1)
            return False
        self._agent = agent
        self.inspector.attach(agent, request_extra(agent.view.system_prompt, agent.view.tools))
        self.inspector.set_archive(agent.archive)
        self.agent_ready.set()
        self.agent_settled.set()
        self.refresh_bindings()
        self.show_activity()
        return True

    async def replay_history(self, messages: Sequence[dict[str, Any]], chars: int) -> None:
        """Show a resumed history in the chat, and say so once (the agent's own notice is taken)."""
        self.agent.take_resume_notice()
        resumed = self.agent.view.resumed_from
        where = f" from {resumed}" if resumed else ""
        await self.chat.replay(
            list(messages),
            notice=(
                f"resumed {plural(len(messages), 'message')} ({count(chars)} chars){where}: "
                "the chat shows the conversation, the inspector what sits in context"
            ),
        )

    def on_resize(self, event: events.Resize) -> None:
        """Lay out for the new size (the event's, not `self.size`, which may still be the old one)."""
        self.layout_for(event.size)

    def layout_for(self, size: Size) -> None:
        width, height = size
        short = height < SHORT_HEIGHT
        self.inspector.set_class(short, "-short")
        self.gauge.dense = short
        visible_now = self._inspector_choice if self._inspector_choice is not None else width >= NARROW_WIDTH
        preferred = self._width_choice if self._width_choice is not None else max(int(width * 0.4), 36)
        self.inspector_width = max(MIN_INSPECTOR, min(preferred, max(width - MIN_CHAT, MIN_INSPECTOR)))
        self.stacked = width < STACK_WIDTH
        self.inspector_visible = visible_now

    def watch_inspector_visible(self, shown: bool) -> None:
        self.inspector.display = shown
        self._show_mini_gauge(not shown or self.stacked)
        if not shown and self.message_tree.has_focus:
            self.chat.input.focus()
        self.refresh_bindings()

    def watch_inspector_width(self, width: int) -> None:
        if not self.stacked:
            self.inspector.styles.width = width

    def watch_stacked(self, stacked: bool) -> None:
        """Under the chat (app.tcss: `-stacked`) the inspector takes the terminal's width and leaves its
        rows to the tree (the one-line gauge stays), and f8/f9 go."""
        self.set_class(stacked, "-stacked")
        self.inspector.styles.width = None if stacked else self.inspector_width
        self._show_mini_gauge(stacked or not self.inspector_visible)
        self.refresh_bindings()

    def _show_mini_gauge(self, shown: bool) -> None:
        """The one-line gauge under the chat (the inspector hidden, or under it): mounted the first
        time it shows (a wide terminal's first frame does without it), then shown or hidden."""
        if not self._laid_out:  # before on_mount: its layout_for decides
            return
        mini = self.gauge.mirror
        if mini is None:
            if not shown:
                return
            mini = ContextGauge(compact=True, id="mini-gauge")
            self.gauge.attach_mirror(mini)
            self.mount(mini, after=self.query_one("#main"))
        mini.display = shown

    def watch_busy(self, busy: bool) -> None:
        """The UI's one turn flag: the chat's busy line, the title, the keys and `turn_idle` follow it."""
        if busy:
            self.turn_idle.clear()
        else:
            self.turn_idle.set()
        self.chat.set_busy(busy, self._activity)
        self.show_activity()
        self.refresh_bindings()

    def show_activity(self) -> None:
        bash = PERMISSION_TEXT[permission_mode(self._agent, self.front)]
        state = self._activity if self.busy else "idle"
        self.query_one(TitleBar).set_state(f"{state} · {bash}", self.busy)

    def _show_inspector(self) -> None:
        if not self.inspector_visible:
            self._inspector_choice = True
            self.layout_for(self.size)

    # --- typing goes to the prompt ----------------------------------------------------------------

    def is_typing(self, event: events.Key) -> bool:
        """Whether `event` is typed for the prompt: a key that puts text in it, which the focused widget
        (if not the prompt) does not use. Enter, a newline key and a key that types nothing count only
        once the prompt has focus (before that, the focused widget's own: the tree opens a node)."""
        prompt = self.chat.input
        if prompt_text_of(event) is None:
            return False
        focused = self.focused
        if focused is prompt:
            return True
        if event.key == "enter" or event.key in NEWLINE_KEYS or not event.is_printable:
            return False
        if focused is not None and focused.check_consume_key(event.key, event.character):
            return False
        return event.key not in self.active_bindings  # the tree's space, a tool block's space

    def route_typing(self, event: events.Key) -> None:
        """Called by the app for each key, in the order the terminal sent them, before it hands the key
        to the focused widget: a key typed for the prompt moves the focus there first (`set_focus`, at
        once), so it and every key after it go to the prompt's one queue, in order. A key that waited
        in another widget's queue could be overtaken by a later one sent straight to the prompt."""
        prompt = self.chat.input
        if self.focused is not prompt and prompt.is_mounted and self.is_typing(event):
            self.set_focus(prompt)

    def route_paste(self) -> None:
        """Called by the app for each paste, like `route_typing`: a paste goes to the focused widget
        when that one takes pastes (the prompt, the search box, a dialog's field), else the focus moves
        to the prompt first, so the keys typed after it (its Enter) follow it there."""
        prompt = self.chat.input
        if prompt.is_mounted and not isinstance(self.focused, (Input, TextArea)):
            self.set_focus(prompt)

    def on_key(self, event: events.Key) -> None:
        """A typed key that reached the screen (no widget had focus, or the focused one let it through)
        goes to the prompt; the app's routing (`route_typing`) normally sends it there first."""
        text = prompt_text_of(event)
        if text is None or not self.is_typing(event):
            return
        event.stop()
        event.prevent_default()
        prompt = self.chat.input
        self.set_focus(prompt)
        if event.key == "enter":
            prompt.submit()
        else:
            prompt.insert(text)

    def on_paste(self, event: events.Paste) -> None:
        """A paste no widget took (the prompt takes its own) goes to the prompt, where it was meant to go."""
        event.stop()
        prompt = self.chat.input
        self.set_focus(prompt)
        prompt.insert(event.text)

    # --- sending -----------------------------------------------------------------------------------

    async def submit(self, text: str, *, typed: bool = False) -> bool:
        """Run `text` as a user turn (or a slash command). False when it was not run: a turn is already
        running, or it is a mistyped command (`typed`: it came from the prompt, and goes back to it). A
        message larger than the whole context limit is asked about first (`OversizeScreen`)."""
        await self.agent_ready.wait()  # sent in the first moments: it goes once the agent is built
        stripped = text.strip()
        if stripped.startswith("/"):
            if await self._slash(stripped):
                return True
            refused = actions.refused_command(stripped)
            if refused is not None:  # never sent to the model: a paid call and junk in the context
                await self.chat.add_notice(f"{refused} (nothing was sent)", warning=True)
                return False
        if self.busy:
            kept = " (your message is back in the prompt)" if typed else ""
            self.notify(
                f"A turn is running: wait for it, or press esc to cancel it{kept}.", severity="warning"
            )
            return False
        size = self.agent.oversize(text)
        if size is not None:
            from tui.screens.oversize import OversizeScreen

            limit = self.agent.view.limit
            self.app.push_screen(
                OversizeScreen(size, limit), callback=lambda choice: self._oversize(text, choice)
            )
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
            from core.archive import ArchiveError

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
                self.steering.review_compact(rest.strip() or None)
            return True
        if action.name == "search":
            await self.action_search(rest.strip() or None)
            return True
        from tui.screens.steering import STEERING_WITH_ARGUMENT

        if action.name in STEERING_WITH_ARGUMENT:
            await getattr(self, f"action_{action.name}")(rest.strip() or None)
            return True
        target = self.app if action.app_wide else self
        await target.run_action(action.action)
        return True

    def _begin(self, activity: str) -> None:
        self._activity = activity
        self.busy = True
        self.inspector.turn_began()

    def start_compact(self, focus: str | None, summary: str | None = None) -> None:
        """Compact now; `summary`, when given (reviewed), goes in as it is."""
        if self.busy:
            return
        self._begin("compacting")
        how = " with the reviewed summary" if summary is not None else ""
        self.call_later(
            self.chat.add_notice, f"compacting now{f' (focus: {focus})' if focus else ''}{how}", icon="Σ"
        )
        self.drive(self.agent.compact(focus, summary))

    @work(exclusive=True, group="turn", exit_on_error=False, description="agent turn")
    async def drive(self, stream: AsyncGenerator[AgentEvent, None]) -> None:
        """Post one message per core event, but a streamed piece joins the message of the piece before
        while that one still waits (see tui/messages.py); aclosing makes a cancel close (and repair)
        the turn."""
        cancelled = False
        waiting: msg.Streamed[Any] | None = None
        try:
            async with contextlib.aclosing(stream) as events_:
                async for event in events_:
                    if waiting is not None and waiting.absorb(event):
                        continue
                    message = msg.wrap(event)
                    if message is not None:
                        waiting = message if isinstance(message, msg.Streamed) else None
                        self.post_message(message)
        except asyncio.CancelledError:
            cancelled = True
            self.post_message(msg.TurnCancelled())
            raise
        except Exception as error:  # the core should not raise, but the UI must survive it
            self.post_message(msg.TurnCrashed(f"{type(error).__name__}: {error}"))
        finally:
            self.post_message(msg.TurnEnded(cancelled))

    # --- actions (described in tui/actions.py) ------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in actions.BY_NAME and self.app.screen is not self:
            return False  # a dialog is up: the footer below it shows none of these keys
        if action == "resize_inspector" and self.stacked:
            return False  # under the chat it is as wide as the terminal
        return actions.availability(action, self)

    def on_screen_suspend(self) -> None:
        self.refresh_bindings()

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # This handler runs before Screen's own. At the first resume, right after the mount, every
        # widget was styled as it mounted, with the same theme: Textual's pass over the whole screen
        # again would change nothing and costs the first frame about a fifth of its styling time.
        if self._styled_at_mount is not None:
            event.refresh_styles = self._styled_at_mount != self.app.theme
            self._styled_at_mount = None
        self.refresh_bindings()

    def action_toggle_inspector(self) -> None:
        self._inspector_choice = not self.inspector_visible
        self.layout_for(self.size)

    def action_resize_inspector(self, delta: int) -> None:
        if not self.inspector_visible or self.stacked:
            return
        self._width_choice = self.inspector_width + delta
        self.layout_for(self.size)
        self._width_choice = self.inspector_width

    def action_focus_tree(self) -> None:
        """ctrl+t: the focus moves at once (`set_focus`, not the deferred `focus()`), so the keys typed
        right after it go where the person meant them to."""
        if self.message_tree.has_focus:
            self.set_focus(self.chat.input)
            return
        self._show_inspector()
        self.set_focus(self.message_tree)

    def action_toggle_tools(self) -> None:
        self.chat.toggle_tools()

    async def action_show_help(self) -> None:
        await self.chat.add_help(actions.help_markdown())

    def action_cancel_turn(self) -> None:
        for worker in self.workers:
            if worker.group in ("turn", "demo") and not worker.is_finished:
                worker.cancel()

    def action_archive(self) -> None:
        self.inspector.opener.show_list()

    # the inspector's views
    async def action_next_view(self) -> None:
        """f2: the inspector's views in turn (tree, breakdown, timeline, dropped, facts, search), then the tree."""
        await self.action_show_view(self.inspector.next_view)

    async def action_show_view(self, name: str) -> None:
        self._show_inspector()
        await self.inspector.mount_views()
        self.inspector.show_view(name, focus=True)

    async def action_search(self, query: str | None = None) -> None:
        """/search [QUERY]: the inspector's search view, with `query` run when given."""
        await self.action_show_view("search")
        if query:
            self.inspector.run_search(query)

    # steering (tui/screens/steering.py)
    def action_compact(self) -> None:
        self.steering.compact()

    def action_compact_now(self) -> None:
        self.start_compact(None)

    async def action_toggle_pin(self, key: str | None = None) -> None:
        await self.steering.toggle_pin(key)

    async def action_unpin(self, key: str | None = None) -> None:
        await self.steering.unpin(key)

    async def action_drop(self, tool_use_id: str | None = None) -> None:
        await self.steering.drop(tool_use_id)

    async def action_restore(self, path: str | None = None) -> None:
        await self.steering.restore(path)

    async def action_drop_or_restore(self) -> None:
        await self.steering.drop_or_restore()

    async def action_undo(self) -> None:
        await self.steering.undo()

    async def action_toggle_pause(self) -> None:
        await self.steering.toggle_pause()

    async def action_preview(self) -> None:
        await self.steering.preview()

    # sessions (tui/screens/session_switch.py)
    async def action_new_session(self) -> None:
        """ctrl+n: a new, empty session (archives and old sessions stay on disk)."""
        await self.sessions.new_session()

    async def action_compare(self) -> None:
        """/compare: this session's log replayed under every engine."""
        await self.sessions.compare()

    async def action_sessions(self) -> None:
        """ctrl+s: list this workdir's sessions; the one chosen is resumed here."""
        await self.sessions.sessions()

    async def resume_session(self, info: SessionInfo) -> None:
        """Make the session `info` describes the running one and show it as `--resume` would."""
        await self.sessions.resume(info)

    # --- routing: one handler per message -----------------------------------------------------------

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        if self.starting:  # sent in the first moments: it waits for the agent without holding this screen
            self.run_worker(
                self._send_typed(event.text), group="send", exit_on_error=False, description="send"
            )
            return
        await self._send_typed(event.text)

    async def _send_typed(self, text: str) -> None:
        """Send what was typed; refused (a turn is running), it goes back to the prompt, before anything
        typed since, so that nothing typed is lost."""
        if await self.submit(text, typed=True):
            return
        prompt = self.chat.input
        prompt.load_text(f"{text}\n{prompt.text}" if prompt.text else text)
        prompt.move_cursor(prompt.document.end)

    @on(msg.TextDelta)
    async def _text(self, message: msg.TextDelta) -> None:
        await self.chat.add_text(message.take())

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
            self.show_activity()

        from tui.screens.permission import PermissionScreen

        await self.app.push_screen(PermissionScreen(message.event), callback=answered)

    def _set_asking(self, asking: bool) -> None:
        self.chat.set_activity("waiting for your permission" if asking else self._activity)
        self.chat.set_waiting(asking)

    @on(msg.ToolOutputDelta)
    def _tool_output(self, message: msg.ToolOutputDelta) -> None:
        self.chat.tool_output(message.event.tool_use_id, message.take())

    @on(msg.ToolCallFinished)
    async def _tool_finished(self, message: msg.ToolCallFinished) -> None:
        event = message.event
        await self.chat.finish_tool(
            event.tool_use_id,
            event.name,
            event.input,
            event.output,
            event.output_chars,
            event.duration,
            event.is_error,
        )
        self.chat.set_activity(self._activity)

    @on(msg.NotesChanged)
    async def _notes_changed(self, message: msg.NotesChanged) -> None:
        self.inspector.notes_changed(message.event)
        self.chat.note_changed(message.event)

    @on(msg.CompactionStep)
    async def _compaction(self, message: msg.CompactionStep) -> None:
        await self.chat.add_compaction(message.event)
        self.inspector.step(message.event)

    @on(msg.CompactionHeld)
    async def _held(self, message: msg.CompactionHeld) -> None:
        await self.chat.add_notice(message.event.describe(), icon="‖")
        self.inspector.held(message.event)

    @on(msg.ContextMeasured)
    def _measured(self, message: msg.ContextMeasured) -> None:
        self.inspector.measured(message.event)

    @on(msg.ContextSampled)
    def _sampled(self, message: msg.ContextSampled) -> None:
        self.inspector.sampled(message.event)

    @on(msg.HistoryChanged)
    def _history_changed(self, message: msg.HistoryChanged) -> None:
        self.inspector.history_changed(message.event)

    @on(msg.Notice)
    async def _notice(self, message: msg.Notice) -> None:
        event = message.event
        from tui.widgets.facts_view import lost_constraints_hint

        text = lost_constraints_hint(event.message, actions.key_label(actions.BY_ID["show_facts"].key or ""))
        cost = pin_cost_line(event.cache_invalidated_tokens, event.break_even_calls)  # a pin's, an unpin's
        await self.chat.add_notice(f"{text}; {cost}" if cost else text, warning=event.kind != "info")

    @on(msg.ErrorEvent)
    async def _error(self, message: msg.ErrorEvent) -> None:
        await self.chat.add_error(message.event.message, message.event.kind)

    @on(msg.TurnCancelled)
    async def _turn_cancelled(self, message: msg.TurnCancelled) -> None:
        await self.chat.cancelled()

    @on(msg.TurnCrashed)
    async def _turn_crashed(self, message: msg.TurnCrashed) -> None:
        await self.chat.add_error(message.error, "internal error")

    @on(msg.TurnEnded)
    async def _turn_ended(self, message: msg.TurnEnded) -> None:
        """The turn worker is done however the turn ended: the one place the chat's reply is closed."""
        await self.chat.end_assistant()
        self.inspector.turn_ended()
        self._activity = "idle"
        self.turns_completed += 1
        self.busy = False  # shows the activity, sets turn_idle

    @on(Inspector.RestoreRequested)
    def _restore_requested(self, message: Inspector.RestoreRequested) -> None:
        self.call_later(self.steering.restore, message.path)

    def on_facts_view_keep(self, message: FactsView.Keep) -> None:
        """A fact kept from the facts view (its module loads once the views are mounted)."""
        self.call_later(self.steering.keep_fact, message.fact.text, message.fact.kind)

    @on(Inspector.Recompaction)
    async def _recompaction(self, message: Inspector.Recompaction) -> None:
        await self.chat.add_notice(
            f"automatic compaction is on: the next call would run {' + '.join(message.steps)} again; pause it "
            "(f5), or compact with a focus instead (ctrl+o)",
            warning=True,
        )

    # --- the demo --------------------------------------------------------------------------------

    @work(exclusive=True, group="demo", exit_on_error=False, description="demo")
    async def run_demo(self, play: DemoScript, commands: list[str], pause: float) -> None:
        """Type and send each command as a user would (`play` is tui/demo.py's script player)."""
        try:
            await play(self, commands, pause)
        except asyncio.CancelledError:
            self.notify("Demo stopped.", title="demo", severity="warning")
            raise
