"""CallDiffView: what changed between two calls of a conversation: messages added, removed, changed.

It holds the calls of the conversation the proxy view shows (handed over from the watch's events)
and compares two of them: a later call and a base, by default the latest call and the one before it.
`left`/`right` choose the later call, `[`/`]` the base (any earlier call). A call and the one before
it carry their diff already (`ProxyCall.diff`); any other pair is aligned in a worker thread
(`compare_calls`). One row per difference, labelled as the message tree labels messages
(tui/widgets/node_labels.py); `enter` (or a click) on a row opens the message, or for a changed
one the line diff of its two versions. Every text shown is the request's: data, never markup.
"""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from core.history.sizes import message_chars
from core.proxy.calls import ProxyCall, compare_calls
from core.proxy.diff import RequestDiff
from core.text import visible
from tui.format import count, plural
from tui.widgets.node_labels import NodeLabels

_STYLES = {
    "user": Style(color="dodger_blue1", bold=True),
    "assistant": Style(color="medium_purple1", bold=True),
    "muted": Style(dim=True),
    "tool": Style(color="dark_orange"),
    "summary": Style(color="spring_green2", bold=True),
    "placeholder": Style(color="cyan"),
    "persisted": Style(color="medium_purple1"),
    "snip": Style(color="gold1", bold=True),
    "error": Style(color="red1"),
    "pinned": Style(color="spring_green2"),
    "shortened": Style(color="gold1", italic=True),
    "link": Style(underline=True),
}
_SIGNS = {
    "added": ("+", Style(color="green3", bold=True)),
    "removed": ("−", Style(color="red1", bold=True)),
    "changed": ("~", Style(color="gold1", bold=True)),
    "request": ("⚙", Style(color="cyan", bold=True)),
    "marks": ("·", Style(dim=True)),
}
ROW_LIMIT = 2_000  # rows shown at most (a first call of a long history lists every message as added)


@dataclass(frozen=True)
class DiffRow:
    """One difference: its kind, and where it is in the base call and in the later call."""

    kind: str  # "added", "removed", "changed", "request" (system, tools, model), "marks" (cache marks moved)
    base: int | None = None
    later: int | None = None
    part: str = ""  # for "request": "system", "tools" or "model"


def diff_rows(diff: RequestDiff) -> list[DiffRow]:
    """The rows of a diff: the request's own changes (model, system prompt, tools), the messages removed
    (in the base's order), then those changed and added in the later call's order, then moved cache marks."""
    rows = [
        DiffRow("request", part=part)
        for part, changed in (
            ("model", diff.model_changed),
            ("system", diff.system_changed),
            ("tools", diff.tools_changed),
        )
        if changed
    ]
    rows.extend(DiffRow("removed", base=base) for base in diff.removed)
    later = [DiffRow("changed", base, index) for base, index in diff.changed]
    later.extend(DiffRow("added", later=index) for index in diff.added)
    rows.extend(sorted(later, key=lambda row: row.later or 0))
    if diff.remarked:
        rows.append(DiffRow("marks", later=diff.remarked[0]))
    return rows


