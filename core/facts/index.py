"""The fact index: every fact the conversation held, kept up to date from the history's splices.

Each message of the history has a row: the facts known to be in its JSON. A fact is visible while
some row holds it. A change costs what it changed: the rows it removed give up their facts, and each
message it added is read for the facts it is a source of (core/facts/extract.py), then searched, in
one pass, for every fact the conversation ever held (core/facts/patterns.py), so a fact quoted in a
reply, kept in a note or read again is seen where it is. The one search a change cannot make is for
a new fact in the messages added before it was first seen: that search is made when the fact's last
known holder leaves, before it is called not visible, once per fact (afterwards every row has been
searched for it). A fact that leaves is out of the context with the archive file of the step that
removed its last holder (that step's ledger entry: its transcript for a run of messages, the
result's file for a tool result).

Visibility is the contract's: the fact's text, JSON-escaped as `json.dumps(..., ensure_ascii=False)`
writes it, is a substring of one message's JSON (the request's JSON is those messages joined with
", ", so a match could only span two messages if the fact's escaped text held a bare quote, which
an escaped text never does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.facts.extract import FactKey, facts_of
from core.facts.patterns import Patterns
from core.history.sizes import dumps
from core.values.records import Fact, FactReport, LedgerEntry
from core.values.splice import Splice

Message = dict[str, Any]
Part = tuple[int, Sequence[LedgerEntry]]
"""How many of a change's splices one step made (-1: all the rest), and the ledger entries of that step."""


@dataclass
class _Row:
    """One message of the history, the facts known to be in it (with the tool_use id of the result an
    error line came from), and when it was added (rows added before a fact was first seen were not
    searched for it)."""

    message: Any
    serial: int
    keys: dict[FactKey, str | None] = field(default_factory=dict)


@dataclass
class _State:
    kind: str
    text: str
    escaped: str
    order: int
    source: str
    discovered: int  # rows with a smaller serial were not searched for it (0: every row was)
    holders: int = 0
    path: str | None = None
    shown: Fact | None = None  # the last Fact made of it (a report reuses it while nothing changed)

    def fact(self) -> Fact:
        visible = self.holders > 0
        path = None if visible else self.path
        shown = self.shown
        if shown is None or shown.visible != visible or shown.path != path:
            shown = self.shown = Fact(self.kind, self.text, self.source, visible, path)
        return shown


def escaped(text: str) -> str:
    """The text as it appears inside a JSON string of the request."""
    return dumps(text)[1:-1]


