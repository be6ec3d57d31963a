"""What fills the context: the characters of a history by category, exactly.

`breakdown(messages)` splits `estimate_chars(messages)` into `user`, `assistant`, `thinking`
(thinking and redacted_thinking blocks: their text, signature and data), `tool_use`, `tool_result`,
`markers` (placeholders, persisted-output blocks, snip markers, summaries) and `overhead` (JSON
punctuation, keys, block types, roles, flags). Each string or value is counted as
`json.dumps` writes it (quotes and escapes included) in the category of the block that holds it, and
every other character is overhead, counted from the structure, not as a remainder: the values add
up to `estimate_chars` because the walk mirrors the serialiser (a property test checks it).

`Breakdown` keeps the figures of one history up to date from `HistoryChanged.changes` splices: it
holds one entry per message of that history, so a new message costs the walk of that message only
and a message a splice removed is let go of (there is no cache beside it).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from core.history.sizes import LIST_BRACKETS, SEPARATOR, dumps
from core.markers import parse_marker
from core.text import one_line
from core.values.splice import Splice

Category = Literal["user", "assistant", "thinking", "tool_use", "tool_result", "markers", "overhead"]
CATEGORIES: tuple[Category, ...] = get_args(Category)
_INDEX = {name: index for index, name in enumerate(CATEGORIES)}
USER, ASSISTANT, THINKING, TOOL_USE, TOOL_RESULT, MARKERS, OVERHEAD = range(len(CATEGORIES))
_THINKING_KINDS = ("thinking", "redacted_thinking")
_THINKING_KEYS = ("thinking", "signature", "data")

_PAIR = 2  # ": " between a key and its value
_LABEL_CHARS = 60


def _container(count: int) -> int:
    """Brackets and separators of a list or dict with `count` items."""
    return LIST_BRACKETS + SEPARATOR * max(count - 1, 0)


def _json_len(value: Any) -> int:
    return len(dumps(value))


def _str_keys(value: dict[Any, Any]) -> bool:
    return all(type(key) is str for key in value)


def _label(text: str) -> str:
    return one_line(text, _LABEL_CHARS)


@dataclass(frozen=True)
class Part:
    """One block's characters in one category (`block` is None for string content)."""

    category: Category
    block: int | None
    chars: int
    label: str = ""


@dataclass(frozen=True)
class Item:
    """A part of the history, located: message index and block index (None: the whole content)."""

    category: Category
    message: int
    block: int | None
    chars: int
    label: str = ""


class _Walk:
    """The counts and parts of one message."""

    def __init__(self) -> None:
        self.counts = [0] * len(CATEGORIES)
        self._parts: dict[tuple[int, int | None], list[Any]] = {}  # (category, block) -> [chars, label]

    def add(self, category: int, chars: int, block: int | None, label: str = "") -> None:
        self.counts[category] += chars
        if category == OVERHEAD or not chars:
            return
        part = self._parts.get((category, block))
        if part is None:
            self._parts[(category, block)] = [chars, label]
        else:
            part[0] += chars
            part[1] = label or part[1]  # a result's content describes it better than its id

    @property
    def parts(self) -> tuple[Part, ...]:
        return tuple(
            Part(CATEGORIES[category], block, chars, label)
            for (category, block), (chars, label) in self._parts.items()
        )

    def keys(self, value: dict[str, Any]) -> None:
        """The braces, separators, keys and ": " of a dict (its values are counted by the caller)."""
        self.counts[OVERHEAD] += _container(len(value)) + sum(_json_len(key) + _PAIR for key in value)


def _text_category(text: Any, default: int) -> int:
    return MARKERS if parse_marker(text) is not None else default


def _walk_message(message: Any) -> _Walk:
    walk = _Walk()
    if not isinstance(message, dict) or not _str_keys(message):
        walk.add(OVERHEAD, _json_len(message), None)
        return walk
    role_category = ASSISTANT if message.get("role") == "assistant" else USER
    walk.keys(message)
    for key, value in message.items():
        if key != "content":
            walk.add(OVERHEAD, _json_len(value), None)
        elif isinstance(value, str):
            walk.add(_text_category(value, role_category), _json_len(value), None, _label(value))
        elif isinstance(value, list):
            walk.add(OVERHEAD, _container(len(value)), None)
            for index, block in enumerate(value):
                _walk_block(walk, block, index, role_category)
        else:
            walk.add(OVERHEAD, _json_len(value), None)
    return walk


