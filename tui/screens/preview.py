"""PreviewScreen: what the next call's compaction would do, step by step, before it happens.

It lists `agent.preview()`'s steps (the same decisions prepare makes, nothing written, no model
called): each with its figures before -> after, what it touches (messages, the files it would
write) and its detail. A summary that would run is shown as the warning it is (the lossy step),
with the ways out: pin, drop, compact with a focus, or pause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from core.events import CompactionStep, cache_cost_line
from core.text import visible
from core.values.records import Fact
from tui.format import count, plural
from tui.screens import DIALOG_CSS

LOSSY = "compact_history"


def preview_summary(steps: Sequence[CompactionStep]) -> str:
    """One line: "next call: tool result budget · snip · micro (61,000 -> 38,000)", or that nothing would change."""
    if not steps:
        return "next call: no compaction (the history goes as it is)"
    names = " · ".join(dict.fromkeys(step.step.removesuffix("_compact").replace("_", " ") for step in steps))
    first, last = steps[0].chars_before, steps[-1].chars_after
    figures = f"{count(first)} -> ?" if steps[-1].step == LOSSY else f"{count(first)} -> {count(last)}"
    line = f"next call: {names} ({figures})"
    if any(step.step == LOSSY for step in steps):
        line += (
            " · ⚠ it will SUMMARISE (lossy): f4 preview, p pin, d drop, ctrl+o compact with a focus, f5 pause"
        )
    return line


def step_lines(step: CompactionStep) -> list[str]:
    """The lines that describe one planned step."""
    if step.step == LOSSY:
        head = f"⚠ {step.step}: {count(step.chars_before)} chars -> a summary (lossy; the model writes it)"
    else:
        head = f"{step.step}: {count(step.chars_before)} -> {count(step.chars_after)} chars (−{count(step.saved)})"
    lines = [head, f"   touches {plural(step.messages_affected, 'message')}"]
    if step.files_written:
        lines.append("   would write: " + ", ".join(step.files_written))
    if step.detail:
        lines.append(f"   {step.detail}")
    cost = cache_cost_line(step.cache_invalidated_tokens, step.break_even_calls)
    if cost:
        lines.append(f"   cache: {cost}")
    return lines


def at_risk_lines(facts: Sequence[Fact]) -> list[str]:
    """Before a summary: the visible facts only the summary could keep (constraints first)."""
    if not facts:
        return []
    constraints = sum(1 for fact in facts if fact.kind == "constraint")
    head = f"⚠ only the summary could keep {plural(len(facts), 'fact')}"
    head += f" ({plural(constraints, 'constraint')} of yours)" if constraints else ""
    return [
        head + ": unless it says them, the model no longer sees:",
        *(f"   {fact.kind}: {fact.text}" for fact in facts[:12]),
        *([f"   … and {len(facts) - 12} more (the Facts view lists them all)"] if len(facts) > 12 else []),
    ]


class PreviewScreen(ModalScreen[None]):
    """The dry run of the next prepare, for reading; esc closes it."""

    CSS_PATH = DIALOG_CSS

    DEFAULT_CSS = """
    #preview-dialog { height: auto; max-height: 90%; }
    #preview-steps { height: auto; max-height: 30; }
    .preview--step { margin-bottom: 1; }
    .preview--step.-lossy { color: $text-warning; text-style: bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="preview.close"),
        Binding("q", "close", "Close", show=False, id="preview.quit"),
    ]

    def __init__(
        self,
        steps: Sequence[CompactionStep],
        *,
        chars: int,
        limit: int,
        paused: bool,
        timing: str | None = None,
        held: Sequence[CompactionStep] = (),
        at_risk: Sequence[Fact] = (),
        server: str | None = None,
    ) -> None:
        super().__init__()
        self.steps = list(steps)
        self.server = server
        """Under a server engine: what the API does on its side (the steps are the client's: tool_result_budget)."""
        self.timing = timing
        self.held = list(held)
        """Cache-aware timing: the steps that wait for the cache (not run by the next call while it is warm)."""
        self.at_risk = list(at_risk)
        self.chars = chars
        self.limit = limit
        self.paused = paused

    def compose(self) -> ComposeResult:
        with Vertical(id="preview-dialog", classes="dialog"):
            yield Static(
                Content.assemble(("◔ ", "bold"), ("Next call: what compaction would do", "bold")),
                classes="dialog--title",
            )
            state = f"The history is {count(self.chars)} chars against a {count(self.limit)}-char limit."
            if self.paused:
                state += " Automatic compaction is paused: none of this runs until you resume it (f5)."
            yield Static(Content(state), classes="dialog--text")
            if self.timing is not None:
                timing = f"Compaction timing: {self.timing}."
                if self.held:
                    timing += " While the cache is warm these wait: " + "; ".join(
                        visible(" ".join(step_lines(step))) for step in self.held
                    )
                yield Static(Content(timing), classes="dialog--text")
            with VerticalScroll(id="preview-steps"):
                if self.server is not None:
                    yield Static(
                        Content(
                            f"A server engine is in force: the client runs tool_result_budget only, "
                            f"and {self.server}."
                        ),
                        id="preview-server",
                    )
                if not self.steps:
                    yield Static(
                        Content(
                            "No client step would fire: the next call sends the history as it is."
                            if self.server is not None
                            else "No step would fire: the next call sends the history as it is."
                        )
                    )
                for step in self.steps:
                    text = "\n".join(step_lines(step))
                    yield Static(
                        Content(visible(text)),
                        classes="preview--step" + (" -lossy" if step.step == LOSSY else ""),
                    )
                if self.at_risk:
                    yield Static(
                        Content(visible("\n".join(at_risk_lines(self.at_risk)))),
                        id="preview-at-risk",
                        classes="preview--step -lossy",
                    )
            if any(step.step == LOSSY for step in self.steps):
                yield Static(
                    Content(
                        "The summary replaces the history (kept whole in a transcript). Before it runs you can "
                        "pin results (p in the tree), drop some (d), compact with a focus (ctrl+o) or pause (f5)."
                    ),
                    classes="dialog--text",
                )
            yield Static(Content("esc close"), classes="dialog--hint")

    def action_close(self) -> None:
        self.dismiss(None)
