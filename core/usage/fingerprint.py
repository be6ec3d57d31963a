"""A fingerprint of a request's cacheable prefix: one hash per block, in the API's cache order.

The prompt cache keys a prefix by its exact bytes, in the order tools -> system -> messages, up to a
`cache_control` breakpoint. ctxtui's requests put the last breakpoint on the last block (the
top-level `cache_control`), so the cacheable prefix is the whole request. `PrefixPrint` holds one
hash (and the JSON length) per block: each tool schema, the system prompt, and each content block
of each message (a string content is one block). Comparing two prints block by block finds the
first place they differ in O(blocks), and the lengths let a token figure be spread over the blocks.

`Fingerprinter` hashes each message once: messages are values (never mutated in place), so a
message seen by identity in the previous request keeps its block hashes.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.history.messages import result_text
from core.history.sizes import dumps
from core.text import one_line

Position = tuple[int, int]
"""(message index, block index) in a request's messages; block 0 for string content."""


@dataclass(frozen=True)
class BlockPrint:
    """One block of the prefix: where it is, its hash and its JSON length."""

    section: str  # "tools", "system" or "messages"
    position: Position  # tools: (tool index, 0); system: (0, 0); messages: (message, block)
    digest: bytes
    chars: int
    whole: bool = False  # a message whose content is a string (its path has no ".content.J")
    label: str = ""  # what the block is, in a few words (its text is untrusted: data, never markup)

    @property
    def path(self) -> str:
        """The place as CacheMiss.path names it: "tools", "system", "messages.K" or "messages.K.content.J"."""
        if self.section != "messages":
            return self.section
        message, block = self.position
        return f"messages.{message}" if self.whole else f"messages.{message}.content.{block}"


@dataclass
class PrefixPrint:
    """The fingerprint of one request's cacheable prefix (model, then every block in cache order)."""

    model: str
    blocks: tuple[BlockPrint, ...]
    messages: int  # how many messages the request had
    _running: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _first: int = field(init=False, repr=False, compare=False)  # index of the first message block
    _positions: list[Position] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        running = [0]
        for block in self.blocks:
            running.append(running[-1] + block.chars)
        self._running = tuple(running)
        starts = [index for index, block in enumerate(self.blocks) if block.section == "messages"]
        self._first = starts[0] if starts else len(self.blocks)
        self._positions = [block.position for block in self.blocks[self._first :]]

    @property
    def chars(self) -> int:
        return self._running[-1]

    def chars_from(self, index: int) -> int:
        """The JSON length of the blocks from `index` to the end."""
        index = max(0, min(index, len(self.blocks)))
        return self._running[-1] - self._running[index]

    def index_of(self, position: Position) -> int:
        """The index of the first message block at or after `position` (len(blocks) past the end)."""
        return self._first + bisect.bisect_left(self._positions, position)

    def first_difference(self, newer: PrefixPrint) -> int | None:
        """The index (in this print) of the first block `newer` does not repeat; None when this whole
        prefix is the start of `newer` (the cache it wrote can be read). A different model differs at 0."""
        if newer.model != self.model:
            return 0
        for index, block in enumerate(self.blocks):
            if index >= len(newer.blocks) or newer.blocks[index].digest != block.digest:
                return index
        return None

    def block_at(self, index: int) -> BlockPrint | None:
        return self.blocks[index] if 0 <= index < len(self.blocks) else None

    def first_new_block(self, message: int, digests: Sequence[bytes]) -> Position:
        """Where a message that now has blocks `digests` at index `message` first differs from this
        print's message there: (message, the first block that is not the same)."""
        start = self.index_of((message, 0))
        same = 0
        for block in self.blocks[start:]:
            if block.position[0] != message or same >= len(digests) or block.digest != digests[same]:
                break
            same += 1
        return message, same


def message_digests(message: Any) -> tuple[bytes, ...]:
    """The hashes of one message's blocks, as a print holds them (string content: one block)."""
    role = str(message.get("role")) if isinstance(message, dict) else ""
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, list):
        return tuple(_digest(role, block)[0] for block in content)
    return (_digest(role, content)[0],)


