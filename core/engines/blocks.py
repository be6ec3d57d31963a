"""The compaction blocks the API signs: found, described, and kept byte-exact through every change.

A `compaction` block in a reply stands, on the server, for everything before it; ctxtui keeps it
verbatim in the history and sends it back in place. Nothing of ours may edit or drop one: a change
that would is refused with one line (`SignedBlockError`), the history left as it was.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from core.compaction.steering import SteeringError

Message = dict[str, Any]
BLOCK_KEYS = ("type", "content", "encrypted_content", "signature", "tool_changes")


class SignedBlockError(SteeringError):
    """A change would edit or drop a compaction block the server signed."""


def is_compaction(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "compaction"


def kept_block(data: dict[str, Any]) -> dict[str, Any]:
    """A reply's compaction block as it is kept and sent back: its own keys, `content` even when null
    (a failed compaction), the others only when the API gave them."""
    block = {
        key: data[key] for key in BLOCK_KEYS if key in data and (data[key] is not None or key == "content")
    }
    block.setdefault("content", None)
    return block


def compaction_blocks(messages: Sequence[Message]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(message index, block index, block) of every compaction block, in order."""
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for position, block in enumerate(content):
                if is_compaction(block):
                    yield index, position, block


def last_compaction(messages: Sequence[Message]) -> int | None:
    """The index of the message holding the newest compaction block (the server ignores what is
    before it), or None."""
    found = None
    for index, _, _ in compaction_blocks(messages):
        found = index
    return found


def failed(block: dict[str, Any]) -> bool:
    """A compaction the server could not summarise (null content): kept, and a no-op for the server."""
    return block.get("content") is None


def describe(block: dict[str, Any]) -> str:
    """One line for a compaction block: its summary's size, or that it failed."""
    if failed(block):
        return "server compaction failed (null content): kept as it is, the server treats it as a no-op"
    return f"server compaction: summary of {len(str(block.get('content') or '')):,} chars"


def _signed(messages: Sequence[Message]) -> Counter[str]:
    return Counter(json.dumps(block, sort_keys=True) for _, _, block in compaction_blocks(messages))


def check_kept(before: Sequence[Message], after: Sequence[Message], action: str) -> None:
    """Refuse (SignedBlockError) a change from `before` to `after` that edits or drops a signed
    compaction block of `before`."""
    kept, now = _signed(before), _signed(after)
    if any(now[key] < count for key, count in kept.items()):
        raise SignedBlockError(
            f"{action} refused: it would change a compaction block the server signed "
            "(the server would refuse it)"
        )
