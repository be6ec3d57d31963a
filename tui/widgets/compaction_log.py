"""CompactionLog: every compaction step of the session, newest last; Enter opens the file it wrote."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.events import CompactionStep
from core.text import visible
from tui.format import count, plural
from tui.widgets.chat_blocks import STEP_ICONS


class CompactionLog(OptionList):
    """The pipeline's history for this session (the chat shows the same steps inline)."""

    DEFAULT_CSS = """
    CompactionLog {
        height: auto;
        max-height: 30%;
        background: transparent;
        border: none;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        display: none;
        &.-has-steps { display: block; }
    }
    """

    @dataclass
    class OpenFile(Message):
        """Open the archive file a step wrote."""

        path: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps: list[CompactionStep] = []

    def add_step(self, step: CompactionStep) -> None:
        self.steps.append(step)
        saved = step.saved
        parts: list[str | tuple[str, str]] = [
            (f"{len(self.steps):>2} ", "dim"),
            (f"{STEP_ICONS.get(step.step, '⚙')} {visible(step.step)}", "bold"),
            f" {count(step.chars_before)}→{count(step.chars_after)}",
        ]
        if saved > 0:
            parts.append((f" −{count(saved)}", "$text-success"))
        parts.append((f" · {plural(step.messages_affected, 'msg')}", "dim"))
        if step.files_written:
            parts.append((f" → {visible(step.files_written[0])}", "dim"))
        self.add_option(Option(Content.assemble(*parts), id=str(len(self.steps) - 1)))
        self.add_class("-has-steps")
        self.border_title = f"Pipeline · {plural(len(self.steps), 'step')}"
        self.scroll_end(animate=False)

    def reset(self) -> None:
        self.steps.clear()
        self.clear_options()
        self.remove_class("-has-steps")

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        step = self.steps[int(event.option.id or 0)]
        if step.files_written:
            self.post_message(self.OpenFile(step.files_written[0]))
        else:
            self.app.notify("this step wrote no file", severity="information")
