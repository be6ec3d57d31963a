"""CompactionLog: every compaction step of the session, newest last; Enter opens the file it wrote.

Each entry shows the step's before -> after in chars, and in tokens the size of the call that went
out after it (its `ContextSample`, attached by `sampled`) or "tokens: -" until there is one: a token
figure scaled from the chars would only look exact. A summary step (compact_history,
reactive_compact) opens the summary beside the transcript it replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.text import visible
from core.values.miss import cache_cost_line
from tui.format import count, plural, short_count
from tui.widgets.chat_blocks import STEP_ICONS

if TYPE_CHECKING:
    from core.events import CompactionStep
    from core.values.samples import ContextSample


class CompactionLog(OptionList):
    """The pipeline's history for this session (the chat shows the same steps inline)."""

    DEFAULT_CSS = """
    CompactionLog {
        height: auto;
        max-height: 30%;
        background: transparent;
        border: none;
        border-top: solid $panel-lighten-2;
        border-title-color: $text-primary;
        border-title-style: bold;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        display: none;
        &.-has-steps { display: block; }
        &:focus { border-top: thick $accent; border-title-color: $text-accent; }
    }
    Inspector.-short CompactionLog.-has-steps { display: none; }
    """

    @dataclass
    class OpenFile(Message):
        """Open the archive file a step wrote (`step` names the step: a summary step shows its summary)."""

        path: str
        step: str = ""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps: list[CompactionStep] = []
        self.after: list[ContextSample | None] = []
        """Per step: the sample of the model call that followed it (None until it is known)."""

    def add_step(self, step: CompactionStep) -> None:
        self.steps.append(step)
        self.after.append(None)
        self.add_option(Option(self._entry(len(self.steps) - 1), id=str(len(self.steps) - 1)))
        self.add_class("-has-steps")
        self.border_title = f"Pipeline · {plural(len(self.steps), 'step')}"
        self.scroll_end(animate=False)

    def sampled(self, sample: ContextSample) -> None:
        """A model call ended: the steps before it (the last `len(sample.steps)` without a call yet)
        get its token figure."""
        waiting = [index for index, after in enumerate(self.after) if after is None]
        for index in waiting[-len(sample.steps) :] if sample.steps else []:
            self.after[index] = sample
            self.replace_option_prompt(str(index), self._entry(index))

    def tokens_text(self, index: int) -> str:
        """'tokens: -> 12.3k (call 4)' from the call after the step, else 'tokens: -'."""
        sample = self.after[index]
        tokens = sample.tokens if sample is not None else None
        if sample is None or tokens is None:
            return "tokens: -"
        kind = "" if sample.prompt_tokens is not None else " est"
        return f"tokens: -> {short_count(tokens)}{kind} (call {sample.call})"

    def _entry(self, index: int) -> Content:
        step = self.steps[index]
        saved = step.saved
        parts: list[str | tuple[str, str]] = [
            (f"{index + 1:>2} ", "dim"),
            (f"{STEP_ICONS.get(step.step, '⚙')} {visible(step.step)}", "bold"),
            f" {count(step.chars_before)}→{count(step.chars_after)} ch",
        ]
        if saved > 0:
            parts.append((f" −{count(saved)}", "$text-success"))
        cost = cache_cost_line(step.cache_invalidated_tokens, step.break_even_calls)
        if cost:  # first after the saving: the line is cut at the log's width
            parts.append((f" · {cost}", "$text-warning" if step.cache_invalidated_tokens else "dim"))
        parts.append((f" · {self.tokens_text(index)}", "dim"))
        parts.append((f" · {plural(step.messages_affected, 'msg')}", "dim"))
        if step.files_written:
            parts.append((f" → {visible(step.files_written[0])}", "dim"))
        return Content.assemble(*parts)

    def reset(self) -> None:
        self.steps.clear()
        self.after.clear()
        self.clear_options()
        self.remove_class("-has-steps")

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        step = self.steps[int(event.option.id or 0)]
        if step.files_written:
            self.post_message(self.OpenFile(step.files_written[0], step.step))
        else:
            self.app.notify("this step wrote no file", severity="information")