class CallDiffView(Vertical, can_focus=False):
    """The diff between two calls of the shown conversation (see the module docstring)."""

    DEFAULT_CSS = """
    CallDiffView {
        height: 1fr;
        padding: 0 1;
        & > #diff-head { height: auto; color: $text-muted; }
        & > #diff-rows { height: 1fr; border: none; background: transparent; padding: 0; text-wrap: nowrap;
                         text-overflow: ellipsis; }
    }
    """

    @dataclass
    class Open(Message):
        """A row was chosen: show `text` (a message, or the line diff of its two versions) under `title`."""

        title: str
        text: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.calls: list[ProxyCall] = []
        self.later: int | None = None
        """The index of the later call; None follows the newest."""
        self.base: int | None = None
        """The index of the base call; None is the call before the later one."""
        self.diff: RequestDiff | None = None
        """The diff shown (None while it is being aligned, or without two calls)."""
        self.rows: list[DiffRow] = []
        self.labels = NodeLabels(lambda name: _STYLES.get(name, Style()), lambda _path: None)

    def compose(self) -> ComposeResult:
        yield Static(id="diff-head")
        yield OptionList(id="diff-rows")

    def on_mount(self) -> None:
        self._show()

    # --- feeding ------------------------------------------------------------------------------------

    def show_calls(self, calls: Sequence[ProxyCall]) -> None:
        """Another conversation: its calls, oldest first (the latest and the one before it are compared)."""
        self.calls = list(calls)
        self.later = self.base = None
        self._show()

    def call_started(self, call: ProxyCall) -> None:
        """A new call of the shown conversation (followed when the view follows the newest)."""
        self.calls.append(call)
        if self.later is None:
            self._show()
        else:
            self._paint_head()

    def call_finished(self, call: ProxyCall) -> None:
        """A call of the shown conversation ended (its reply does not change what it sent)."""
        for index, known in enumerate(self.calls):
            if known.id == call.id:
                self.calls[index] = call
                break

    # --- choosing the two calls ------------------------------------------------------------------------

    @property
    def later_index(self) -> int | None:
        if not self.calls:
            return None
        return len(self.calls) - 1 if self.later is None else min(self.later, len(self.calls) - 1)

    @property
    def base_index(self) -> int | None:
        later = self.later_index
        if later is None or later == 0:
            return None
        return later - 1 if self.base is None else min(self.base, later - 1)

    def move_later(self, step: int) -> None:
        """Compare a later (step > 0) or earlier call with the one before it."""
        later = self.later_index
        if later is not None:
            self.compare(later + step)

    def compare(self, later: int) -> None:
        """Compare call `later` (its index in the conversation) with the one before it; the newest call
        is followed as new calls come."""
        if not self.calls:
            return
        target = max(0, min(later, len(self.calls) - 1))
        self.later = None if target == len(self.calls) - 1 else target
        self.base = None
        self._show()

    def move_base(self, step: int) -> None:
        """Compare the later call with an earlier (step < 0) or later base, up to the call before it."""
        later, base = self.later_index, self.base_index
        if later is None or base is None:
            return
        self.base = max(0, min(base + step, later - 1))
        self._show()

    # --- showing ----------------------------------------------------------------------------------------

    def _show(self) -> None:
        later, base = self.later_index, self.base_index
        if later is None:
            self._set_diff(None)
            return
        call = self.calls[later]
        if base is None:
            self._set_diff(call.diff if call.diff.first else None)
            return
        earlier = self.calls[base]
        if call.diff.previous == earlier.id:
            self._set_diff(call.diff)
        else:
            self.diff = None
            self._paint_head(aligning=True)
            self._align(earlier, call)

    @work(exclusive=True, group="call-diff", exit_on_error=False, description="compare two calls")
    async def _align(self, earlier: ProxyCall, later: ProxyCall) -> None:
        diff = await asyncio.to_thread(compare_calls, earlier, later)
        if self.later_index is not None and self.calls[self.later_index].id == later.id:
            self._set_diff(diff)

    def _set_diff(self, diff: RequestDiff | None) -> None:
        self.diff = diff
        self.rows = diff_rows(diff)[:ROW_LIMIT] if diff is not None else []
        self._paint_head()
        if self.is_mounted:
            self._paint_rows()

    def pair(self) -> tuple[ProxyCall | None, ProxyCall | None]:
        """(base call, later call) as shown now."""
        later, base = self.later_index, self.base_index
        return (
            self.calls[base] if base is not None else None,
            self.calls[later] if later is not None else None,
        )

    def _paint_head(self, aligning: bool = False) -> None:
        if not self.is_mounted:
            return
        earlier, later = self.pair()
        head = Text()
        if later is None:
            head.append("no calls in this conversation yet", Style(dim=True))
        else:
            newest = "" if self.later is not None else " (newest)"
            head.append(f"call {later.turn}{newest}", Style(bold=True))
            if earlier is not None:
                head.append(f" against call {earlier.turn}", Style(bold=True))
                head.append(f" · {plural(len(later.messages), 'message')} (was {len(earlier.messages)})")
            else:
                head.append(" · the conversation's first call: every message is new")
            if aligning:
                head.append(" · aligning…", Style(italic=True, dim=True))
            elif self.diff is not None and not self.diff.first:
                head.append(f"\n{visible(self.diff.describe())}")
            head.append(
                f"\n←/→ another call ({len(self.calls)} in all) · [/] another base · enter opens a row",
                Style(dim=True),
            )
        self.query_one("#diff-head", Static).update(head)
        self.border_title = (
            f"Diff · call {later.turn if later else '-'} vs {earlier.turn if earlier else '-'}"
        )

    def _paint_rows(self) -> None:
        rows = self.query_one("#diff-rows", OptionList)
        rows.clear_options()
        earlier, later = self.pair()
        if later is None:
            return
        if not self.rows and self.diff is not None:
            rows.add_option(
                Option(Text("the same request again: nothing changed", Style(dim=True)), disabled=True)
            )
            return
        rows.add_options(
            Option(self._row_text(row, earlier, later), id=str(number))
            for number, row in enumerate(self.rows)
        )

    def _row_text(self, row: DiffRow, earlier: ProxyCall | None, later: ProxyCall) -> Text:
        sign, style = _SIGNS[row.kind]
        text = Text(f"{sign} ", style)
        if row.kind == "request":
            text.append_text(_request_change(row.part, earlier, later))
            return text
        if row.kind == "marks":
            text.append(
                f"cache marks moved ({plural(len(self.diff.remarked) if self.diff else 0, 'message')}), "
                "content the same",
                Style(dim=True),
            )
            return text
        if row.kind == "removed" and earlier is not None and row.base is not None:
            message = earlier.messages[row.base]
            where = f"was #{row.base + 1} "
        elif row.later is not None:
            message = later.messages[row.later]
            where = (
                f"#{row.later + 1} " if row.kind == "added" else f"#{(row.base or 0) + 1}→#{row.later + 1} "
            )
        else:
            return text
        text.append(where, Style(dim=True))
        body = self.labels.message(row.later if row.later is not None else row.base or 0, message).body
        text.append_text(body if body is not None else Text(""))
        if row.kind == "changed" and earlier is not None and row.base is not None:
            text.append(f" (was {count(message_chars(earlier.messages[row.base]))} chars)", Style(dim=True))
        return text

    # --- opening a row ----------------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#diff-rows")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is None:
            return
        row = self.rows[int(event.option.id)]
        earlier, later = self.pair()
        if later is None:
            return
        title, text = row_text(row, earlier, later)
        self.post_message(self.Open(title, text))

    def focus_rows(self) -> None:
        self.query_one("#diff-rows", OptionList).focus()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _unified(before: Any, after: Any, names: tuple[str, str]) -> str:
    lines = difflib.unified_diff(
        _json(before).splitlines(), _json(after).splitlines(), *names, lineterm="", n=3
    )
    return "\n".join(lines) or "(the same, cache marks aside)"


