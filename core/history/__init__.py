"""The history: a list of plain dicts in the Messages API shape, its JSON size, its parts and tokens.

- `sizes`: `estimate_chars` (the gauge's figure, exactly the JSON length) and one message's JSON.
- `messages`: what a message is (tool use, tool results, a user's request), pairing and its repair,
  the splice between two lists.
- `store`: `History`, the list that records every change as a splice, and the per-message figures
  that follow those splices.
- `categories`: `breakdown`, the characters of a history by category, kept current from the splices.
- `tokens`: the tiktoken estimate per message.
- `thinking`: thinking blocks, kept verbatim and checked before a request replays them.
- `blocks`: the compaction blocks the API signs (a server engine's), found and kept as given.
- `intake`: what enters a history from a reply or a file is made valid first.

The contract names (DESIGN.md) are importable from here: `estimate_chars`, `breakdown`,
`pairing_problems`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.history.categories import breakdown
    from core.history.messages import pairing_problems
    from core.history.sizes import estimate_chars

__getattr__ = lazy_exports(
    __name__,
    {
        "breakdown": "core.history.categories",
        "pairing_problems": "core.history.messages",
        "estimate_chars": "core.history.sizes",
    },
)

__all__ = ["breakdown", "estimate_chars", "pairing_problems"]
