"""The agent's ledger: one entry per item a step, a drop or a server edit took out of the context.

The keeper makes every change that takes something out, so it adds the entries its change reported
(stamped with the model call and the change's group) and marks entries that came back (a restore
of their file, an undo of their compaction). Each of those is a `LedgerChanged`, carried by the
change's `HistoryChanged` and written to the session log as an event, so a replay of the log gives
the same ledger back (`replay_change`); a resumed session starts its own log with the whole ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from core.values.records import LedgerChanged, LedgerEntry

DROP = "drop"


class Ledger:
    """The entries, oldest first, and the next group number."""

    def __init__(self, entries: Sequence[LedgerEntry] = ()) -> None:
        self.entries: list[LedgerEntry] = list(entries)
        self._group = max((entry.group for entry in self.entries), default=0) + 1

    def stamp(self, entries: Sequence[LedgerEntry], call: int) -> tuple[LedgerEntry, ...]:
        """`entries` as the next change adds them: made before `call`, in the next group."""
        return tuple(replace(entry, call=call, group=self._group) for entry in entries)

    def adding(self, entries: Sequence[LedgerEntry]) -> LedgerChanged:
        """The change that adds `entries` (stamped) as one group: one compaction, one drop."""
        return LedgerChanged(len(self.entries), tuple(entries))

    def restoring(self, path: str) -> LedgerChanged:
        """The change a restore of `path` makes: its tool results are back."""
        back = tuple(
            index
            for index, entry in enumerate(self.entries)
            if entry.returned is None and entry.kind == "tool_result" and entry.path == path
        )
        return LedgerChanged(len(self.entries), returned=back, how="restore")

    def undoing(self) -> LedgerChanged:
        """The change an undo of the newest compaction makes: the entries of its group are back."""
        for entry in reversed(self.entries):
            if entry.returned is None and entry.step != DROP and not entry.step.startswith("server:"):
                group = entry.group
                back = tuple(
                    index
                    for index, other in enumerate(self.entries)
                    if other.group == group and other.returned is None
                )
                return LedgerChanged(len(self.entries), returned=back, how="undo")
        return LedgerChanged(len(self.entries))

    def apply(self, change: LedgerChanged) -> None:
        if change.added:
            if change.start == 0:
                self.entries.clear()  # a change that starts the ledger (a resumed session's first record)
            self.entries.extend(change.added)
            self._group = max(self._group, max(entry.group for entry in change.added) + 1)
        for index in change.returned:
            if 0 <= index < len(self.entries):
                self.entries[index] = replace(self.entries[index], returned=change.how or "restore")

    def carried(self) -> LedgerChanged:
        """The whole ledger as one change (the first record of a resumed session's log)."""
        return LedgerChanged(0, tuple(self.entries))


def replay_change(ledger: Ledger, event: Any) -> bool:
    """Apply a logged `LedgerChanged` (its `asdict`) to `ledger`; False, and nothing applied, for a record
    of the wrong shape (a session log is untrusted: a damaged record costs that record only)."""
    if not isinstance(event, dict):
        return False
    added, returned = event.get("added", []), event.get("returned", [])
    how, start = event.get("how"), event.get("start")
    if not (
        isinstance(added, list)
        and isinstance(returned, list)
        and (how is None or isinstance(how, str))
        and (start is None or (isinstance(start, int) and not isinstance(start, bool)))
    ):
        return False
    entries = [LedgerEntry.from_dict(item) for item in added]
    indices = [index for index in returned if isinstance(index, int) and not isinstance(index, bool)]
    if len(indices) != len(returned) or None in entries:
        return False
    kept = tuple(entry for entry in entries if entry is not None)
    ledger.apply(LedgerChanged(0 if start == 0 else len(ledger.entries), kept, tuple(indices), how))
    return True


def entry_record(entry: LedgerEntry) -> dict[str, Any]:
    """An entry as JSON (the contract's fields first)."""
    return asdict(entry)
