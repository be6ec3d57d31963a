"""The compaction blocks the API signs: found, described, and kept as the reply gave them.

A `compaction` block in a reply stands, on the server, for everything before it; ctxtui keeps it
verbatim in the history and sends it back in place. Nothing of ours may edit or drop one: a change
that would is refused with one line (`SignedBlockError`, core/compaction/steering.py), the history
left as it was.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

Message = dict[str, Any]
BLOCK_KEYS = ("type", "content", "encrypted_content", "signature", "tool_changes")


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
