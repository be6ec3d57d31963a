"""AssistantBlock: the model's text in the chat, a Textual `Markdown` widget fed by its stream.

In a module of its own because Textual's Markdown brings markdown-it and pygments (tens of
milliseconds to import): the chat imports it on the first block it shows, after the first frame.
"""

from __future__ import annotations

from textual.widgets import Markdown


class AssistantBlock(Markdown):
    """Assistant text, streamed through `Markdown.get_stream()` (the pane escapes it before writing)."""

    DEFAULT_CSS = """
    AssistantBlock {
        margin: 1 0 0 0;
        padding: 0 1 0 2;
        background: transparent;
        &.-cancelled { opacity: 70%; }
    }
    """
