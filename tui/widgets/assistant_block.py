"""AssistantBlock: the model's text in the chat, a Textual `Markdown` widget fed by its stream.

Its blocks are laid out with Textual's stream layout (as the transcript's are), which keeps the
placements of the blocks that did not change: while a long reply streams, each frame measures the
paragraph that grew, not all of them again. The stream layout sizes every block by its content, so
the one fixed height among Markdown's blocks, the horizontal rule's, is kept with `max-height`, and a
block whose inner widget changed size is measured again (tui/widgets/stream_layout.py).

Growing taller repaints only the rows it gained (and its bottom gutter, which moves down). What the
block draws itself (its padding and background; its Markdown blocks draw the text) is the same on
every row, so a row drawn before is still right; Textual repaints every row of a widget whose size
changed, which while a reply streams meant drawing the whole visible block again on every frame.
Any other change of size (a new width, shrinking) repaints it all, as does any change of style. That
hook sits on Textual internals: tui/textual_private.py `RepaintGainedRows`.

In a module of its own because Textual's Markdown brings markdown-it and pygments (tens of
milliseconds to import): the chat imports it on the first block it shows, after the first frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Markdown

from tui.textual_private import RepaintGainedRows
from tui.widgets.stream_layout import count_nested_requests

if TYPE_CHECKING:
    from textual.layout import Layout


class AssistantBlock(RepaintGainedRows, Markdown):
    """Assistant text, streamed through `Markdown.get_stream()` (the pane escapes it before writing)."""

    DEFAULT_CSS = """
    AssistantBlock {
        layout: stream;
        margin: 1 0 0 0;
        padding: 0 1 0 2;
        background: transparent;
        &.-cancelled { opacity: 70%; }
        &.welcome { color: $text-muted; border-left: outer $panel-lighten-2; }
        &.help { border-left: outer $accent; background: $accent 5%; }
        MarkdownHorizontalRule { max-height: 2; }
    }
    """

    def pre_layout(self, layout: Layout) -> None:
        count_nested_requests(
            self
        )  # a fence whose code grew, an item of a list (tui/widgets/stream_layout.py)
