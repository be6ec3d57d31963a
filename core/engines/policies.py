"""The server engines' documented behaviour as pure functions of the messages a request sends.

Used to read an `applied_edits` report back onto the history (which results were cleared: the API
says only how many) and to replay a session under each engine (compare.py). As documented for
`clear_tool_uses_20250919`: past the trigger, the oldest tool results are cleared, all but the
newest `keep` tool uses, never those of `exclude_tools`, and only when at least `clear_at_least`
tokens go; `clear_thinking_20251015` keeps the thinking of the newest `keep` assistant turns. The
server reads nothing before the newest compaction block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.history.blocks import last_compaction

Message = dict[str, Any]
Use = tuple[int, int, dict[str, Any]]
"""(message index, block index, tool_use block)."""


def seen_from(messages: Sequence[Message]) -> int:
    """The first message the server reads: the one holding the newest compaction block, else 0."""
    index = last_compaction(messages)
    return 0 if index is None else index


def tool_uses(messages: Sequence[Message]) -> list[Use]:
    """Every tool_use the server reads, oldest first."""
    found: list[Use] = []
    for index in range(seen_from(messages), len(messages)):
        message = messages[index]
        content = message.get("content") if message.get("role") == "assistant" else None
        if isinstance(content, list):
            found.extend(
                (index, position, block)
                for position, block in enumerate(content)
                if isinstance(block, dict) and block.get("type") == "tool_use"
            )
    return found


def clear_candidates(messages: Sequence[Message], keep: int, exclude: Sequence[str] = ()) -> list[Use]:
    """The tool uses clear_tool_uses may clear, oldest first: all but the newest `keep`, none of an
    excluded tool."""
    uses = tool_uses(messages)
    older = uses[: max(0, len(uses) - keep)]
    return [use for use in older if str(use[2].get("name")) not in exclude]


def result_of(messages: Sequence[Message], tool_use_id: str, after: int) -> tuple[int, int] | None:
    """(message index, block index) of the tool_result answering `tool_use_id` after message `after`."""
    for index in range(after + 1, min(after + 2, len(messages))):
        content = messages[index].get("content")
        if isinstance(content, list):
            for position, block in enumerate(content):
                if (
                    isinstance(block, dict)
                    and block.get("type") == "tool_result"
                    and str(block.get("tool_use_id")) == tool_use_id
                ):
                    return index, position
    return None


def thinking_turns(messages: Sequence[Message]) -> list[int]:
    """The assistant messages the server reads that hold thinking, oldest first."""
    return [
        index
        for index in range(seen_from(messages), len(messages))
        if messages[index].get("role") == "assistant"
        and isinstance(messages[index].get("content"), list)
        and any(
            isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking")
            for block in messages[index]["content"]
        )
    ]
