"""Helpers for the history: a list of plain dicts in the Anthropic Messages API shape.

Messages are treated as values: the core never mutates a message that is already in a history;
a step that changes one builds a copy. That is what lets sizes be cached per message object.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterator, Sequence
from typing import Any

from core.breakdown import breakdown as breakdown  # the contract lives in core/breakdown.py
from core.events import Splice

Message = dict[str, Any]
Block = dict[str, Any]

_CONTENT = operator.itemgetter("content")
_LIST_BRACKETS = 2  # "[" and "]"
_SEPARATOR = 2  # ", " between items, as json.dumps writes them


def message_chars(message: Any) -> int:
    """Length of one message serialised exactly as `estimate_chars` serialises it inside a list."""
    return len(json.dumps(message, default=str, ensure_ascii=False))


def _content_of(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else message


def _flatten(value: Any, out: list[Any]) -> None:
    """Append a flat, exact description of `value`'s JSON shape and leaves to `out`.

    Two values with equal flat descriptions serialise to the same JSON, so comparing descriptions
    tells whether a cached length is still right even after in-place edits of nested blocks.
    """
    kind = type(value)
    if kind is str:
        out.append(value)
    elif kind is dict:
        out.append(len(value))
        for key, item in value.items():
            out.append(key)
            _flatten(item, out)
    elif kind is list:
        out.append(-1 - len(value))
        for item in value:
            _flatten(item, out)
    else:
        out.append(kind)
        out.append(value)


def _signature(message: Any) -> tuple[Any, ...]:
    out: list[Any] = []
    _flatten(message, out)
    return tuple(out)


class _MessageSizeCache:
    """Per-message serialised lengths, keyed by object identity and checked against a signature.

    Each entry keeps the message (so its id cannot be reused while cached) and a flat signature
    of its content; a message edited in place no longer matches and is measured again. Checking
    a signature costs about a third of serialising the message.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self._entries: dict[int, tuple[Any, tuple[Any, ...], int]] = {}
        self._max_entries = max_entries

    def size(self, message: Any) -> int:
        entry = self._entries.get(id(message))
        signature = _signature(message)
        if entry is not None and entry[0] is message and entry[1] == signature:
            return entry[2]
        length = message_chars(message)
        if len(self._entries) >= self._max_entries:
            self._entries.clear()
        self._entries[id(message)] = (message, signature, length)
        return length

    def clear(self) -> None:
        self._entries.clear()


_CACHE = _MessageSizeCache()


def list_chars(sizes: Sequence[int] | Iterator[int], count: int) -> int:
    """The JSON length of a list whose items serialise to `sizes`."""
    total = sum(sizes)
    return _LIST_BRACKETS + total + _SEPARATOR * max(count - 1, 0)


def estimate_chars(messages: Sequence[Any]) -> int:
    """Exactly `len(json.dumps(messages, default=str, ensure_ascii=False))`, from cached per-message sizes."""
    size = _CACHE.size
    return list_chars(map(size, messages), len(messages))


class HistorySizer:
    """`estimate_chars` for one growing history, in time proportional to what changed.

    It remembers the last list it measured. When the next list starts with the same message
    objects (with the same content objects), the known prefix is trusted, except its newest
    `recheck` messages, which are checked again (the place where in-place edits happen); only the
    new tail is measured. Anything else falls back to the checked per-message cache.
    """

    def __init__(self, recheck: int = 4) -> None:
        self._messages: list[Any] = []
        self._contents: list[Any] = []
        self._sizes: list[int] = []
        self._total = 0
        self._recheck = recheck

    def measure(self, messages: Sequence[Any]) -> int:
        known = len(self._messages)
        if known and len(messages) >= known and self._same_prefix(messages, known):
            for index in range(max(known - self._recheck, 0), known):
                size = _CACHE.size(messages[index])
                self._total += size - self._sizes[index]
                self._sizes[index] = size
            for message in messages[known:]:
                self._append(message)
        else:
            self._messages, self._contents, self._sizes, self._total = [], [], [], 0
            for message in messages:
                self._append(message)
        return _LIST_BRACKETS + self._total + _SEPARATOR * max(len(self._messages) - 1, 0)

    def _same_prefix(self, messages: Sequence[Any], known: int) -> bool:
        """The known messages, holding the same content objects, start `messages`.

        List equality runs in C and short-cuts on identity, so for the usual case (the same
        objects) this costs a few microseconds per thousand messages; an equal but distinct
        object also passes, and serialises to the same length.
        """
        prefix = list(messages[:known])
        try:
            return prefix == self._messages and list(map(_CONTENT, prefix)) == self._contents
        except (KeyError, TypeError):  # not all dicts with content
            return False

    def _append(self, message: Any) -> None:
        length = _CACHE.size(message)
        self._messages.append(message)
        self._contents.append(_content_of(message))
        self._sizes.append(length)
        self._total += length


# --- block and message predicates -------------------------------------------------------------


def blocks(message: Any) -> list[Block]:
    """The dict blocks of a message (empty for string content)."""
    content = _content_of(message)
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def has_tool_use(message: Any) -> bool:
    """An assistant message that calls at least one tool."""
    return (
        isinstance(message, dict)
        and message.get("role") == "assistant"
        and any(block.get("type") == "tool_use" for block in blocks(message))
    )


