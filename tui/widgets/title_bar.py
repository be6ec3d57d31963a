"""TitleBar: app name, working directory, turn state and the model (offline clearly badged).

One widget drawing one line (four widgets in a row cost the first frame their styling, layout and
paint each): the name, the workdir (cut with an ellipsis where the line is short), the state and the
model's badge, each in a style of its own (component classes, so a theme colours them).

The workdir is a name from the file system: it is shown through `core.text.visible`, so a directory
named with an escape sequence cannot set the terminal's title.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.widget import Widget

from core.text import visible


class TitleBar(Widget):
    """One line across the top."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "title-bar--name",
        "title-bar--workdir",
        "title-bar--state",
        "title-bar--busy",
        "title-bar--model",
        "title-bar--offline",
    }
    DEFAULT_CSS = """
    TitleBar {
        height: 1;
        dock: top;
        background: $panel;
        color: $foreground;
        text-wrap: nowrap;
        text-overflow: clip;
        & > .title-bar--name { text-style: bold; color: $text-primary; }
        & > .title-bar--workdir { color: $text-muted; }
        & > .title-bar--state { color: $text-muted; }
        & > .title-bar--busy { color: $text-warning; }
        & > .title-bar--model { background: $primary 30%; color: $text; }
        & > .title-bar--offline { background: $warning; color: $background; text-style: bold; }
    }
    """

    def __init__(self, workdir: str, model_label: str, offline: bool) -> None:
        super().__init__()
        self.workdir = workdir
        self.model_label = model_label
        self.offline = offline
        self.state = "idle"
        self.busy = False

    @property
    def badge(self) -> str:
        """The model's badge: `OFFLINE · why` or `model: name`."""
        return visible(f"OFFLINE · {self.model_label}" if self.offline else f"model: {self.model_label}")

    def set_state(self, text: str, busy: bool) -> None:
        if (text, busy) != (self.state, self.busy):
            self.state, self.busy = text, busy
            self.refresh()

    def render(self) -> Text:
        style = self.get_component_rich_style
        state = visible(self.state)
        room = self.size.width - cell_len(f" ctxtui  {state}  {self.badge} ")
        workdir = visible(self.workdir)
        if cell_len(workdir) > room:  # cut, at least its ellipsis (the badge is cut at the edge)
            workdir = set_cell_size(workdir, max(0, room - 1)) + "…"
        line = Text.assemble(
            " ",
            ("ctxtui", style("title-bar--name")),
            " ",
            (workdir, style("title-bar--workdir")),
            " " * max(0, room - cell_len(workdir)),
            " ",
            (state, style("title-bar--busy" if self.busy else "title-bar--state")),
            " ",
        )
        badge = style("title-bar--offline" if self.offline else "title-bar--model")
        line.append(" ", badge.background_style)
        line.append(self.badge, badge)
        line.append(" ", badge.background_style)
        return line