def row_text(row: DiffRow, earlier: ProxyCall | None, later: ProxyCall) -> tuple[str, str]:
    """The title and text a chosen row opens: the message, or the line diff of its two versions."""
    base_name = f"call {earlier.turn}" if earlier is not None else "-"
    names = (base_name, f"call {later.turn}")
    if row.kind == "request" and earlier is not None:
        part = row.part
        before, after = (
            (earlier.model, later.model)
            if part == "model"
            else (earlier.system, later.system)
            if part == "system"
            else (earlier.tools, later.tools)
        )
        return f"{part} · {names[0]} → {names[1]}", _unified(before, after, names)
    if row.kind == "changed" and earlier is not None and row.base is not None and row.later is not None:
        return (
            f"#{row.base + 1} → #{row.later + 1} changed · {names[0]} → {names[1]}",
            _unified(earlier.messages[row.base], later.messages[row.later], names),
        )
    if row.kind == "removed" and earlier is not None and row.base is not None:
        return f"#{row.base + 1} removed · in {names[0]}", _json(earlier.messages[row.base])
    if row.later is not None:
        return f"#{row.later + 1} {row.kind} · in {names[1]}", _json(later.messages[row.later])
    return "diff", ""


def _request_change(part: str, earlier: ProxyCall | None, later: ProxyCall) -> Text:
    if earlier is None:
        return Text(part)
    if part == "model":
        return Text(f"model {visible(str(earlier.model))} → {visible(str(later.model))}")
    if part == "tools":
        return Text(
            f"tools changed ({len(earlier.tools or [])} → {len(later.tools or [])} tools, "
            f"{count(len(_json(earlier.tools)))} → {count(len(_json(later.tools)))} chars)"
        )
    return Text(
        f"system prompt changed ({count(len(_json(earlier.system)))} → {count(len(_json(later.system)))} chars)"
    )


__all__ = ["CallDiffView", "DiffRow", "diff_rows", "row_text"]
