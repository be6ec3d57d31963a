"""The fact index: every fact the conversation held, kept up to date from the history's splices.

Each message of the history has a row: the facts known to be in its JSON. A fact is visible while
some row holds it. A change costs what it changed: the rows it removed give up their facts, the
messages it added are read for the facts they are a source of (core/facts/extract.py) and searched
for the facts that are out of the context (so a fact that comes back, in a kept note or a re-read
file, is seen). A fact whose last known holder left is searched for in the whole history once
before it is called not visible (a fact is only recorded in the messages it came from and in those
searched for it, and another message may quote it); it is then out of the context, with the archive
file of the step that removed its last holder (the ledger entry of that step: its transcript for a
run of messages, the result's file for a tool result), and every later message is searched for it.

Visibility is the contract's: the fact's text, JSON-escaped as `json.dumps(..., ensure_ascii=False)`
writes it, is a substring of one message's JSON (the request's JSON is those messages joined with
", ", so a match could only span two messages if the fact's escaped text held a bare quote, which
an escaped text never does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.events import Splice
from core.facts.extract import FactKey, facts_of
from core.facts.records import Fact, FactReport, LedgerEntry
from core.history.sizes import dumps

Message = dict[str, Any]
Part = tuple[int, Sequence[LedgerEntry]]
"""How many of a change's splices one step made (-1: all the rest), and the ledger entries of that step."""


@dataclass
class _Row:
    """One message of the history and the facts known to be in it (with the tool_use id of the
    result an error line came from)."""

    message: Any
    keys: dict[FactKey, str | None] = field(default_factory=dict)


@dataclass
class _State:
    kind: str
    text: str
    escaped: str
    order: int
    source: str
    holders: int = 0
    path: str | None = None
    watched: bool = False  # out of the context, and every new message is searched for it

    def fact(self) -> Fact:
        visible = self.holders > 0
        return Fact(self.kind, self.text, self.source, visible, None if visible else self.path)


def escaped(text: str) -> str:
    """The text as it appears inside a JSON string of the request."""
    return dumps(text)[1:-1]


class FactIndex:
    """The facts of one history (see the module docstring)."""

    def __init__(self, messages: Sequence[Message] = (), fallback: str | None = None) -> None:
        self._rows: list[_Row] = []
        self._facts: dict[FactKey, _State] = {}
        self._watched: dict[FactKey, _State] = {}
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
        """The positions of the messages known to hold a fact (all of them while it is visible)."""
        key = (kind, text)
        return [position for position, row in enumerate(self._rows) if key in row.keys]

    # --- changing ------------------------------------------------------------------------------------

    def apply(self, changes: Sequence[Splice], parts: Sequence[Part] = ()) -> tuple[Fact, ...]:
        """Follow a change of the history; returns the facts that are new or whose visibility or
        archive file changed, in the order first seen. `parts` say which step made which splices
        (and what it took out), for the archive file of a fact that leaves."""
        before: dict[FactKey, tuple[bool, str | None]] = {}
        suspects: set[FactKey] = set()
        where: dict[FactKey, str] = {}
        added_rows: list[_Row] = []
        for number, change in enumerate(changes):
            entries = _entries_of(parts, number)
            start, stop = change.start, change.start + change.removed
            for position in range(start, stop):
                row = self._rows[position]
                for key, block in row.keys.items():
                    state = self._facts[key]
                    before.setdefault(key, (state.holders > 0, state.path))
                    state.holders -= 1
                    if state.holders == 0:
                        suspects.add(key)
                    path = _taken_to(position, row, key, block, state.escaped, entries)
                    if path is not None:
                        where[key] = path
            rows = [self._row(message, position, before) for position, message in enumerate(change.added, start)]
            self._rows[start:stop] = rows
            added_rows.extend(rows)
        if self._watched and added_rows:
            self._search(added_rows, list(self._watched.values()), before)
        lost = [self._facts[key] for key in suspects if self._facts[key].holders == 0]
        if lost:
            self._search(self._rows, lost, before)
        for state in lost:
            if state.holders == 0:
                state.path = where.get((state.kind, state.text)) or state.path or self.fallback
                state.watched = True
                self._watched[(state.kind, state.text)] = state
        changed = [self._facts[key] for key, old in before.items()
                   if old != (self._facts[key].holders > 0, self._facts[key].path)]
        return tuple(state.fact() for state in sorted(changed, key=lambda state: state.order))

    def add_archived(self, found: Iterable[tuple[FactKey, str, str]]) -> None:
        """Facts read from the archive (key, source, file), for a history read back (a resume, an
        inspected file): those not seen yet are searched for in the history, and are out of the
        context with that file when it does not hold them."""
        new = []
        for (kind, text), source, path in found:
            if (kind, text) in self._facts:
                continue
            state = _State(kind, text, escaped(text), len(self._facts), source, path=path)
            self._facts[(kind, text)] = state
            new.append(state)
        if new:
            self._search(self._rows, new, {})
        for state in new:
            if state.holders == 0:
                state.watched = True
                self._watched[(state.kind, state.text)] = state

    def _row(self, message: Any, position: int, before: dict[FactKey, tuple[bool, str | None]]) -> _Row:
        row = _Row(message)
        for key, block in facts_of(message):
            state = self._facts.get(key)
            if state is None:
                state = self._facts[key] = _State(key[0], key[1], escaped(key[1]), len(self._facts),
                                                  f"messages.{position}")
                before[key] = (False, None)  # new: reported whatever it is
            else:
                before.setdefault(key, (state.holders > 0, state.path))
            row.keys[key] = block
            self._hold(state)
        return row

    def _hold(self, state: _State) -> None:
        state.holders += 1
        if state.watched:
            state.watched = False
            self._watched.pop((state.kind, state.text), None)

    def _search(self, rows: Iterable[_Row], states: list[_State],
                before: dict[FactKey, tuple[bool, str | None]]) -> None:
        """Record every row of `rows` whose JSON holds one of `states`' texts."""
        for row in rows:
            text = dumps(row.message)
            for state in states:
                key = (state.kind, state.text)
                if key not in row.keys and state.escaped in text:
                    before.setdefault(key, (state.holders > 0, state.path))
                    row.keys[key] = None
                    self._hold(state)


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


def _taken_to(position: int, row: _Row, key: FactKey, block: str | None, escaped_text: str,
              entries: Sequence[LedgerEntry]) -> str | None:
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
            if (isinstance(item, dict) and item.get("type") == "tool_result"
                    and str(item.get("tool_use_id")) == entry.tool_use_id
                    and escaped_text in dumps(item.get("content", ""))):
                return entry.path
    return None
