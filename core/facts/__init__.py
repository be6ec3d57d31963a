"""What compaction took out of the context, and which of the conversation's facts the model can still see.

The records themselves (`LedgerEntry`, `LedgerChanged`, `Fact`, `FactReport`) are value types:
core/values/records.py.

- `extract`: the deterministic extraction rules (constraints, paths, error lines).
- `entries`: how a step describes what it removed (the ledger entries it reports).
- `ledger`: the agent's ledger, kept from the entries its changes report and restored on resume.
- `index`: the fact index, kept from the history's splices and the ledger's paths (O(changed)).
- `rebuild`: the facts of a history read back with the archive it points to (resume, inspect).

Which facts a draft summary keeps is compaction's question: core/compaction/review.py.
"""
