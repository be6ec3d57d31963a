"""What compaction took out of the context, and which of the conversation's facts the model can still see.

- `records`: the contract's records: `LedgerEntry` (one item a step, a drop or a server edit took
  out of context), `Fact` and `FactReport`.
- `extract`: the deterministic extraction rules (constraints, paths, error lines).
- `entries`: how a step describes what it removed (the ledger entries it reports).
- `ledger`: the agent's ledger, kept from the entries its changes report and restored on resume.
- `index`: the fact index, kept from the history's splices and the ledger's paths (O(changed)).
- `rebuild`: the facts of a history read back with the archive it points to (resume, inspect).
- `review`: which constraints and facts a draft summary keeps and which it drops.
"""

from __future__ import annotations

from core.facts.records import Fact, FactReport, LedgerEntry

__all__ = ["Fact", "FactReport", "LedgerEntry"]
