"""Reading a Claude Code session is linear in its records.

An assistant reply is written as one record per content block, all sharing `message.id`, and
consecutive tool results as one record each; the reader merges them. Work is counted, not timed:
the blocks the reader's merge and check helpers are handed. Twice the records may cost about
twice as much, not four times (a new list per record was quadratic).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import core.sessions.claude_code as claude_code
from core.sessions.claude_code import read_claude_code


def write_session(path: Path, blocks: int) -> None:
    """One request, a reply of `blocks` tool calls (a record each, one message id), their results."""
    records: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u0", "parentUuid": None, "message": {"role": "user", "content": "go"}}]
    parent = "u0"
    for number in range(blocks):
        uuid = f"a{number}"
        records.append({"type": "assistant", "uuid": uuid, "parentUuid": parent, "message": {
            "id": "msg_one", "role": "assistant",
            "content": [{"type": "tool_use", "id": f"toolu_{number}", "name": "Read", "input": {"n": number}}]}})
        parent = uuid
    for number in range(blocks):
        uuid = f"r{number}"
        records.append({"type": "user", "uuid": uuid, "parentUuid": parent, "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": "ok"}]}})
        parent = uuid
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def counting_blocks(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Count the blocks handed to the reader's helpers that copy or check a message's content."""
    handled = [0]
    for name in ("_as_blocks", "_only_tool_results"):
        original = getattr(claude_code, name)

        def counted(value: Any, _original: Any = original) -> Any:
            content = value.get("content") if isinstance(value, dict) else value
            handled[0] += len(content) if isinstance(content, list) else 1
            return _original(value)

        monkeypatch.setattr(claude_code, name, counted)
    return lambda: handled[0]


def read_cost(folder: Path, blocks: int, monkeypatch: pytest.MonkeyPatch) -> int:
    path = folder / f"session_{blocks}.jsonl"
    write_session(path, blocks)
    with monkeypatch.context() as patch:
        count = counting_blocks(patch)
        session = read_claude_code(path)
        cost = count()
    assert [message["role"] for message in session.messages] == ["user", "assistant", "user"]
    assert len(session.messages[1]["content"]) == len(session.messages[2]["content"]) == blocks
    assert [block["id"] for block in session.messages[1]["content"]] == [f"toolu_{n}" for n in range(blocks)]
    return cost


def test_records_sharing_a_message_id_are_merged_in_linear_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = read_cost(tmp_path, 1_000, monkeypatch)
    large = read_cost(tmp_path, 2_000, monkeypatch)

    assert small > 0
    assert large <= 2.5 * small, (small, large)
