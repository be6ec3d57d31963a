"""The ledger's and the fact check's records (DESIGN.md, "What compaction took, and which facts the
model can still see"): plain frozen dataclasses, JSON-ready through `dataclasses.asdict`. The ledger
that keeps the entries is core/facts/ledger.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EntryKind = Literal["tool_result", "messages", "thinking"]
FactKind = Literal["constraint", "path", "error"]
FACT_KINDS: tuple[FactKind, ...] = ("constraint", "path", "error")
_RANK: dict[str, int] = {kind: rank for rank, kind in enumerate(FACT_KINDS)}


def fact_rank(fact: Fact) -> int:
    """Where a fact goes in a list of what the model cannot see: constraints first, then paths, errors."""
    return _RANK.get(fact.kind, len(_RANK))


@dataclass(frozen=True)
class LedgerEntry:
    """**contract** One item a step, a drop or a server edit took out of the context.

    `step`: the compaction step ("micro_compact", ...), "drop", or "server:<edit type>". `call`: the
    model call whose request was the first without it (the next call when the change was made).
    `kind`: "tool_result" | "messages" | "thinking". `label`: one line: the tool call and its input
    for a result, "messages #12-#31" for a run of messages (positions in the history the step cut,
    which are the transcript's line numbers). `chars` / `tokens`: the size it had in the context
    (JSON characters as `estimate_chars` counts them; tiktoken tokens, None when not counted).
    `path`: the archive file that holds it, workdir-relative. `restorable`: one action brings it back
    byte-exact (`agent.restore(path)` for a tool result; a run of messages comes back only by
    undoing its compaction while it is the newest, so it is not).

    Beyond the contract: `tool_use_id` (a result's call), `span` (a run's [start, stop) in the
    transcript), `group` (the change that made it: entries of one compaction share it) and
    `returned` ("restore" or "undo" once it is back in the context; None while it is out).
    """

    step: str
    call: int
    kind: str
    label: str
    chars: int
    tokens: int | None
    path: str | None
    restorable: bool
    tool_use_id: str | None = None
    span: tuple[int, int] | None = None
    group: int = 0
    returned: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> LedgerEntry | None:
        """An entry read back from a session log (None when the record is not one: logs are untrusted)."""
        if not isinstance(data, dict):
            return None
        try:
            span = data.get("span")
            entry = cls(
                step=_text(data["step"]),
                call=_count(data["call"]),
                kind=_text(data["kind"]),
                label=_text(data["label"]),
                chars=_count(data["chars"]),
                tokens=None if data.get("tokens") is None else _count(data["tokens"]),
                path=None if data.get("path") is None else _text(data["path"]),
                restorable=bool(data["restorable"]),
                tool_use_id=None if data.get("tool_use_id") is None else _text(data["tool_use_id"]),
                span=None if span is None else (_count(span[0]), _count(span[1])),
                group=_count(data.get("group", 0)),
                returned=None if data.get("returned") is None else _text(data["returned"]),
            )
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        return entry


@dataclass(frozen=True)
class LedgerChanged:
    """The ledger changed: `added` entries were appended at index `start` (what a change took out),
    and the entries at `returned` are back in the context (`how`: "restore" or "undo")."""

    start: int = 0
    added: tuple[LedgerEntry, ...] = ()
    returned: tuple[int, ...] = ()
    how: str | None = None

    def __bool__(self) -> bool:
        return bool(self.added or self.returned)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("not a count")
    return value


@dataclass(frozen=True)
class Fact:
    """**contract** A fact the conversation held.

    `kind`: "constraint" (a sentence the person typed with must, never, always, don't, do not, only,
    avoid), "path" (a read_file/write_file/edit_file `path` input) or "error" (a tool result line
    with `Error`, `error:`, `FAILED` or `Traceback`). `source`: "messages.K", the position of the
    message it was first seen in, in the history of that moment. `visible`: its exact text (JSON-escaped
    as the request writes it) is in the messages of the history as it is now, which is what the next
    call sends unless a step fires before it (`agent.preview()` says). `path`: when not visible, the
    archive file that holds it (None would mean it is nowhere on disk: a defect).
    """

    kind: str
    text: str
    source: str
    visible: bool
    path: str | None


@dataclass(frozen=True)
class FactReport:
    """**contract** `agent.facts()`: every fact the conversation ever held, in the order first seen."""

    facts: list[Fact] = field(default_factory=list)

    def hidden(self) -> list[Fact]:
        """The facts the model can no longer see, constraints first (then paths, then errors)."""
        return sorted((fact for fact in self.facts if not fact.visible), key=fact_rank)

    def of_kind(self, kind: str) -> list[Fact]:
        return [fact for fact in self.facts if fact.kind == kind]
