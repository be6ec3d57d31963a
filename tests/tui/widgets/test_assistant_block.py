"""AssistantBlock lays out its Markdown blocks with the stream layout (it keeps the placements of the
blocks that did not change): every kind of block must stand where Textual's vertical layout puts it,
whether the text came at once or streamed in pieces."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Label
from textual.widgets.markdown import MarkdownFence

from tui.widgets.assistant_block import AssistantBlock

EVERY_KIND = """# Title

Some *text* with `code` and a [link](https://example.com).

## Second

### Third level

- one
- two
  - nested

1. first
2. second

> a quote
> over two lines

```python
def f(x):
    return x
```

| a | b |
|---|---|
| 1 | 2 |

---

#### Four

A last paragraph, long enough to wrap around the width of its column a few times, to see that the
wrapped height is the same in both layouts and that nothing after it moves.
"""


class VerticalTwin(AssistantBlock):
    """The same block with Textual's vertical layout, as Markdown has it."""

    DEFAULT_CSS = "VerticalTwin { layout: vertical; }"


class Side(App[None]):
    def compose(self) -> ComposeResult:
        with Horizontal():
            yield AssistantBlock(id="stream")
            yield VerticalTwin(id="vertical")


def placements(block: Widget) -> list[tuple[str, int, int, int]]:
    top = block.content_region.y
    return [(type(child).__name__, child.region.y - top, child.region.height, child.region.width)
            for child in block.children]


async def test_every_kind_of_block_stands_where_the_vertical_layout_puts_it() -> None:
    app = Side()
    async with app.run_test(size=(140, 80)) as pilot:
        stream, vertical = app.query_one("#stream", AssistantBlock), app.query_one("#vertical", VerticalTwin)
        await stream.update(EVERY_KIND)
        await vertical.update(EVERY_KIND)
        await pilot.pause()
        kinds = {kind for kind, *_ in placements(stream)}
        assert {"MarkdownH1", "MarkdownH3", "MarkdownBulletList", "MarkdownOrderedList", "MarkdownBlockQuote",
                "MarkdownFence", "MarkdownTable", "MarkdownHorizontalRule", "MarkdownParagraph"} <= kinds
        assert placements(stream) == placements(vertical)
        assert stream.region.height == vertical.region.height


async def test_a_streamed_reply_ends_where_the_same_text_at_once_would() -> None:
    app = Side()
    async with app.run_test(size=(140, 80)) as pilot:
        stream, vertical = app.query_one("#stream", AssistantBlock), app.query_one("#vertical", VerticalTwin)
        writer = AssistantBlock.get_stream(stream)
        for start in range(0, len(EVERY_KIND), 7):
            await writer.write(EVERY_KIND[start:start + 7])
            if start % 70 == 0:
                await pilot.pause()  # a frame now and then, as while a reply streams
        await writer.stop()
        await vertical.update(EVERY_KIND)
        await pilot.pause()
        assert placements(stream) == placements(vertical)


class Alone(App[None]):
    def compose(self) -> ComposeResult:
        yield AssistantBlock(id="stream")


async def test_a_block_that_grew_as_it_streamed_looks_as_it_does_drawn_afresh() -> None:
    """The block repaints only the rows it gains (and its bottom gutter, which moves down): what it
    shows after streaming must be what a full repaint of every widget draws. Here it has a background,
    a left border and a bottom border of its own, so a row left as drawn before would show; the column
    is narrow, so every piece adds rows; a frame after each piece, as while a reply streams."""
    app = Alone()
    async with app.run_test(size=(48, 160)) as pilot:
        block = app.query_one("#stream", AssistantBlock)
        block.styles.background = "darkblue"
        block.styles.border_bottom = ("heavy", "red")
        block.styles.border_left = ("outer", "green")  # as the welcome and help blocks have (tui/app.tcss)
        writer = AssistantBlock.get_stream(block)
        heights = []
        for start in range(0, len(EVERY_KIND), 23):
            await writer.write(EVERY_KIND[start:start + 23])
            await pilot.pause()
            heights.append(block.region.height)
        await writer.stop()
        await pilot.pause()
        assert len(set(heights)) > 10  # it did grow, many times
        streamed = app.export_screenshot()
        for widget in [block, *block.walk_children()]:
            widget.refresh()
        await pilot.pause()
        assert app.export_screenshot() == streamed


async def test_a_nested_widget_that_grows_moves_the_blocks_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's stream layout measures again only the blocks that asked for a layout (and those after
    them). The code of a fence is a widget inside its block: when it grows in the same frame as a
    later block asks for a layout, the fence must be measured again in that frame, or it keeps its
    old height and every block after it stands too high until something lays the reply out again
    (seen in a real terminal under load: a reply's last screenful a row off). Every frame's layout
    is recorded."""
    app = Side()
    frames: list[list[tuple[str, int, int, int]]] = []
    lay_out = Screen._refresh_layout

    def recorded(screen: Screen[object], *args: object, **kwargs: object) -> None:
        lay_out(screen, *args, **kwargs)  # type: ignore[arg-type]
        if screen.is_attached and screen.query("#stream"):
            frames.append(placements(screen.query_one("#stream", AssistantBlock)))

    monkeypatch.setattr(Screen, "_refresh_layout", recorded)
    async with app.run_test(size=(140, 80)) as pilot:
        stream, vertical = app.query_one("#stream", AssistantBlock), app.query_one("#vertical", VerticalTwin)
        text = "```\none\n```\n\nafter it\n\n---\n\nthe end\n"
        await stream.update(text)
        await vertical.update(text)
        await pilot.pause()
        frames.clear()
        for block in (stream, vertical):
            block.query_one(MarkdownFence).query_one(Label).update("one\ntwo\nthree\nfour")
            block.query("MarkdownParagraph").first().refresh(layout=True)  # a later block, in the same frame
        await pilot.pause()
        expected = placements(vertical)
        assert frames, "no frame was laid out"
        assert frames[0] == expected  # the first frame after the change, not only a later one
        assert placements(stream) == expected
