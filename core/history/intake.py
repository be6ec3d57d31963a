"""What enters the history from outside is made fit for it: valid UTF-8 text, tool ids the API accepts.

Text comes in from the person (argv and stdin give undecodable bytes as lone surrogates), from a
model's reply (JSON may escape a lone surrogate) and from session files written before this repair.
A history that holds a lone surrogate cannot be encoded as UTF-8: every request, every session
record and every later turn would fail on it. `valid_value` repairs every string of a value
(`core.text.valid_utf8`: pairs joined, lone ones shown as visible escapes).

The API gives tool_use ids and refuses them back when they do not match `^[a-zA-Z0-9_-]+$` or when
two tool_use blocks of one request share an id; a history holding such an id can never be sent
again. `repair_tool_ids` renames those ids (and the tool_results that answer them, consistently) where
a history is read back; `reply_content` does the same for a reply against the history it joins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard

from core.history.sizes import dumps
from core.text import valid_utf8

Message = dict[str, Any]

API_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_ID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_BASE_CHARS = 64
MAX_DEPTH = 200  # deeper values are left as they are (the readers of session files refuse them)


def valid_text(text: str) -> str:
    """`text` as it may enter the history: valid UTF-8 (see `core.text.valid_utf8`)."""
    return valid_utf8(text)


def valid_value(value: Any, _depth: int = 0) -> Any:
    """`value` (a message, a block, a tool input) with every string, keys included, made valid UTF-8.

    Copy-on-write: what needs no repair is returned as the same object, so a history that is
    already valid is not copied.
    """
    if isinstance(value, str):
        return valid_utf8(value)
    if _depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        changed = False
        repaired: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = valid_utf8(key) if isinstance(key, str) else key
            new_item = valid_value(item, _depth + 1)
            changed = changed or new_key is not key or new_item is not item
            repaired[new_key] = new_item
        return repaired if changed else value
    if isinstance(value, list):
        items = [valid_value(item, _depth + 1) for item in value]
        return items if any(new is not old for new, old in zip(items, value, strict=True)) else value
    return value


def _encodes(value: Any) -> bool:
    """`value`'s JSON encodes as UTF-8: it holds no lone surrogate (checked in C, no Python walk)."""
    try:
        dumps(value).encode("utf-8")
    except (UnicodeEncodeError, RecursionError, ValueError, TypeError):
        return False
    return True


def valid_messages(messages: Sequence[Message]) -> list[Message]:
    """`valid_value` of each message (a message that already encodes is not walked)."""
    return [message if _encodes(message) else valid_value(message) for message in messages]


def is_api_tool_id(value: Any) -> TypeGuard[str]:
    """An id the API accepts back: a non-empty string of ASCII letters, digits, `_` and `-`."""
    return isinstance(value, str) and API_TOOL_ID.fullmatch(value) is not None


def _fresh_id(original: Any, taken: set[str]) -> str:
    """A valid id for `original` that is not in `taken` (deterministic: the same inputs give the same id)."""
    base = _NOT_ID_CHAR.sub("_", original if isinstance(original, str) else "")[:_MAX_BASE_CHARS] or "toolu"
    candidate, number = base, 1
    while candidate in taken:
        number += 1
        candidate = f"{base}_{number}"
    return candidate


def _blocks(message: Any, kind: str) -> Iterable[tuple[int, dict[str, Any]]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        for index, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == kind:
                yield index, block


def _rename_uses(message: Message, taken: set[str]) -> tuple[Message, dict[Any, list[str]]]:
    """`message` with each tool_use id the API would refuse (or one already in `taken`) renamed.

    Returns the message (the same object when nothing changed) and, per original id, the ids its
    tool_use blocks now have, in order: the tool_results of the next message follow them.
    """
    renamed: dict[Any, list[str]] = {}
    content: list[Any] | None = None
    for index, block in _blocks(message, "tool_use"):
        original = block.get("id")
        new = original if is_api_tool_id(original) and original not in taken else _fresh_id(original, taken)
        taken.add(new)
        renamed.setdefault(original if isinstance(original, str) else None, []).append(new)
        if new != original:
            content = list(message["content"]) if content is None else content
            content[index] = {**block, "id": new}
    return ({**message, "content": content} if content is not None else message), renamed


def _follow_renames(message: Message, renamed: dict[Any, list[str]]) -> Message:
    """`message` with each tool_result's id changed to the id its tool_use got (in order, per id)."""
    queues = {original: list(ids) for original, ids in renamed.items()}
    content: list[Any] | None = None
    for index, block in _blocks(message, "tool_result"):
        original = block.get("tool_use_id")
        queue = queues.get(original if isinstance(original, str) else None)
        if not queue:
            continue
        new = queue.pop(0)
        if new != original:
            content = list(message["content"]) if content is None else content
            content[index] = {**block, "tool_use_id": new}
    return {**message, "content": content} if content is not None else message


def repair_tool_ids(messages: Sequence[Message]) -> list[Message]:
    """`messages` with every tool_use id the API accepts and no two alike.

    An id of the wrong form, or one an earlier tool_use already has, is renamed (its invalid
    characters made `_`, then `_2`, `_3`, ... until it is free), and the tool_results of the next
    message that answer it take the new id, in order. Copies only the messages it changes.
    """
    taken: set[str] = set()
    repaired: list[Message] = []
    renamed: dict[Any, list[str]] = {}
    for message in messages:
        if renamed:
            message = _follow_renames(message, renamed)
        renamed = {}
        if isinstance(message, dict) and message.get("role") == "assistant":
            message, uses = _rename_uses(message, taken)
            renamed = {original: ids for original, ids in uses.items() if ids != [original]}
        repaired.append(message)
    return repaired


def repair_history(messages: Sequence[Message]) -> list[Message]:
    """A history read back (a session replay) made fit to send: valid UTF-8 and valid, unique tool ids."""
    return repair_tool_ids(valid_messages(messages))


def reply_content(content: Sequence[dict[str, Any]], history: Sequence[Message]) -> list[dict[str, Any]]:
    """A model's reply as it may join `history`: valid UTF-8, and every tool_use id one the API
    accepts and that no tool_use of `history` has (renamed otherwise; the tools' results use the
    new ids, so the renaming is consistent)."""
    taken = {
        str(block.get("id"))
        for message in history
        if isinstance(message, dict) and message.get("role") == "assistant"
        for _, block in _blocks(message, "tool_use")
    }
    message, _ = _rename_uses({"role": "assistant", "content": valid_value(list(content))}, taken)
    return list(message["content"])
