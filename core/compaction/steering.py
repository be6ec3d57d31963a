"""What the user can do to the context by hand: drop a result now, restore an archived one, undo a step.

Each function takes a history and returns a new list (copying only the messages it changes), or
raises SteeringError with a one-line reason and changes nothing (SignedBlockError: a change that
would edit a compaction block the server signed). Like the pipeline, nothing is replaced before its
full text is safe in the archive, and every marker names the file that holds it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.archive import Archive, ArchiveError
from core.history.blocks import compaction_blocks
from core.history.messages import (
    USER_PIN_PREFIX,
    find_user_message,
    result_text,
    tool_result_positions,
    user_pin_key,
)
from core.markers import archived_path, parse_marker, placeholder, restored_message

Message = dict[str, Any]


class SteeringError(Exception):
    """The action cannot be done; nothing was changed (the message is one line)."""


class SignedBlockError(SteeringError):
    """A change would edit or drop a compaction block the server signed (core/history/blocks.py)."""


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


def find_result(messages: Sequence[Message], tool_use_id: str) -> tuple[int, int] | None:
    """(message index, block index) of the tool_result answering `tool_use_id`, newest first."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block_index, block in enumerate(content):
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("tool_use_id") == tool_use_id
            ):
                return index, block_index
    return None


def pin_target(messages: Sequence[Message], key: str) -> tuple[int, int | None] | None:
    """Where what `key` pins is: (message, block) of a tool result, (message, None) of a user message."""
    if key.startswith(USER_PIN_PREFIX):
        index = find_user_message(messages, key)
        return None if index is None else (index, None)
    return find_result(messages, key)


def pin_targets(messages: Sequence[Message], keys: Iterable[str]) -> dict[str, tuple[int, int | None]]:
    """`pin_target` of many keys in one pass over the history, newest first: the keys found, each
    with where it is. Linear in the history and the keys (a resumed session may carry thousands of
    pins: one `pin_target` each was pins x messages)."""
    wanted = set(keys)
    results = {key for key in wanted if not key.startswith(USER_PIN_PREFIX)}
    users = wanted - results
    found: dict[str, tuple[int, int | None]] = {}
    for index in range(len(messages) - 1, -1, -1):
        if len(found) == len(wanted):
            break
        message = messages[index]
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if results and isinstance(content, list):
            for block_index, block in enumerate(content):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    tool_use_id = block.get("tool_use_id")
                    if isinstance(tool_use_id, str) and tool_use_id in results and tool_use_id not in found:
                        found[tool_use_id] = (index, block_index)
        if users and (key := user_pin_key(message)) in users and key not in found:
            found[key] = (index, None)
    return found


def _with_block_content(
    messages: Sequence[Message], index: int, block_index: int, content: Any
) -> list[Message]:
    result = list(messages)
    old = result[index]
    blocks = list(old["content"])
    blocks[block_index] = {**blocks[block_index], "content": content}
    result[index] = {**old, "content": blocks}
    return result


async def drop_result(
    messages: Sequence[Message], archive: Archive, tool_use_id: str
) -> tuple[list[Message], str]:
    """Archive one tool result now and leave `[Earlier tool result saved at PATH]`, as micro_compact would.

    Returns the new history and the path. A result that already is a placeholder is refused.
    """
    found = find_result(messages, tool_use_id)
    if found is None:
        raise SteeringError(f"no tool result for {tool_use_id!r} in the context")
    index, block_index = found
    content = messages[index]["content"][block_index].get("content", "")
    marker = parse_marker(content)
    if marker is not None and marker.kind == "placeholder":
        raise SteeringError(f"the result of {tool_use_id} is already archived at {marker.path}")
    if (
        marker is not None
        and marker.kind == "persisted"
        and archive.is_own(marker.path, tool_use_id, marker.preview)
    ):
        # already saved whole (as micro_compact does, keep that file rather than archive the preview)
        return _with_block_content(messages, index, block_index, placeholder(marker.path)), marker.path
    try:
        path = await archive.save_tool_result(tool_use_id, result_text(content))
    except ArchiveError as error:
        raise SteeringError(f"nothing dropped: {error}") from error
    return _with_block_content(messages, index, block_index, placeholder(path)), path


