"""Read a Claude Code session file (`~/.claude/projects/<project>/<session>.jsonl`) into a history.

The format, as its public descriptions give it: one JSON record per line. Conversation records have
`type` "user" or "assistant", a Messages API `message` object, `uuid` and `parentUuid` (the chain of
the active branch), and `isSidechain` (a sub-agent's conversation, not part of the main context).
An assistant reply is written as one record per content block, all sharing `message.id`.
A compaction writes a `type: "system"`, `subtype: "compact_boundary"` record (its `parentUuid` is
null, `logicalParentUuid` points back across it) followed by a user record with
`isCompactSummary: true` that holds the summary. Other record types (`summary` titles,
`file-history-snapshot`, ...) carry no context.

What is read: the active branch (walked from the last record up the `parentUuid` chain, or the file
order when the chain is broken), side chains left out, one message per API message id, and
consecutive tool-result records merged into one user message, as the API received them. What lies
before the last compaction boundary is returned apart, as archived.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import jsonlines

Message = dict[str, Any]


@dataclass
class ClaudeCodeSession:
    """A Claude Code session read for inspection."""

    messages: list[Message] = field(default_factory=list)  # the context after the last boundary
    archived: list[Message] = field(default_factory=list)  # what the last compaction replaced
    summary: str | None = None  # the text of the last compact summary
    boundaries: int = 0
    cuts: list[int] = field(
        default_factory=list
    )  # len(archived) after each boundary: what each compaction took
    sidechain_records: int = 0
    skipped: int = 0
    cwd: str | None = None


def looks_like_claude_code(record: Any) -> bool:
    """A record of a Claude Code session file (not a ctxtui record, not a bare message)."""
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
        return True
    return (kind == "system" and "subtype" in record) or kind in ("summary", "file-history-snapshot")


def is_boundary(record: dict[str, Any]) -> bool:
    return record.get("type") == "system" and record.get("subtype") == "compact_boundary"


def read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Every JSON object line of the file, and how many lines were not one (core/jsonlines.py: a
    regular file only, bounded lines and nesting; raises OSError for anything else)."""
    records: list[dict[str, Any]] = []
    skipped = 0
    for record in jsonlines.read_records(path, follow_symlinks=True):
        if isinstance(record, dict):
            records.append(record)
        else:
            skipped += 1
    return records, skipped


def _active_branch(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of the active branch, oldest first; the file order when the chain is broken."""
    chained = [record for record in records if isinstance(record.get("uuid"), str)]
    by_uuid = {record["uuid"]: record for record in chained}
    main = [record for record in chained if not record.get("isSidechain")]
    if not main:
        return []
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: dict[str, Any] | None = main[-1]
    while current is not None and current["uuid"] not in seen:
        seen.add(current["uuid"])
        branch.append(current)
        parent = current.get("parentUuid") or (
            current.get("logicalParentUuid") if is_boundary(current) else None
        )
        if parent is None and is_boundary(current):
            # A boundary that does not point back: what came before it in the file is what it replaced.
            index = next(position for position, record in enumerate(records) if record is current)
            branch.extend(record for record in reversed(records[:index]) if not record.get("isSidechain"))
            current = None
        elif parent is None:
            current = None
        elif parent in by_uuid:
            current = by_uuid[parent]
        else:
            # A parent that is not in the file (a known corruption): trust the file order instead.
            return [record for record in records if not record.get("isSidechain")]
    branch.reverse()
    return branch


def _message_of(record: dict[str, Any]) -> Message | None:
    message = record.get("message")
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return {"role": message["role"], "content": content}
    if isinstance(content, list):
        return {"role": message["role"], "content": [block for block in content if isinstance(block, dict)]}
    return None


def _only_tool_results(message: Message) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(block.get("type") == "tool_result" for block in content)
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return ""


def read_claude_code(path: Path) -> ClaudeCodeSession:
    """Read a Claude Code session file; bad lines are counted, never fatal."""
    records, skipped = read_records(path)
    session = ClaudeCodeSession(skipped=skipped)
    session.sidechain_records = sum(1 for record in records if record.get("isSidechain"))
    messages: list[Message] = []
    by_api_id: dict[str, Message] = {}  # message.id -> the merged message it belongs to
    last_results_only = False  # messages[-1] holds only tool results (kept, not re-checked: linear)
    for record in _active_branch(records):
        if isinstance(record.get("cwd"), str):
            session.cwd = record["cwd"]
        if is_boundary(record):
            session.boundaries += 1
            session.archived.extend(messages)
            session.cuts.append(len(session.archived))
            messages, by_api_id, last_results_only = [], {}, False
            continue
        if record.get("type") not in ("user", "assistant") or record.get("isSidechain"):
            continue
        message = _message_of(record)
        if message is None:
            session.skipped += 1
            continue
        if record.get("isCompactSummary"):
            session.summary = _text(message["content"])
        api_id = record["message"].get("id")
        if message["role"] == "assistant" and isinstance(api_id, str) and api_id in by_api_id:
            _merge_into(by_api_id[api_id], message)
            continue
        results_only = _only_tool_results(message)
        if messages and results_only and last_results_only:
            _merge_into(messages[-1], message)  # still only tool results: the flag stays
            continue
        messages.append(message)
        last_results_only = results_only
        if message["role"] == "assistant" and isinstance(api_id, str):
            by_api_id[api_id] = message
    session.messages = messages
    return session


def _merge_into(merged: Message, message: Message) -> None:
    """Append `message`'s blocks to `merged` in place: each record's blocks are copied once, so a
    reply written as thousands of records is read in linear time (a new list per record was quadratic).
    `merged` is a message this reader made (its content list is its own)."""
    if not isinstance(merged["content"], list):
        merged["content"] = _as_blocks(merged["content"])
    merged["content"].extend(_as_blocks(message["content"]))


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)