def is_tool_result(message: Any) -> bool:
    """A user message that carries at least one tool_result block."""
    return (
        isinstance(message, dict)
        and message.get("role") == "user"
        and any(block.get("type") == "tool_result" for block in blocks(message))
    )


def tool_use_ids(message: Any) -> list[str]:
    return [str(block.get("id")) for block in blocks(message) if block.get("type") == "tool_use"]


def tool_result_ids(message: Any) -> list[str]:
    return [
        str(block.get("tool_use_id")) for block in blocks(message) if block.get("type") == "tool_result"
    ]


def result_text(content: Any) -> str:
    """The text of a tool_result's content: a string, or the text of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            elif isinstance(item, str):
                parts.append(item)
            else:
                parts.append(json.dumps(item, default=str, ensure_ascii=False))
        return "\n".join(parts)
    if content is None:
        return ""
    return str(content)


def text_of(message: Any) -> str:
    """The plain text of a message: string content, or its text blocks joined."""
    content = _content_of(message)
    if isinstance(content, str):
        return content
    return "\n".join(str(block.get("text", "")) for block in blocks(message) if block.get("type") == "text")


def last_assistant_index(messages: Sequence[Any]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "assistant":
            return index
    return -1


def tool_result_positions(messages: Sequence[Any]) -> list[tuple[int, int]]:
    """(message index, block index) of every tool_result, oldest first."""
    positions = []
    for index, message in enumerate(messages):
        if not (isinstance(message, dict) and message.get("role") == "user"):
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block_index, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                positions.append((index, block_index))
    return positions


def unseen_tool_result_positions(messages: Sequence[Any]) -> set[tuple[int, int]]:
    """Tool results after the last assistant message: the model has not read them yet."""
    last = last_assistant_index(messages)
    return {position for position in tool_result_positions(messages) if position[0] > last}


def pairing_problems(messages: Sequence[Any]) -> list[str]:
    """Why this history would be refused by the API for tool pairing (empty when valid).

    Every tool_use must be answered by a tool_result in the very next message, and every
    tool_result must answer a tool_use in the message right before it.
    """
    problems: list[str] = []
    for index, message in enumerate(messages):
        uses = tool_use_ids(message) if has_tool_use(message) else []
        if uses:
            following = messages[index + 1] if index + 1 < len(messages) else None
            answered = set(tool_result_ids(following)) if following is not None else set()
            missing = [use for use in uses if use not in answered]
            if missing:
                problems.append(f"message {index}: tool_use {', '.join(missing)} not answered")
        results = tool_result_ids(message)
        if results:
            previous = messages[index - 1] if index > 0 else None
            asked = set(tool_use_ids(previous)) if previous is not None else set()
            orphans = [result for result in results if result not in asked]
            if orphans:
                problems.append(f"message {index}: tool_result {', '.join(orphans)} has no tool_use")
    return problems


INTERRUPTED = "[interrupted]"


def interrupted_result(tool_use_id: str, text: str = INTERRUPTED) -> Block:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": True}


def repair_pairing(messages: Sequence[Message]) -> list[Message]:
    """An API-valid pairing: every unanswered tool_use gets an "[interrupted]" tool_result, and every
    tool_result that answers no tool_use of the message right before it is dropped (a user message
    left empty by that is dropped too). Copies what it changes; the input is not edited.
    """
    repaired: list[Message] = []
    asked: set[str] = set()  # the tool_use ids of the message before this one
    for message in messages:
        if is_tool_result(message):
            kept = _without_orphan_results(message, asked)
            if kept is None:
                asked = set()
                continue
            message = kept
        if repaired and has_tool_use(repaired[-1]):
            uses = tool_use_ids(repaired[-1])
            answered = set(tool_result_ids(message))
            missing = [use for use in uses if use not in answered]
            if missing and is_tool_result(message):
                message = {**message, "content": [*message["content"], *(interrupted_result(use) for use in missing)]}
            elif missing:
                repaired.append({"role": "user", "content": [interrupted_result(use) for use in uses]})
        repaired.append(message)
        asked = set(tool_use_ids(message)) if has_tool_use(message) else set()
    if repaired and has_tool_use(repaired[-1]):
        repaired.append({"role": "user", "content": [interrupted_result(use) for use in tool_use_ids(repaired[-1])]})
    return repaired


def _is_result_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _without_orphan_results(message: Message, asked: set[str]) -> Message | None:
    """`message` without the tool_results whose tool_use_id is not in `asked` (None if nothing is left)."""
    content = message["content"]
    kept = [block for block in content if not _is_result_block(block) or str(block.get("tool_use_id")) in asked]
    if len(kept) == len(content):
        return message
    return {**message, "content": kept} if kept else None


def splice_between(old: Sequence[Any], new: Sequence[Any]) -> tuple[Splice, ...]:
    """The splice that turns `old` into `new`: messages kept by identity at both ends stay.

    Empty when the two hold the same message objects in the same order.
    """
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] is new[start]:
        start += 1
    if start == len(old) == len(new):
        return ()
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] is new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return (Splice(start, end_old - start, tuple(new[start:end_new])),)
