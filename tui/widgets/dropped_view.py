"""DroppedView: what compaction took out of the context (`agent.ledger`), newest first.

One group per change that took something out (a compaction, a drop), newest first, headed by its
step(s), the call it happened before and its totals; under it one row per entry: the tool call and
its input, or the run of messages, its size and whether it is back. `enter` opens the archived text
(the inspector's `ArchiveOpener`), `f7` restores a restorable entry (the screen's restore, as the
tree's placeholder does). The view keeps its own copy of the ledger, applied from the `LedgerChanged`
each `HistoryChanged` carries; it never reads the agent back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.facts.ledger import Ledger
from core.text import one_line, visible
from core.values.records import LedgerChanged, LedgerEntry
from tui.format import count, plural, short_count

KIND_ICONS = {"tool_result": "↩", "messages": "✂", "thinking": "✻"}


def entry_tokens(entries: Sequence[LedgerEntry]) -> str:
    """' (3.1k tok)' when every entry was counted, else ''."""
    tokens = [entry.tokens for entry in entries]
    return (
        f" ({short_count(sum(t for t in tokens if t is not None))} tok)"
        if tokens and None not in tokens
        else ""
    )


class DroppedView(OptionList):
    """The ledger, grouped by compaction, newest first (see the module docstring)."""

    DEFAULT_CSS = """
    DroppedView {
        height: auto;
        min-height: 6;
        background: transparent;
        border: none;
        padding: 0 1;
        text-wrap: nowrap;  /* one line an item, whatever its label */
        text-overflow: ellipsis;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "f7",
            "restore_entry",
            "Restore",
            id="dropped.restore",
            tooltip="Put the selected archived tool result back in context, byte-exact",
        ),
    ]

    @dataclass
    class Open(Message):
        """Open the archived text of this entry."""

        entry: LedgerEntry

    @dataclass
    class Restore(Message):
        """Put this entry's archived tool result back in context."""

        entry: LedgerEntry

    def __init__(self, entries: Sequence[LedgerEntry] = (), *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ledger = Ledger(entries)

    def on_mount(self) -> None:
        self.repaint()

    def apply(self, change: LedgerChanged | None) -> None:
        """A HistoryChanged's ledger change: entries added, or back in the context."""
        if change:
            self.ledger.apply(change)
            self.repaint()

    def reset(self, entries: Sequence[LedgerEntry] = ()) -> None:
        self.ledger = Ledger(entries)
        self.repaint()

    @property
    def entries(self) -> list[LedgerEntry]:
        return self.ledger.entries

    def groups(self) -> list[list[tuple[int, LedgerEntry]]]:
        """The entries by the change that made them, newest change first (entries in order within)."""
        indexed = list(enumerate(self.entries))
        grouped = [list(items) for _, items in groupby(indexed, key=lambda item: item[1].group)]
        return grouped[::-1]

    def repaint(self) -> None:
        highlighted = self.highlighted_option.id if self.highlighted_option is not None else None
        self.clear_options()
        out = [entry for entry in self.entries if entry.returned is None]
        self.border_title = (
            f"Dropped · {plural(len(out), 'item')} out of context, "
            f"{count(sum(entry.chars for entry in out))} chars{entry_tokens(out)}"
        )
        if not self.entries:
            self.add_option(Option(Content("nothing was taken out of the context yet"), disabled=True))
            return
        options: list[Option] = []
        for group in self.groups():
            entries = [entry for _, entry in group]
            steps = " + ".join(dict.fromkeys(visible(entry.step) for entry in entries))
            gone = [entry for entry in entries if entry.returned is None]
            head = Content.assemble(
                (f"{steps}", "bold"),
                (f" · before call {entries[0].call}", "dim"),
                f" · {plural(len(entries), 'item')}, {count(sum(entry.chars for entry in entries))} chars"
                f"{entry_tokens(entries)}",
                (f" · {len(entries) - len(gone)} back" if len(gone) < len(entries) else "", "$text-success"),
            )
            options.append(Option(head, id=f"group:{entries[0].group}", disabled=True))
            options.extend(Option(self._row(entry), id=f"entry:{index}") for index, entry in group)
        self.add_options(options)
        if highlighted is not None and highlighted in {option.id for option in options}:
            self.highlighted = self.get_option_index(highlighted)

    def _row(self, entry: LedgerEntry) -> Content:
        state: tuple[str, str]
        if entry.returned is not None:
            state = (f" · back ({entry.returned})", "$text-success")
        elif entry.restorable:
            state = (" · f7 restores", "$text-accent")
        else:
            state = (" · archived", "dim")
        tokens = f" ({short_count(entry.tokens)} tok)" if entry.tokens is not None else ""
        return Content.assemble(
            f"  {KIND_ICONS.get(entry.kind, '·')} ",
            visible(one_line(entry.label, 70)),
            (f" · {count(entry.chars)} chars{tokens}", "dim"),
            state,
        )

    def selected_entry(self) -> LedgerEntry | None:
        option = self.highlighted_option
        if option is None or not option.id or not option.id.startswith("entry:"):
            return None
        index = int(option.id.removeprefix("entry:"))
        return self.entries[index] if index < len(self.entries) else None

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        entry = self.selected_entry()
        if entry is None:
            return
        if entry.path is None:
            self.app.notify("this entry has no archive file", severity="warning")
            return
        self.post_message(self.Open(entry))

    def action_restore_entry(self) -> None:
        entry = self.selected_entry()
        if entry is None:
            self.app.notify("Select an entry first (↑/↓)", severity="warning")
        elif entry.returned is not None:
            self.app.notify("it is back in the context already", markup=False)
        elif not entry.restorable or entry.path is None:
            why = (
                "a run of messages comes back only by undoing its compaction (f3) while it is the newest"
                if entry.kind == "messages"
                else "too large to restore, or not restorable"
            )
            self.app.notify(f"cannot restore this one: {why}", severity="warning", markup=False)
        else:
            self.post_message(self.Restore(entry))
