"""A proxy recording folder as one conversation: exchanges joined by content, not by JSON key order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.engines.sources import recorded_calls
from core.history import estimate_chars
from core.sessions.inspection import InspectError, load_file
from core.sessions.proxy_folder import content_key

SYSTEM = "You are a coding agent."


def _reply(index: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"Reading file {index}. " + "x" * 300},
            {"type": "tool_use", "id": f"toolu_{index}", "name": "Read", "input": {"path": f"f{index}.py"}},
        ],
    }


def _reordered(message: dict[str, Any]) -> dict[str, Any]:
    """The message as a client re-sends it: every object's keys in reverse order."""

    def flip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: flip(value[key]) for key in reversed(list(value))}
        if isinstance(value, list):
            return [flip(item) for item in value]
        return value

    return flip(message)


def _result(index: int) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{index}", "content": "y" * 500}],
    }


def write_exchange(
    folder: Path, exchange_id: str, messages: list[Any], reply: dict[str, Any], tokens: int
) -> None:
    request = {
        "type": "proxy_request",
        "id": exchange_id,
        "body": {
            "model": "claude-sonnet-4-5",
            "system": SYSTEM,
            "tools": [],
            "max_tokens": 1000,
            "messages": messages,
        },
    }
    response = {
        "type": "proxy_response",
        "id": exchange_id,
        "status": 200,
        "reply": {"content": reply["content"]},
        "usage": {"input_tokens": tokens, "output_tokens": 10},
    }
    with (folder / f"{exchange_id}.jsonl").open("w") as handle:
        handle.write(json.dumps(request) + "\n" + json.dumps(response) + "\n")


def make_conversation(
    folder: Path, calls: int, prefix: str = "20261130-1000", first: str = "Fix the bug."
) -> list[list[Any]]:
    """`calls` exchanges of one conversation whose client re-sends every reply with reversed keys."""
    sent: list[list[Any]] = []
    history: list[Any] = [{"role": "user", "content": first}]
    for index in range(calls):
        messages = list(history)
        sent.append(messages)
        reply = _reply(index)
        write_exchange(folder, f"{prefix}{index:02d}-000-abcdef", messages, reply, 1000 + 200 * index)
        history = [*messages, _reordered(reply), _result(index)]
    return sent


def test_a_folder_is_the_newest_conversation_joined(tmp_path: Path) -> None:
    sent = make_conversation(tmp_path, 6)
    make_conversation(tmp_path, 2, prefix="20261130-0900", first="An older task.")
    inspected = load_file(tmp_path)
    assert inspected.kind == "proxy"
    assert inspected.messages == sent[-1]
    assert len(inspected.exchanges) == 6
    assert "2 conversations" in inspected.notes[0]
    older = load_file(tmp_path, "1")
    assert older.messages[0]["content"] == "An older task."
    with pytest.raises(InspectError, match="no conversation"):
        load_file(tmp_path, "nope")


def test_calls_are_replayed_at_their_real_size(tmp_path: Path) -> None:
    sent = make_conversation(tmp_path, 6)
    recorded = recorded_calls(tmp_path)
    assert len(recorded.calls) == 6
    conversation: list[Any] = []
    for call, real in zip(recorded.calls, sent, strict=True):
        conversation.extend(call.added)
        assert estimate_chars(conversation) == estimate_chars(real)  # not the history again and again
        assert [content_key(message) for message in conversation] == [
            content_key(message) for message in real
        ]
        assert call.reply is not None
        conversation.append(call.reply)


def test_content_key_ignores_key_order_and_breakpoints() -> None:
    message = _reply(1)
    assert content_key(message) == content_key(_reordered(message))
    marked = json.loads(json.dumps(message))
    marked["content"][0]["cache_control"] = {"type": "ephemeral"}
    assert content_key(marked) == content_key(message)
    assert content_key({"role": "user", "content": "hi"}) == content_key(
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    )
    assert content_key(_reply(1)) != content_key(_reply(2))


def test_compare_of_a_folder_sends_the_real_sizes(tmp_path: Path) -> None:
    import asyncio

    from core.config import Settings
    from core.engines.compare import compare_file
    from core.history.tokens import TokenCounter

    workdir = tmp_path / "w"
    folder = tmp_path / "proxy"
    workdir.mkdir()
    folder.mkdir()
    sent = make_conversation(folder, 6)
    data = asyncio.run(compare_file(folder, Settings(workdir=workdir)))
    client = next(engine for engine in data["engines"] if engine["engine"] == "client")
    counter = TokenCounter()
    latest = counter.count(sent[-1])
    assert client["calls"] == 6
    # the largest call is the latest request (plus the system prompt), not the history re-added per call
    assert latest <= client["peak_tokens"] <= latest + 200


def test_report_of_a_folder_counts_the_latest_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    sent = make_conversation(tmp_path, 5)
    assert main(["inspect", str(tmp_path), "--report", "--output-format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "proxy" and data["messages"] == len(sent[-1])
    assert data["message_chars"] == estimate_chars(sent[-1])
    assert data["chars"] == estimate_chars(sent[-1]) + len(json.dumps(SYSTEM)) + len("[]")
    assert main(["inspect", str(tmp_path), "--conversation", "missing", "--report"]) == 2