class FactIndex:
    """The facts of one history (see the module docstring)."""

    def __init__(self, messages: Sequence[Message] = (), fallback: str | None = None) -> None:
        self._rows: list[_Row] = []
        self._facts: dict[FactKey, _State] = {}
        self._patterns = Patterns()
        self._serial = 0
        self.fallback = fallback
        """The file that holds every message of this history when no step's file does (the session log)."""
        if messages:
            self.apply((Splice(0, 0, tuple(messages)),))

    def __len__(self) -> int:
        return len(self._facts)

    # --- reading -------------------------------------------------------------------------------------

    def report(self) -> FactReport:
        """Every fact, in the order first seen."""
        return FactReport([state.fact() for state in self._facts.values()])

    def fact(self, kind: str, text: str) -> Fact | None:
        state = self._facts.get((kind, text))
        return state.fact() if state is not None else None

    def holders(self, kind: str, text: str) -> list[int]:
        """The positions of the messages that hold a fact."""
        key = (kind, text)
        return [position for position, row in enumerate(self._rows) if key in row.keys]

    # --- changing ------------------------------------------------------------------------------------

    def apply(self, changes: Sequence[Splice], parts: Sequence[Part] = ()) -> tuple[Fact, ...]:
        """Follow a change of the history; returns the facts that are new or whose visibility or
        archive file changed, in the order first seen. `parts` say which step made which splices
        (and what it took out), for the archive file of a fact that leaves."""
        before: dict[FactKey, tuple[bool, str | None]] = {}
        suspects: set[FactKey] = set()
        added: list[_Row] = []
        removed: list[_Row] = []  # held until the end, so that no new row can take a removed one's id
        first = self._serial
        new: list[_State] = []
        for number, change in enumerate(changes):
            entries = _entries_of(parts, number)
            start, stop = change.start, change.start + change.removed
            for position in range(start, stop):
                row = self._rows[position]
                removed.append(row)
                for key, block in row.keys.items():
                    state = self._facts[key]
                    before.setdefault(key, _seen(state))
                    state.holders -= 1
                    if state.holders == 0:
                        suspects.add(key)
                    # the newest file a step wrote it to (kept while other holders keep it visible)
                    state.path = _taken_to(position, row, key, block, state.escaped, entries) or state.path
            rows = [
                self._row(message, position, first, before, new)
                for position, message in enumerate(change.added, start)
            ]
            self._rows[start:stop] = rows
            added.extend(rows)
        self._patterns.add((state.escaped, (state.kind, state.text)) for state in new)
        gone = {id(row) for row in removed}
        for row in added:
            if id(row) not in gone:  # a row added, then removed by a later splice of the same change
                self._scan(row, before)
        lost = [self._facts[key] for key in suspects if self._facts[key].holders == 0]
        if lost:
            self._search_older(lost, before)
        for state in lost:
            if state.holders == 0:
                state.path = state.path or self.fallback
        changed = [self._facts[key] for key, old in before.items() if old != _seen(self._facts[key])]
        return tuple(state.fact() for state in sorted(changed, key=lambda state: state.order))

    def add_archived(self, found: Iterable[tuple[FactKey, str, str]]) -> None:
        """Facts read from the archive (key, source, file), for a history read back (a resume, an
        inspected file): those not seen yet are searched for in the history, and are out of the
        context with that file when it does not hold them."""
        new = []
        for (kind, text), source, path in found:
            if (kind, text) in self._facts:
                continue
            state = _State(kind, text, escaped(text), len(self._facts), source, self._serial, path=path)
            self._facts[(kind, text)] = state
            new.append(state)
        self._patterns.add((state.escaped, (state.kind, state.text)) for state in new)
        if new:
            self._search_older(new, {})

    def _row(
        self,
        message: Any,
        position: int,
        first: int,
        before: dict[FactKey, tuple[bool, str | None]],
        new: list[_State],
    ) -> _Row:
        row = _Row(message, self._serial)
        self._serial += 1
        for key, block in facts_of(message):
            state = self._facts.get(key)
            if state is None:
                state = self._facts[key] = _State(
                    key[0], key[1], escaped(key[1]), len(self._facts), f"messages.{position}", first
                )
                before[key] = (False, None)  # new: reported whatever it is
                new.append(state)
            else:
                before.setdefault(key, _seen(state))
            row.keys[key] = block
            state.holders += 1
        return row

    def _scan(self, row: _Row, before: dict[FactKey, tuple[bool, str | None]]) -> None:
        """Record every fact whose text the row's JSON holds (one pass, whatever the number of facts)."""
        for key in self._patterns.find(dumps(row.message)):
            if key not in row.keys:
                state = self._facts[key]
                before.setdefault(key, _seen(state))
                row.keys[key] = None
                state.holders += 1

    def _search_older(self, states: list[_State], before: dict[FactKey, tuple[bool, str | None]]) -> None:
        """Search the rows added before each fact was first seen (the only ones not searched for it);
        afterwards every row has been, so this happens once per fact."""
        oldest = max(state.discovered for state in states)
        for row in self._rows:
            if row.serial >= oldest:
                continue
            text: str | None = None
            for state in states:
                key = (state.kind, state.text)
                if row.serial < state.discovered and key not in row.keys:
                    text = dumps(row.message) if text is None else text
                    if state.escaped in text:
                        before.setdefault(key, _seen(state))
                        row.keys[key] = None
                        state.holders += 1
        for state in states:
            state.discovered = 0


def _seen(state: _State) -> tuple[bool, str | None]:
    """What a view shows of a fact: visible, or the file that holds it."""
    return (True, None) if state.holders > 0 else (False, state.path)


def _entries_of(parts: Sequence[Part], number: int) -> Sequence[LedgerEntry]:
    """The entries of the step that made splice `number` of a change."""
    seen = 0
    for count, entries in parts:
        if count < 0:  # every splice that is left
            return entries
        seen += count
        if number < seen:
            return entries
    return ()


def _taken_to(
    position: int,
    row: _Row,
    key: FactKey,
    block: str | None,
    escaped_text: str,
    entries: Sequence[LedgerEntry],
) -> str | None:
    """The archive file a step wrote a fact of `row` to, when the step took it out."""
    for entry in entries:
        if entry.kind == "messages" and entry.span is not None and entry.span[0] <= position < entry.span[1]:
            return entry.path
    for entry in entries:
        if entry.kind != "tool_result" or entry.tool_use_id is None:
            continue
        if block == entry.tool_use_id:
            return entry.path
        content = row.message.get("content") if isinstance(row.message, dict) else None
        for item in content if isinstance(content, list) else ():
            if (
                isinstance(item, dict)
                and item.get("type") == "tool_result"
                and str(item.get("tool_use_id")) == entry.tool_use_id
                and escaped_text in dumps(item.get("content", ""))
            ):
                return entry.path
    return None
