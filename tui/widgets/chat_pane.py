"""The chat: a scrolling transcript of block widgets, a turn indicator and the prompt.

The transcript is anchored once and never scrolled per chunk. Old block widgets are pruned beyond
`max_blocks`; the history itself lives in the agent, so nothing is lost (the inspector shows it).
The screen calls one public method per core event; `replay` rebuilds the chat of a resumed session
from its history. Untrusted text is escaped (`core.text.visible`) before it becomes Content or
Markdown. Textual's Markdown (markdown-it, pygments) is imported with the first assistant block,
not with this module, so the empty chat of the first frame does not wait for it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.reactive import Reactive
from textual.timer import Timer
from textual.widget import Widget

from core.markers import parse_marker
from core.text import visible
from tui.format import duration, plural
from tui.widgets.chat_blocks import CompactionNotice, ErrorLine, NoticeLine, UserBlock
from tui.widgets.chat_input import ChatInput
from tui.widgets.line import Line
from tui.widgets.stream_layout import count_nested_requests

if TYPE_CHECKING:
    from textual.layout import Layout
    from textual.widgets.markdown import MarkdownStream

    from core.events import CompactionStep, NotesChanged
    from tui.widgets.assistant_block import AssistantBlock
    from tui.widgets.tool_block import ToolBlock

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Transcript(VerticalScroll, can_focus=False):
    """The scrolling column of chat blocks.

    What it draws itself (its background and padding) does not depend on how tall its content is, so
    growing does not repaint it: Textual's own `virtual_size` repaints a scroll container whenever its
    content grows, which while a reply streams meant drawing every line of the column again on every
    frame, and with it every layer beneath (about a third of a streaming frame's rendering). The
    scrollbar repaints itself; a new size (`Widget._size_updated`) or a scrollbar appearing or going
    (`show_vertical_scrollbar`) still repaints the column.
    """

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=True, repaint=False)

    def pre_layout(self, layout: Layout) -> None:
        count_nested_requests(self)  # a reply whose paragraph grew (tui/widgets/stream_layout.py)

    DEFAULT_CSS = """
    Transcript {
        layout: stream;
        height: 1fr;
        padding: 0 1 1 1;
        scrollbar-size-vertical: 1;
    }
    """


class TurnIndicator(Line):
    """'⠹ working… 3.2 s · esc to cancel' while a turn runs; hidden otherwise."""

    DEFAULT_CSS = """
    TurnIndicator {
        height: 1;
        padding: 0 2;
        color: $text-warning;
        display: none;
        &.-active { display: block; }
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self._started = 0.0
        self._label = "working"
        self._timer: Timer | None = None
        self._frame = 0

    def start(self, label: str = "working") -> None:
        self._started = time.monotonic()
        self._label = label
        self.add_class("-active")
        if self._timer is None:
            self._timer = self.set_interval(0.1, self._tick)
        else:
            self._timer.resume()
        self._tick()

    def set_label(self, label: str) -> None:
        self._label = label
        self._tick()

    def stop(self) -> None:
        self.remove_class("-active")
        if self._timer is not None:
            self._timer.pause()

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        elapsed = duration(time.monotonic() - self._started)
        self.set(
            Content.assemble(
                (SPINNER[self._frame] + " ", "bold"),
                f"{self._label}… {elapsed}",
                ("  · esc to cancel", "dim"),
            )
        )


class ChatPane(Vertical):
    """Transcript + indicator + prompt. The main screen calls one public method per core event."""

    DEFAULT_CSS = """
    ChatPane {
        height: 1fr;
        width: 1fr;
    }
    """

    max_blocks = 200
    replay_blocks = 100
    """A resumed session shows its newest `replay_blocks` blocks (the inspector holds everything)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.transcript = Transcript(id="transcript")
        self.indicator = TurnIndicator()
        self.input = ChatInput(id="prompt")
        self._assistant: AssistantBlock | None = None
        self._stream: MarkdownStream | None = None
        self._streamed = False
        self.tools: dict[str, ToolBlock] = {}
        self.pruned = 0

    def compose(self) -> ComposeResult:
        yield self.transcript
        yield self.indicator
        yield self.input

    def on_mount(self) -> None:
        self.transcript.anchor()

    # --- blocks --------------------------------------------------------------------------------

    async def _add(self, widget: Widget) -> None:
        if not self.transcript.is_attached or self.app.return_code is not None:
            return  # the app is shutting down
        await self.transcript.mount(widget)
        self._prune()

    def _prune(self) -> None:
        children = list(self.transcript.children)
        excess = len(children) - self.max_blocks
        if excess <= 0:
            return
        doomed = [child for child in children[:excess] if child is not self._assistant]
        from tui.widgets.tool_block import ToolBlock

        for widget in doomed:
            if isinstance(widget, ToolBlock):
                self.tools.pop(widget.tool_use_id, None)
        self.pruned += len(doomed)
        self.transcript.remove_children(doomed)

    async def add_user(self, text: str) -> None:
        await self.end_assistant()
        await self._add(UserBlock(text))
        self.transcript.anchor()

    async def add_text(self, fragment: str) -> None:
        """Stream a fragment of assistant text into the current Markdown block (made on demand)."""
        if self._stream is None:
            from tui.widgets.assistant_block import AssistantBlock

            self._assistant = AssistantBlock()
            await self._add(self._assistant)
            self._stream = AssistantBlock.get_stream(self._assistant)
        self._streamed = True
        await self._stream.write(visible(fragment))

    async def end_assistant(self, content: list[dict[str, Any]] | None = None) -> None:
        """The assistant message is complete: stop the stream (or show text that was never streamed);
        its thinking blocks go in collapsed, before the text they led to."""
        if content is not None:
            from tui.widgets.thinking_block import thinking_blocks

            await self._add_thinking(thinking_blocks(content))
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()
        elif content is not None and not self._streamed:
            text = "\n\n".join(
                str(block.get("text", "")) for block in content if block.get("type") == "text"
            ).strip()
            if text:
                from tui.widgets.assistant_block import AssistantBlock

                await self._add(AssistantBlock(visible(text)))
        self._assistant = None
        self._streamed = False

    async def _add_thinking(self, blocks: list[dict[str, Any]]) -> None:
        if not blocks or not self.transcript.is_attached or self.app.return_code is not None:
            return
        from tui.widgets.thinking_block import ThinkingBlock

        widgets = [ThinkingBlock(block) for block in blocks]
        streamed = self._assistant
        if streamed is not None and streamed.parent is self.transcript:
            await self.transcript.mount_all(widgets, before=streamed)
        else:
            await self.transcript.mount_all(widgets)
        self._prune()

    async def add_tool(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> ToolBlock:
        await self.end_assistant()
        from tui.widgets.tool_block import ToolBlock

        block = ToolBlock(tool_use_id, name, tool_input)
        self.tools[tool_use_id] = block
        await self._add(block)
        return block

    def tool_output(self, tool_use_id: str, text: str) -> None:
        """A piece of a running tool's output (shown live in its block)."""
        if (block := self.tools.get(tool_use_id)) is not None:
            block.add_output(text)

    async def finish_tool(
        self,
        tool_use_id: str,
        name: str,
        tool_input: dict[str, Any],
        output: str,
        chars: int,
        seconds: float,
        is_error: bool,
    ) -> None:
        block = self.tools.get(tool_use_id)
        if block is None:
            block = await self.add_tool(tool_use_id, name, tool_input)
        block.finish(output, chars, seconds, is_error)

    def note_changed(self, event: NotesChanged) -> None:
        """The note call's effect, shown on its block (NotesChanged follows the call's result)."""
        if (block := self.tools.get(event.tool_use_id)) is not None:
            block.note_changed(event)

    async def add_compaction(self, step: CompactionStep) -> None:
        await self._add(CompactionNotice(step))

    async def _add_first(self, widgets: list[Widget]) -> None:
        """Mount `widgets` at the top of the transcript. The welcome and a resumed history come right
        after the first frame, and a message sent at once may already be in the transcript below them."""
        if not widgets or not self.transcript.is_attached or self.app.return_code is not None:
            return
        children = self.transcript.children
        await self.transcript.mount_all(widgets, before=children[0] if children else None)
        self._prune()

    async def add_welcome(self, markdown: str) -> None:
        """The welcome text (trusted Markdown), first in the transcript."""
        from tui.widgets.assistant_block import AssistantBlock

        await self._add_first([AssistantBlock(markdown, classes="welcome")])

    async def add_help(self, markdown: str) -> None:
        """ctxtui's own help text (trusted Markdown)."""
        from tui.widgets.assistant_block import AssistantBlock

        await self.end_assistant()
        await self._add(AssistantBlock(markdown, classes="help"))

    async def add_notice(self, text: str, *, icon: str = "ℹ", warning: bool = False) -> None:
        await self._add(NoticeLine(text, icon=icon, warning=warning))

    async def add_error(self, message: str, kind: str = "error") -> None:
        await self.end_assistant()
        await self._add(ErrorLine(message, kind))

    async def cancelled(self) -> None:
        """The turn was cancelled: close the stream, mark running tools, say so."""
        block = self._assistant
        await self.end_assistant()
        if block is not None:
            block.add_class("-cancelled")
        for tool in self.tools.values():
            tool.interrupt()
        await self._add(NoticeLine("[cancelled]", icon="■", warning=True))

    async def clear(self) -> None:
        await self.end_assistant()
        self.tools.clear()
        self.pruned = 0
        await self.transcript.remove_children()

    # --- the turn's state ------------------------------------------------------------------------

    def set_busy(self, busy: bool, activity: str) -> None:
        """A turn started (the indicator runs, the prompt shows it) or ended."""
        self.input.set_class(busy, "-busy")
        if busy:
            self.indicator.start(activity)
        else:
            self.indicator.stop()

    def set_activity(self, label: str) -> None:
        self.indicator.set_label(label)

    def set_waiting(self, waiting: bool) -> None:
        """The permission dialog is up (or was answered): running tool blocks say so."""
        for block in self.tools.values():
            if not block.finished:
                block.set_waiting(waiting)

    # --- a resumed session ---------------------------------------------------------------------

    async def replay(self, messages: list[dict[str, Any]], notice: str | None = None) -> None:
        """Show a resumed history as it was: user and assistant text, tool calls with their results,
        compaction markers as notices, then `notice`; only the newest `replay_blocks` blocks are built.
        The blocks go first in the transcript (see `_add_first`). The prompt history is restored from
        the user's own messages."""
        from tui.widgets.chat_replay import replay_specs

        specs = replay_specs(messages)
        self.input.prompt_history[:0] = [
            message["content"]
            for message in messages
            if message.get("role") == "user"
            and isinstance(message.get("content"), str)
            and parse_marker(message["content"]) is None
        ]
        shown = specs[-self.replay_blocks :]
        blocks: list[Widget] = []
        if len(shown) < len(specs):
            blocks.append(
                NoticeLine(
                    f"{plural(len(specs) - len(shown), 'earlier block')} not shown (the inspector holds the whole history)",
                    icon="…",
                )
            )
        blocks.extend(spec.widget() for spec in shown)
        if notice is not None:
            blocks.append(NoticeLine(notice))
        await self._add_first(blocks)
        self.transcript.anchor()

    def toggle_tools(self) -> None:
        """Expand every tool block, or collapse them all if any is expanded."""
        from tui.widgets.tool_block import ToolBlock

        blocks = list(self.transcript.query(ToolBlock))
        expand = not any(block.expanded for block in blocks)
        for block in blocks:
            block.expanded = expand

    # --- prompt --------------------------------------------------------------------------------

    @on(ChatInput.Page)
    def _page(self, event: ChatInput.Page) -> None:
        if event.direction < 0:
            self.transcript.scroll_page_up()
        else:
            self.transcript.scroll_page_down()