def block_label(role: str, value: Any) -> str:
    """A block in a few words: its role and type, its id, and the start of its text."""
    if not isinstance(value, dict):
        return f"{role} text {one_line(str(value), 60)!r}"
    kind = str(value.get("type", "block"))
    ident = value.get("id") or value.get("tool_use_id") or value.get("name") or ""
    text = value.get("text") or value.get("thinking") or value.get("description") or ""
    if kind == "tool_result":
        text = result_text(value.get("content", ""))
    elif kind == "tool_use":
        text = dumps(value.get("input"))
    return f"{role} {kind}{' ' + str(ident) if ident else ''} {one_line(str(text), 60)!r}".strip()


def without_cache_marks(value: Any) -> Any:
    """`value` without its `cache_control` keys, at any depth (a copy where there were any): a client
    moves its breakpoints from request to request, and they are not part of the cached bytes' key."""
    if isinstance(value, dict):
        return {key: without_cache_marks(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [without_cache_marks(item) for item in value]
    return value


def _digest(role: str, value: Any) -> tuple[bytes, int]:
    text = dumps(value)
    if (
        '"cache_control"' in text
    ):  # another client's breakpoints (the proxy); ctxtui adds its own at send time
        text = dumps(without_cache_marks(value))
    return hashlib.blake2b(f"{role}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest(), len(
        text
    )


class Fingerprinter:
    """Makes `PrefixPrint`s, hashing each message once (by identity; messages are never mutated)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, tuple[tuple[bytes, int, bool, str], ...]]] = {}

    def _message_blocks(self, message: Any) -> tuple[tuple[bytes, int, bool, str], ...]:
        known = self._memo.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        role = str(message.get("role")) if isinstance(message, dict) else ""
        content = message.get("content") if isinstance(message, dict) else message
        if isinstance(content, list):
            return tuple((*_digest(role, block), False, block_label(role, block)) for block in content)
        return ((*_digest(role, content), True, block_label(role, content)),)

    def print(self, model: str, system: Any, tools: Sequence[Any], messages: Sequence[Any]) -> PrefixPrint:
        """The print of a request (cache_control marks are not part of what is sent here)."""
        blocks: list[BlockPrint] = []
        for index, tool in enumerate(tools):
            blocks.append(
                BlockPrint("tools", (index, 0), *_digest("tool", tool), label=block_label("tool", tool))
            )
        if system:
            blocks.append(
                BlockPrint("system", (0, 0), *_digest("system", system), label=block_label("system", system))
            )
        memo: dict[int, tuple[Any, tuple[tuple[bytes, int, bool, str], ...]]] = {}
        for message_index, message in enumerate(messages):
            parts = self._message_blocks(message)
            memo[id(message)] = (message, parts)
            for block_index, (digest, chars, whole, label) in enumerate(parts):
                blocks.append(
                    BlockPrint("messages", (message_index, block_index), digest, chars, whole, label)
                )
        self._memo = memo  # only the messages of the newest request are kept
        return PrefixPrint(model, tuple(blocks), len(messages))


def prefix_change(before: PrefixPrint, after: PrefixPrint) -> tuple[str, str, str] | None:
    """(path, what was there, what is there now) at the first block where `after` leaves `before`'s
    prefix; None when it does not."""
    index = before.first_difference(after)
    old = before.block_at(index) if index is not None else None
    if old is None or index is None:
        return None
    new = after.block_at(index)
    if after.model != before.model:
        return "model", before.model, after.model
    now = f"{new.label} ({new.chars:,} chars)" if new is not None else "(nothing: the request ends before it)"
    return old.path, f"{old.label} ({old.chars:,} chars)", now


__all__ = [
    "BlockPrint",
    "Fingerprinter",
    "Position",
    "PrefixPrint",
    "block_label",
    "message_digests",
    "prefix_change",
]