def marker_positions(messages: Sequence[Message], path: str) -> list[tuple[int, int]]:
    """Tool results whose content is a placeholder or persisted-output block naming `path`."""
    return [
        (index, block_index)
        for index, block_index in tool_result_positions(messages)
        if archived_path(messages[index]["content"][block_index].get("content")) == path
    ]


def most_bytes(char_limit: int) -> int:
    """The largest file whose text could fit in `char_limit` JSON chars: UTF-8 needs at most 4 bytes a
    character, so a file of more bytes decodes to more characters than the limit (refused unread)."""
    return 4 * max(char_limit, 0)


async def restore_result(
    messages: Sequence[Message], archive: Archive, path: str, char_limit: int
) -> tuple[list[Message], str]:
    """Put the archived text at `path` back in context, byte-exact.

    Only what the archive's manifest vouches for comes back: a file ctxtui wrote, with the digest it
    had then, and (in place) only at a marker whose tool_use id the file was written for. At its
    place when such a placeholder or persisted-output block is still in the history; otherwise
    appended as one clearly labelled user message. Returns the new history and "in place" or
    "appended". Refused when the text alone is over `char_limit` (a file too large for it is refused
    by its size, before it is read), or the path is not a vouched-for tool result in the archive.
    """
    found = archive.resolve(path)
    if found is None or found.kind != "tool-result":
        raise SteeringError(f"refusing to restore {path!r}: not a tool result in the archive")
    most = most_bytes(char_limit)
    if found.size > most:
        raise SteeringError(
            f"{path} is {found.size:,} bytes, more than the {char_limit:,}-char context limit could hold: "
            "read it in the archive viewer (or let the model read_file it) instead"
        )
    try:
        text, vouched_ids = await archive.read_vouched(path, most)
    except ArchiveError as error:
        raise SteeringError(str(error)) from error
    size = len(json.dumps(text, ensure_ascii=False))
    if size > char_limit:
        raise SteeringError(
            f"{path} is {size:,} chars, more than the {char_limit:,}-char context limit on its own: "
            "read it in the archive viewer (or let the model read_file it) instead"
        )
    positions = marker_positions(messages, path)
    if positions:
        mine = [
            (index, block_index)
            for index, block_index in positions
            if messages[index]["content"][block_index].get("tool_use_id") in vouched_ids
        ]
        if not mine:
            claimed = ", ".join(
                sorted(
                    {
                        str(messages[index]["content"][block_index].get("tool_use_id"))
                        for index, block_index in positions
                    }
                )
            )
            raise SteeringError(
                f"refusing to restore {path}: the archive saved it for another tool call "
                f"than the one whose marker names it ({claimed})"
            )
        result = list(messages)
        for index, block_index in mine:
            result = _with_block_content(result, index, block_index, text)
        return result, "in place"
    return [*messages, {"role": "user", "content": restored_message(path, text)}], "appended"


@dataclass(frozen=True)
class Compaction:
    """One compaction applied to the agent's history: the list before it and the list it left."""

    steps: tuple[str, ...]
    before: tuple[Message, ...]
    after: tuple[Message, ...]
    files: tuple[str, ...] = ()


def undo(current: Sequence[Message], compaction: Compaction) -> list[Message]:
    """The history before `compaction`, followed by every message added after it.

    Only messages appended since the step are carried over (they record real side effects): the
    current history must still start with exactly what the step left, else SteeringError.
    """
    after = compaction.after
    # by identity first (the live case, a few ns a message); equal values do too (a resumed session)
    if len(current) < len(after) or any(a is not b and a != b for a, b in zip(current, after, strict=False)):
        raise SteeringError("the history changed since that compaction in a way undo cannot follow")
    return [*compaction.before, *current[len(after) :]]
