"""FactsView: which of the conversation's facts the model can no longer see (`agent.facts()`).

The facts the model cannot see come first, constraints first, in the warning colour, each with the
archive file that holds it (`enter` opens that file); then how many are still visible. `f6` keeps the selected constraint
(`agent.keep_fact`: its message pinned, or a short pinned note), so the next request carries it and
every later step keeps it. The view keeps its own copy of the facts keyed by (kind, text), applied
from the `facts` each `HistoryChanged` carries; it never reads the agent back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.text import one_line, visible
from core.values.records import FACT_KINDS, Fact, fact_rank
from tui.format import plural

LOST_PREFIX = "of your constraints"
"""The core's notice after a change that hid constraints: '2 of your constraints are no longer visible: ...'."""


def lost_constraints_hint(text: str, key: str) -> str:
    """The core's notice with the key that shows the hidden constraints (other notices as they are)."""
    head, _, rest = text.partition(" ")
    if head.isdigit() and rest.startswith(LOST_PREFIX) and "no longer visible" in rest:
        return f"{text} · {key} shows them (Facts)"
    return text


class FactsView(OptionList):
    """The fact check, the facts the model cannot see first (see the module docstring)."""

    DEFAULT_CSS = """
    FactsView {
        height: auto;
        min-height: 6;
        background: transparent;
        border: none;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "f6",
            "keep_fact",
            "Keep",
            id="facts.keep",
            tooltip="Keep the selected constraint: visible in the next request and through every later step",
        ),
    ]

    @dataclass
    class Open(Message):
        """Open the archive file that holds this fact."""

        fact: Fact

    @dataclass
    class Keep(Message):
        """Make this fact visible again and keep it (`agent.keep_fact`)."""

        fact: Fact

    def __init__(self, facts: Sequence[Fact] = (), *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.facts: dict[tuple[str, str], Fact] = {}
        self._shown: list[Fact] = []
        self.apply(facts, paint=False)

    def on_mount(self) -> None:
        self.repaint()

    def apply(self, facts: Sequence[Fact], *, paint: bool = True) -> None:
        """A HistoryChanged's facts: new ones, and those whose visibility or archive file changed."""
        for fact in facts:
            self.facts[(fact.kind, fact.text)] = fact
        if facts and paint:
            self.repaint()

    def reset(self, facts: Sequence[Fact] = ()) -> None:
        self.facts.clear()
        self.apply(facts)
        self.repaint()

    def hidden(self) -> list[Fact]:
        """What the model cannot see, constraints first (then paths, errors), each in the order first seen."""
        return sorted((fact for fact in self.facts.values() if not fact.visible), key=fact_rank)

    def repaint(self) -> None:
        highlighted = self.highlighted
        self.clear_options()
        hidden = self.hidden()
        constraints = sum(1 for fact in hidden if fact.kind == "constraint")
        self.border_title = f"Facts · {len(hidden)} not visible" + (
            f" ({plural(constraints, 'constraint')})" if constraints else ""
        )
        self._shown = hidden
        options = [Option(self._row(fact), id=f"fact:{index}") for index, fact in enumerate(hidden)]
        visible_now = [fact for fact in self.facts.values() if fact.visible]
        counts = ", ".join(
            plural(sum(1 for fact in visible_now if fact.kind == kind), kind) for kind in FACT_KINDS
        )
        summary = "the model sees every fact of the conversation" if not hidden else "still visible"
        options.append(
            Option(
                Content.styled(
                    f"{summary}: {counts}"
                    if self.facts
                    else "no facts yet: "
                    "constraints you type (must, never, always, only, avoid, don't), "
                    "files the tools read or write, error lines",
                    "dim",
                ),
                disabled=True,
            )
        )
        self.add_options(options)
        if highlighted is not None and hidden:
            self.highlighted = min(highlighted, len(hidden) - 1)

    def _row(self, fact: Fact) -> Content:
        style = "$text-warning bold" if fact.kind == "constraint" else "$text-warning"
        where = f" · in {visible(fact.path)}" if fact.path else " · on disk nowhere"
        keep = " · f6 keeps it" if fact.kind == "constraint" else ""
        return Content.assemble(
            ("⚠ " if fact.kind == "constraint" else "· ", style),
            (f"{fact.kind}: ", "dim"),
            (visible(one_line(fact.text, 120)), style),
            (where, "dim"),
            (keep, "$text-accent"),
        )

    def selected_fact(self) -> Fact | None:
        option = self.highlighted_option
        if option is None or not option.id or not option.id.startswith("fact:"):
            return None
        index = int(option.id.removeprefix("fact:"))
        return self._shown[index] if index < len(self._shown) else None

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        fact = self.selected_fact()
        if fact is not None and fact.path is not None:
            self.post_message(self.Open(fact))

    def action_keep_fact(self) -> None:
        fact = self.selected_fact()
        if fact is None:
            self.app.notify("Select a fact the model cannot see first (↑/↓)", severity="warning")
        elif fact.kind != "constraint":
            self.app.notify(
                "only your constraints are kept this way; ask the model to read the file again",
                severity="warning",
                markup=False,
            )
        else:
            self.post_message(self.Keep(fact))