def _walk_block(walk: _Walk, block: Any, index: int, role_category: int) -> None:
    if not isinstance(block, dict) or not _str_keys(block):
        walk.add(role_category, _json_len(block), index, _label(str(block)))
        return
    walk.keys(block)
    kind = block.get("type")
    for key, value in block.items():
        size = _json_len(value)
        if key == "type":
            walk.add(OVERHEAD, size, index)
        elif kind == "text":
            if key == "text":
                walk.add(_text_category(value, role_category), size, index, _label(str(value)))
            else:
                walk.add(OVERHEAD, size, index)
        elif kind == "tool_use":
            if key in ("id", "name", "input"):
                walk.add(TOOL_USE, size, index, str(block.get("name", "")))
            else:
                walk.add(OVERHEAD, size, index)
        elif kind == "tool_result":
            if key == "tool_use_id":
                walk.add(TOOL_RESULT, size, index, str(value))
            elif key == "content":
                _walk_result_content(walk, value, index)
            else:
                walk.add(OVERHEAD, size, index)
        elif kind in _THINKING_KINDS:
            walk.add(THINKING if key in _THINKING_KEYS else OVERHEAD, size, index, str(kind))
        else:  # images, anything else: the sender's
            walk.add(role_category, size, index, str(kind))


def _walk_result_content(walk: _Walk, content: Any, index: int) -> None:
    if isinstance(content, str):
        walk.add(_text_category(content, TOOL_RESULT), _json_len(content), index, _label(content))
        return
    if not isinstance(content, list):
        walk.add(TOOL_RESULT, _json_len(content), index)
        return
    walk.add(OVERHEAD, _container(len(content)), index)
    for item in content:
        if isinstance(item, dict) and _str_keys(item) and item.get("type") == "text" and "text" in item:
            walk.keys(item)
            for key, value in item.items():
                if key == "text":
                    walk.add(_text_category(value, TOOL_RESULT), _json_len(value), index, _label(str(value)))
                else:
                    walk.add(OVERHEAD, _json_len(value), index)
        else:
            walk.add(TOOL_RESULT, _json_len(item), index)


@dataclass(frozen=True)
class MessageBreakdown:
    """The figures of one message: counts per category (in CATEGORIES order) and its parts."""

    counts: tuple[int, ...]
    parts: tuple[Part, ...]

    @property
    def chars(self) -> int:
        return sum(self.counts)


def message_breakdown(message: Any) -> MessageBreakdown:
    """The breakdown of one message as it serialises inside a list.

    Not cached here: a live history's figures are kept by `Breakdown`, which holds one entry per
    message of that history and lets go of a message when a splice removes it, so nothing that
    left the history stays alive on its account.
    """
    walk = _walk_message(message)
    return MessageBreakdown(tuple(walk.counts), walk.parts)


def _as_dict(counts: Sequence[int]) -> dict[str, int]:
    return dict(zip(CATEGORIES, counts, strict=True))


def breakdown(messages: Sequence[Any]) -> dict[str, int]:
    """**contract** Characters by category; the values add up exactly to `estimate_chars(messages)`."""
    totals = [0] * len(CATEGORIES)
    for message in messages:
        for index, value in enumerate(message_breakdown(message).counts):
            totals[index] += value
    totals[OVERHEAD] += _container(len(messages))
    return _as_dict(totals)


class Breakdown:
    """The breakdown of one history, kept current from HistoryChanged splices.

    `apply` replaces only the spliced messages' figures (a view applies `HistoryChanged.changes`).
    """

    def __init__(self, messages: Iterable[Any] = ()) -> None:
        self._parts: list[MessageBreakdown] = []
        self._totals = [0] * len(CATEGORIES)
        self.reset(messages)

    def reset(self, messages: Iterable[Any]) -> None:
        self._parts = [message_breakdown(message) for message in messages]
        self._totals = [0] * len(CATEGORIES)
        for part in self._parts:
            self._add(part, 1)

    def _add(self, part: MessageBreakdown, sign: int) -> None:
        totals = self._totals
        for index, value in enumerate(part.counts):
            totals[index] += sign * value

    def apply(self, changes: Iterable[Splice]) -> None:
        for change in changes:
            old = self._parts[change.start : change.start + change.removed]
            new = [message_breakdown(message) for message in change.added]
            for part in old:
                self._add(part, -1)
            for part in new:
                self._add(part, 1)
            self._parts[change.start : change.start + change.removed] = new

    def __len__(self) -> int:
        return len(self._parts)

    @property
    def totals(self) -> dict[str, int]:
        """The same figures as `breakdown(messages)` for the history this follows."""
        totals = list(self._totals)
        totals[OVERHEAD] += _container(len(self._parts))
        return _as_dict(totals)

    @property
    def chars(self) -> int:
        return sum(self._totals) + _container(len(self._parts))

    def message(self, index: int) -> MessageBreakdown:
        return self._parts[index]

    def largest(self, category: str, count: int = 5) -> list[Item]:
        """The `count` largest parts of `category`, largest first, with their message and block."""
        if category not in _INDEX or category == "overhead":
            return []
        found = (
            Item(part.category, index, part.block, part.chars, part.label)
            for index, message in enumerate(self._parts)
            for part in message.parts
            if part.category == category
        )
        return heapq.nlargest(count, found, key=lambda item: item.chars)


__all__ = [
    "CATEGORIES",
    "Breakdown",
    "Category",
    "Item",
    "MessageBreakdown",
    "Part",
    "breakdown",
    "message_breakdown",
]
