"""AssistantBlock: the model's text in the chat, a Textual `Markdown` widget fed by its stream.

Its blocks are laid out with Textual's stream layout (as the transcript's are), which keeps the
placements of the blocks that did not change: while a long reply streams, each frame measures the
paragraph that grew, not all of them again. The stream layout sizes every block by its content, so
the one fixed height among Markdown's blocks, the horizontal rule's, is kept with `max-height`.

In a module of its own because Textual's Markdown brings markdown-it and pygments (tens of
milliseconds to import): the chat imports it on the first block it shows, after the first frame.
"""

from __future__ import annotations

from textual.widgets import Markdown


class AssistantBlock(Markdown):
    """Assistant text, streamed through `Markdown.get_stream()` (the pane escapes it before writing)."""

    DEFAULT_CSS = """
    AssistantBlock {
        layout: stream;
        margin: 1 0 0 0;
        padding: 0 1 0 2;
        background: transparent;
        &.-cancelled { opacity: 70%; }
        MarkdownHorizontalRule { max-height: 2; }
    }
    """
