"""Compaction: the seed's pipeline that keeps the context under its limit, and the user's hand on it.

- `settings`: `CompactionSettings` (the thresholds) and `CompactionError`.
- `pipeline`: `Compactor`, the steps in the order they run (budget, snip, micro, fit, summary) and
  the reactive fallback; every step saves what it removes before it replaces anything.
- `plans`: what a step plans before it writes (replacements, a snip's cut, the copy-on-write editor).
- `steering`: drop a result now, restore an archived one, undo a compaction; refuse a change that
  would edit a compaction block the server signed.
- `review`: before a summary, which of the facts the model sees it keeps and which it drops.

The contract names (DESIGN.md) are importable from here: `Compactor`, `CompactionSettings`,
`CompactionError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.compaction.pipeline import Compactor
    from core.compaction.settings import CompactionError, CompactionSettings

__getattr__ = lazy_exports(
    __name__,
    {
        "Compactor": "core.compaction.pipeline",
        "CompactionError": "core.compaction.settings",
        "CompactionSettings": "core.compaction.settings",
    },
)

__all__ = ["CompactionError", "CompactionSettings", "Compactor"]
