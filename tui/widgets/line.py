"""Line: one line of `Content` that repaints without a layout pass (for text that ticks, like timers).

`Static.update` asks for a layout refresh every time; a fixed-height line does not need one.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget


class Line(Widget):
    """A single line of content; longer text ends in an ellipsis."""

    DEFAULT_CSS = """
    Line {
        height: 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(
        self, content: Content | None = None, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.content = content or Content("")

    def set(self, content: Content) -> None:
        if content != self.content:
            self.content = content
            self.refresh()

    def render(self) -> Content:
        return self.content
