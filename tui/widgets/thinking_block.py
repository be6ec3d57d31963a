"""ThinkingBlock: a reply's thinking in the chat, collapsed to one line until it is opened.

Thinking blocks stay in the history verbatim (with their signatures, which the API checks) and are
sent back with the reply they came with; the chat shows their text, when the API gave one, behind
a collapsed title ('▸ thinking · 1,204 chars'). A redacted block has no readable text: its title
says so. The text is the model's: shown as data (`visible`, `Content`), never markup.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.content import Content
from textual.widgets import Collapsible, Static

from core.text import visible
from tui.format import plural


def thinking_blocks(content: Iterable[Any]) -> list[dict[str, Any]]:
    """The thinking and redacted-thinking blocks of a message's content, in order."""
    return [
        block
        for block in content
        if isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking")
    ]


class ThinkingBlock(Collapsible):
    """One thinking block, collapsed (enter or a click on its title opens it)."""

    DEFAULT_CSS = """
    ThinkingBlock {
        margin: 1 0 0 0;
        padding: 0;
        border: none;
        background: transparent;
        color: $text-muted;
        & > Contents { padding: 0 0 0 2; }
        & Static { color: $text-muted; text-style: italic; }
    }
    """

    def __init__(self, block: dict[str, Any]) -> None:
        redacted = block.get("type") == "redacted_thinking"
        text = "" if redacted else str(block.get("thinking", ""))
        self.text = text
        title = (
            "thinking · redacted by the API (kept encrypted, sent back as it came)"
            if redacted
            else f"thinking · {plural(len(text), 'char')}"
        )
        body = Static(Content(visible(text)) if text else Content("(no readable text)"))
        super().__init__(body, title=title, collapsed=True)
        self.add_class("thinking")
