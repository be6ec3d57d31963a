"""BreakdownView: what fills the context, as a segmented bar and a table, live.

Fed with `core.history.categories.Breakdown` (kept current from HistoryChanged splices) or plain figures:
one row per category in chars, an estimated token share and a percentage, and under each the
largest items with their message index and block. Selecting a category row or an item posts
`BreakdownView.Selected` naming the message (and block) so the app can select it in the tree.
The system prompt and the tool schemas are part of every request but not of the history: pass their
sizes as `request_extra` and they get rows of their own (not selectable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from core.history.categories import CATEGORIES, Breakdown, Item
from core.text import visible
from tui.format import count, display_line, short_count

COLOURS: dict[str, str] = {
    "system": "grey50",
    "tools": "grey66",
    "user": "dodger_blue1",
    "assistant": "medium_purple1",
    "tool_use": "dark_orange",
    "tool_result": "gold1",
    "markers": "spring_green2",
    "overhead": "grey42",
}
LABELS: dict[str, str] = {
    "system": "system prompt",
    "tools": "tool schemas",
    "user": "user text",
    "assistant": "assistant text",
    "tool_use": "tool calls",
    "tool_result": "tool results",
    "markers": "markers",
    "overhead": "JSON overhead",
}
ITEMS_PER_CATEGORY = 3


def segment_bar(figures: Mapping[str, int], width: int) -> Text:
    """One line: each category a run of cells proportional to its chars (at least one if non-zero)."""
    width = max(width, 1)
    total = sum(figures.values())
    text = Text()
    if total <= 0:
        return Text("·" * width, Style(color="grey42"))
    cells = {name: round(value / total * width) for name, value in figures.items()}
    for name, value in figures.items():
        if value > 0 and cells[name] == 0:
            cells[name] = 1
    overflow = sum(cells.values()) - width
    for name in sorted(cells, key=lambda key: -cells[key]):  # trim the widest runs first
        if overflow <= 0:
            break
        cut = min(overflow, max(cells[name] - 1, 0))
        cells[name] -= cut
        overflow -= cut
    for name, value in cells.items():
        if value > 0:
            text.append("█" * value, Style(color=COLOURS.get(name, "white")))
    if len(text) < width:
        text.append(" " * (width - len(text)))
    return text


class BreakdownView(Widget):
    """The breakdown of the context: a segmented bar, then categories with their largest items."""

    DEFAULT_CSS = """
    BreakdownView {
        height: auto;
        padding: 0 1;
        border-top: solid $panel-lighten-2;
        border-title-color: $text-primary;
        border-title-style: bold;
        &:focus-within { border-top: thick $accent; border-title-color: $text-accent; }
        & > #breakdown-bar { height: 1; }
        & > #breakdown-table {
            height: auto; max-height: 24; border: none; background: transparent; padding: 0;
            text-wrap: nowrap; text-overflow: ellipsis;  /* one line a row, whatever the label */
        }
    }
    """

    @dataclass
    class Selected(Message):
        """A category or an item was chosen: select `message` (and `block`) in the message tree.

        For a category row, `message`/`block` are those of its largest item (None when it has none).
        """

        category: str
        message: int | None
        block: int | None

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.figures: dict[str, int] = {}
        self.items: dict[str, list[Item]] = {}
        self.tokens: int | None = None
        self.tokens_label = "est."
        self._targets: dict[str, tuple[str, int | None, int | None]] = {}
        self._shown: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="breakdown-bar")
        yield OptionList(id="breakdown-table")

    # --- feeding ----------------------------------------------------------------------------------

    def follow(
        self,
        tracker: Breakdown,
        *,
        tokens: int | None = None,
        exact: bool = False,
        request_extra: Mapping[str, int] | None = None,
    ) -> None:
        """Show the tracker's figures and largest items (call after `tracker.update(event)`)."""
        items: dict[str, Sequence[Item]] = {
            name: tracker.largest(name, ITEMS_PER_CATEGORY) for name in CATEGORIES if name != "overhead"
        }
        self.show(tracker.totals, items=items, tokens=tokens, exact=exact, request_extra=request_extra)

    def show(
        self,
        figures: Mapping[str, int],
        *,
        items: Mapping[str, Sequence[Item]] | None = None,
        tokens: int | None = None,
        exact: bool = False,
        request_extra: Mapping[str, int] | None = None,
    ) -> None:
        """Show `figures` (chars by category); `tokens` is the total the token shares are taken from."""
        merged = {**(request_extra or {}), **figures}
        self.figures = merged
        self.items = {name: list(found) for name, found in (items or {}).items()}
        self.tokens = tokens
        self.tokens_label = "exact share" if exact else "est."
        key = (tuple(merged.items()), tuple((n, tuple(i)) for n, i in self.items.items()), tokens, exact)
        if key == self._shown:
            return
        self._shown = key
        if self.is_mounted:
            self._paint()

    def on_mount(self) -> None:
        self._paint()

    def on_resize(self) -> None:
        self._paint_bar()

    # --- painting ---------------------------------------------------------------------------------

    def _token_share(self, chars: int) -> int | None:
        total = sum(self.figures.values())
        if self.tokens is None or total <= 0:
            return None
        return round(self.tokens * chars / total)

    def _paint_bar(self) -> None:
        if not self.is_mounted:
            return
        bar = self.query_one("#breakdown-bar", Static)
        width = max(self.content_region.width or self.size.width, 10)
        bar.update(segment_bar(self.figures, width))

    def _paint(self) -> None:
        self._paint_bar()
        table = self.query_one("#breakdown-table", OptionList)
        highlighted = table.highlighted_option.id if table.highlighted_option is not None else None
        total = sum(self.figures.values())
        options: list[Option] = []
        self._targets = {}
        for name, chars in self.figures.items():
            options.append(Option(self._category_row(name, chars, total), id=f"cat:{name}"))
            largest = self.items.get(name) or []
            first = largest[0] if largest else None
            self._targets[f"cat:{name}"] = (
                name,
                first.message if first else None,
                first.block if first else None,
            )
            for rank, item in enumerate(largest):
                option_id = f"item:{name}:{rank}"
                options.append(Option(self._item_row(item), id=option_id))
                self._targets[option_id] = (name, item.message, item.block)
        table.clear_options()
        table.add_options(options)
        if highlighted is not None:
            try:
                table.highlighted = table.get_option_index(highlighted)
            except Exception:  # the row is gone
                table.highlighted = None
        table.border_title = f"{count(total)} chars"

    def _category_row(self, name: str, chars: int, total: int) -> Text:
        share = chars / total if total else 0.0
        tokens = self._token_share(chars)
        row = Text()
        row.append("■ ", Style(color=COLOURS.get(name, "white")))
        row.append(f"{LABELS.get(name, name):<15}", Style(bold=True))
        row.append(f"{count(chars):>11} chars")
        row.append(f"  {'~' + short_count(tokens) if tokens is not None else '-':>7} tok", Style(dim=True))
        row.append(f"  {share:>4.0%}")
        if name in ("system", "tools"):
            row.append("  (request)", Style(dim=True))
        return row

    def _item_row(self, item: Item) -> Text:
        where = f"#{item.message + 1}" + (
            f".{item.block + 1}" if item.block is not None else ""
        )  # as the tree numbers
        row = Text("    ")
        row.append(f"{where:<9}", Style(dim=True))
        row.append(f"{count(item.chars):>9}  ")
        row.append(visible(display_line(item.label, 48)))  # untrusted text: a Text, never markup
        return row

    @on(OptionList.OptionSelected, "#breakdown-table")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        target = self._targets.get(event.option.id or "")
        if target is None:
            return
        category, message, block = target
        if category in ("system", "tools"):
            return  # not in the history: nothing to select in the tree
        self.post_message(self.Selected(category, message, block))


__all__ = ["COLOURS", "LABELS", "BreakdownView", "segment_bar"]
