"""Value types: the plain frozen dataclasses the layers of the core hand each other.

The leaf of the core's stack (docs/architecture.md): these modules import nothing of the core but
the utilities, so every package may carry them and the events (core/events.py) are made of them.

- `splice`: `Splice`, one change of a history (the unit every view and index updates by).
- `records`: the ledger's and the fact check's records: `LedgerEntry`, `LedgerChanged`, `Fact`,
  `FactReport` (DESIGN.md, "What compaction took, and which facts the model can still see").
- `miss`: `CacheMiss` (why a call did not reuse the cached prefix) and `PrefixChange`.
- `samples`: `ContextSample` (one model call, as the timeline records it), `TokenCount` (the next
  request's size) and `CostParts` (a call's cost, split as the bill is).
- `notes`: `NotesChanged` (the model's notes after the note tool changed them) and `notes_chars`.
"""
