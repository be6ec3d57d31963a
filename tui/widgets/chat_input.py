"""The prompt: a TextArea where Enter sends, ctrl+j (or shift/alt+enter) adds a line, up/down recall."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

NEWLINE_KEYS = frozenset({"ctrl+j", "shift+enter", "alt+enter", "ctrl+enter"})
PLACEHOLDER = "Message the agent…   enter send · ctrl+j newline · ↑ history · /help"


def prompt_text_of(event: events.Key) -> str | None:
    """What a key puts in the prompt: its character, a newline (ctrl+j and the like), "\r" for Enter
    (which sends); None for a key that types nothing."""
    if event.key == "enter":
        return "\r"
    if event.key in NEWLINE_KEYS:
        return "\n"
    return event.character if event.is_printable and event.character is not None else None


class ChatInput(TextArea):
    """Multi-line prompt with a recall history."""

    DEFAULT_CSS = """
    ChatInput {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: tall $border-blurred;
        padding: 0 1;
        &:focus { border: tall $border; }
        &.-busy { border: tall $warning 60%; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pageup", "page(-1)", "Scroll chat up", show=False, id="input.page_up"),
        Binding("pagedown", "page(1)", "Scroll chat down", show=False, id="input.page_down"),
    ]

    @dataclass
    class Submitted(Message):
        """The user pressed Enter on a non-empty prompt."""

        input: ChatInput
        text: str

        @property
        def control(self) -> ChatInput:
            return self.input

    @dataclass
    class Page(Message):
        """Page the transcript up (-1) or down (1) without leaving the prompt."""

        direction: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            highlight_cursor_line=False,
            placeholder=PLACEHOLDER,
        )
        self.prompt_history: list[str] = []
        self._recall: int | None = None
        self._draft = ""

    async def on_key(self, event: events.Key) -> None:
        """Enter sends, the newline keys break the line, up and down at the first and last line walk
        the prompts sent before; any other key goes on to TextArea (this handler runs before its own,
        which a prevented default skips)."""
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()
            return
        if event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self._recall_step(-1):
            event.stop()
            event.prevent_default()
            return
        if (
            event.key == "down"
            and self.cursor_location[0] == self.document.line_count - 1
            and self._recall_step(1)
        ):
            event.stop()
            event.prevent_default()
            return

    def on_paste(self, event: events.Paste) -> None:
        """The prompt took the paste (TextArea inserts it): it goes no further (the screen sends a
        paste no widget took to the prompt)."""
        event.stop()

    def submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
        self._recall = None
        self._draft = ""
        self.clear()
        self.post_message(self.Submitted(self, text))

    def _recall_step(self, step: int) -> bool:
        """Move through earlier prompts; False when there is nowhere to go (the key acts normally)."""
        if not self.prompt_history:
            return False
        if self._recall is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(self.prompt_history) - 1
        else:
            index = self._recall + step
        if index < 0:
            return True
        if index >= len(self.prompt_history):
            self._recall = None
            self.load_text(self._draft)
        else:
            self._recall = index
            self.load_text(self.prompt_history[index])
        self.move_cursor(self.document.end)
        return True

    def action_page(self, direction: int) -> None:
        self.post_message(self.Page(direction))
