"""Helpers for the history: a list of plain dicts in the Anthropic Messages API shape.

Messages are treated as values: the core never mutates a message that is already in a history;
a step that changes one builds a copy. That is what lets the history's owner (core/history/store.py)
keep per-message figures that follow its changes.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from itertools import compress, count
from typing import Any

from core.markers import UNANSWERED_MARK, is_note, is_notes_message, parse_marker
from core.values.splice import Splice

Message = dict[str, Any]
Block = dict[str, Any]


def _content_of(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else message


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
    return [str(block.get("tool_use_id")) for block in blocks(message) if block.get("type") == "tool_result"]


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


def current_request(messages: Sequence[Message]) -> str:
    """The request the next call works on: the newest user text that is the person's own. A summary
    marker stands for the request it holds; other markers and ctxtui's notes (a restored result, an
    unanswered request) are passed over. Empty when there is none."""
    for message in reversed(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "user" or not isinstance(content, str) or not content:
            continue
        marker = parse_marker(content)
        if marker is not None:
            if marker.request is not None:
                return marker.request
            continue
        if not is_note(content):
            return content
    return ""


def unanswered_request(message: Message) -> bool:
    """A plain user request (not a marker, a note of ctxtui's, tool results, or marked already) that
    no assistant message answered."""
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and not content.startswith(UNANSWERED_MARK)
        and not is_note(content)
        and parse_marker(content) is None
    )


USER_PIN_PREFIX = "user:"


def persons_words(message: Any) -> bool:
    """A user message of the person's own text (a string or text blocks): not a tool result, not a
    marker (a snip marker or a summary stands for archived messages), not the model's notes, not empty."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return bool(content) and parse_marker(content) is None and not is_notes_message(content)
    if isinstance(content, list):
        return bool(content) and all(
            isinstance(block, dict) and block.get("type") == "text" for block in content
        )
    return False


def user_pin_key(message: Any) -> str | None:
    """The key that pins this user message (`user:` and a digest of its content), else None.

    Only a user's own words can be pinned this way: a user message of text (a string or text
    blocks), not a tool result and not a marker (a snip marker or a summary already stands for
    archived messages). The key follows the content, so it survives the message moving when a
    step removes messages before it; two messages with the same text share one key.
    """
    if not persons_words(message):
        return None
    import hashlib  # OpenSSL's binding, ~1 ms: at the first pin, not at the app's start

    canonical = json.dumps(message["content"], ensure_ascii=False, sort_keys=True, default=str)
    return USER_PIN_PREFIX + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def find_user_message(messages: Sequence[Any], key: str) -> int | None:
    """The index of the newest user message whose `user_pin_key` is `key`, else None."""
    for index in range(len(messages) - 1, -1, -1):
        if user_pin_key(messages[index]) == key:
            return index
    return None


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


def interrupted_output(printed: str) -> str:
    """The result of a call a cancel stopped: `[interrupted]`, then what it printed before (if anything)."""
    return (
        f"{INTERRUPTED} the call was stopped; what it printed before:\n{printed}" if printed else INTERRUPTED
    )


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
                message = {
                    **message,
                    "content": [*message["content"], *(interrupted_result(use) for use in missing)],
                }
            elif missing:
                repaired.append({"role": "user", "content": [interrupted_result(use) for use in uses]})
        repaired.append(message)
        asked = set(tool_use_ids(message)) if has_tool_use(message) else set()
    if repaired and has_tool_use(repaired[-1]):
        repaired.append(
            {"role": "user", "content": [interrupted_result(use) for use in tool_use_ids(repaired[-1])]}
        )
    return repaired


def _is_result_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _without_orphan_results(message: Message, asked: set[str]) -> Message | None:
    """`message` without the tool_results whose tool_use_id is not in `asked` (None if nothing is left)."""
    content = message["content"]
    kept = [
        block for block in content if not _is_result_block(block) or str(block.get("tool_use_id")) in asked
    ]
    if len(kept) == len(content):
        return message
    return {**message, "content": kept} if kept else None


def splice_between(old: Sequence[Any], new: Sequence[Any]) -> tuple[Splice, ...]:
    """The splice that turns `old` into `new`: messages kept by identity at both ends stay.

    Empty when the two hold the same message objects in the same order. The scans run in C
    (`map(operator.is_not, ...)`), a few nanoseconds per message.
    """
    shorter = min(len(old), len(new))
    start = next(compress(count(), map(operator.is_not, old, new)), shorter)
    room = shorter - start
    suffix = 0
    if room:
        tail_old = reversed(old[start:]) if len(old) - start < len(old) else reversed(old)
        tail_new = reversed(new[start:]) if len(new) - start < len(new) else reversed(new)
        suffix = min(next(compress(count(), map(operator.is_not, tail_old, tail_new)), room), room)
    removed = len(old) - start - suffix
    added = tuple(new[start : len(new) - suffix])
    if not removed and not added:
        return ()
    return (Splice(start, removed, added),)
