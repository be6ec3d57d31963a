"""The Codex rollout reader on a real rollout, on the items that file lacks (a compaction, local
shell calls, failed and structured outputs, a late developer message), and on damaged files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from core.trajectories import Trajectory, codex, parse_file
from tests.core.trajectories.trajectory_files import (
    assert_valid,
    damaged,
    outcome,
    read_as,
    real,
    tool_pairs,
    write,
)

ROLLOUT = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"


def read(path: Path) -> Trajectory:
    return read_as(path, "codex")


def line(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2026-01-02T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def item(payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return line("response_item", payload, second)


def message(role: str, text: str, second: int = 0) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return item({"type": "message", "role": role, "content": [{"type": part, "text": text}]}, second)


def test_real_rollout(tmp_path: Path) -> None:
    trajectory = read(real(tmp_path, "codex", ROLLOUT))
    # 66 model responses (the file has one token_count event for each), 99 function calls and 3
    # apply_patch custom tool calls, each answered.
    assert trajectory.calls == 66
    assert tool_pairs(trajectory.messages) == (102, 102)
    assert trajectory.model == "gpt-5.5" and trajectory.tools == []
    assert trajectory.system is not None
    assert trajectory.system.startswith("You are Codex, a coding agent based on GPT-5.")
    assert "<permissions instructions>" in trajectory.system  # the developer message
    first = trajectory.messages[0]["content"]
    assert first[0]["text"].startswith("# AGENTS.md instructions") and first[1]["text"] == "show tools"
    # The first response starts with its reasoning item, at 08:27:21.556Z.
    assert trajectory.times[0] == 1778488041.556
    assert all(time is not None for time in trajectory.times)
    assert trajectory.times == sorted(trajectory.times)  # type: ignore[type-var]
    call = trajectory.messages[1]["content"][0]
    assert call["name"] == "exec_command" and call["input"]["cmd"].startswith("sed -n '1,180p'")
    patches = [block for message in trajectory.messages for block in message["content"]
               if block["type"] == "tool_use" and block["name"] == "apply_patch"]
    assert len(patches) == 3 and patches[0]["input"]["input"].startswith("*** Begin Patch")
    assert trajectory.skipped == 28  # 25 encrypted reasoning items and 3 web searches
    assert "25 reasoning item(s) (encrypted) left out" in trajectory.notes
    assert "3 web search(es) the provider ran left out" in trajectory.notes


def test_parallel_calls_are_one_turn(tmp_path: Path) -> None:
    records = [
        line("session_meta", {"id": "s", "instructions": "Old-style instructions.",
                              "dynamic_tools": [{"name": "lookup", "description": "Find",
                                                 "inputSchema": {"type": "object"}}]}),
        line("turn_context", {"model": "gpt-5-codex"}),
        message("user", "go"),
        item({"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}, 1),
        item({"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}',
              "call_id": "a"}, 2),
        item({"type": "local_shell_call", "call_id": "b", "status": "completed",
              "action": {"type": "exec", "command": ["pwd"]}}, 2),
        item({"type": "function_call_output", "call_id": "b", "output": "/w"}, 3),
        item({"type": "function_call_output", "call_id": "a",
              "output": [{"type": "input_text", "text": "a.py"},
                         {"type": "input_image", "image_url": "data:"}]}, 3),
        item({"type": "function_call", "name": "shell", "arguments": "not json", "call_id": "c"}, 4),
        item({"type": "function_call_output", "call_id": "c",
              "output": {"content": "no such file", "success": False}}, 5),
        message("assistant", "Done.", 6),
    ]
    trajectory = read(write(tmp_path / "rollout.jsonl", records))
    assert trajectory.calls == 3 and trajectory.model == "gpt-5-codex"
    assert trajectory.system == "Old-style instructions."
    assert trajectory.tools == [{"name": "lookup", "description": "Find", "input_schema": {"type": "object"}}]
    assert trajectory.times == [1767348001.0, 1767348004.0, 1767348006.0]
    first = trajectory.messages[1]["content"]
    assert [(block["name"], block["input"]) for block in first] == [
        ("shell", {"command": ["ls"]}), ("local_shell", {"type": "exec", "command": ["pwd"]})]
    results = trajectory.messages[2]["content"]
    assert [(block["tool_use_id"], block["content"]) for block in results] == [("b", "/w"),  # file order
                                                                               ("a", "a.py\n[input_image]")]
    assert trajectory.messages[3]["content"][0]["input"] == {"arguments": "not json"}
    assert trajectory.messages[4]["content"][0] == {"type": "tool_result", "tool_use_id": "c",
                                                    "content": "no such file", "is_error": True}


def test_compaction_and_late_developer_message(tmp_path: Path) -> None:
    records = [
        message("developer", "Sandbox rules."),
        message("user", "one"),
        message("assistant", "first", 1),
        line("compacted", {"message": "Summary of one.", "replacement_history": []}, 2),
        line("event_msg", {"type": "context_compacted"}, 2),
        message("developer", "Approval policy changed.", 3),
        message("user", "two", 3),
        message("assistant", "second", 4),
    ]
    trajectory = read(write(tmp_path / "rollout.jsonl", records))
    assert trajectory.calls == 2 and trajectory.system == "Sandbox rules."
    late = trajectory.messages[2]["content"]
    assert [block["text"] for block in late] == ["Approval policy changed.", "two"]
    assert not any("Summary of one." in json.dumps(message) for message in trajectory.messages)
    assert any("compacted the history 1 time(s) (before call 2)" in note for note in trajectory.notes)
    assert any("1 developer message(s) after the first reply" in note for note in trajectory.notes)


def test_user_messages_from_events_when_the_file_has_no_user_items(tmp_path: Path) -> None:
    records = [line("session_meta", {"id": "s"}),
               line("event_msg", {"type": "user_message", "message": "hello"}),
               message("assistant", "hi", 1)]
    trajectory = read(write(tmp_path / "rollout.jsonl", records))
    assert trajectory.messages[0]["content"][0]["text"] == "hello"
    assert any("user_message events" in note for note in trajectory.notes)


def test_recognised_but_unreadable(tmp_path: Path) -> None:
    only_meta = tmp_path / "meta.jsonl"
    only_meta.write_text(json.dumps(line("session_meta", {"id": "s"})) + "\n")
    result = outcome(only_meta)
    assert isinstance(result, str) and "no model reply" in result


def test_damaged_copies(tmp_path: Path) -> None:
    good = real(tmp_path, "codex", ROLLOUT)
    results = {name: outcome(path) for name, path in damaged(tmp_path, good).items()}
    truncated = results["truncated"]
    assert isinstance(truncated, Trajectory) and 0 < truncated.calls < 66  # the lines before the cut
    assert any("1 line(s) not a Codex record" in note for note in truncated.notes)
    assert_valid(truncated)
    assert results["empty"] is None
    for name in ("binary", "not-utf8"):
        assert isinstance(results[name], str) and "not UTF-8" in str(results[name])


def test_wrong_typed_fields_cost_the_field(tmp_path: Path) -> None:
    """Every field of every record swapped for another JSON type, 400 times at random (seeded): a valid
    history or one line naming the file."""
    lines = real(tmp_path, "codex", ROLLOUT).read_text().splitlines()[:60]
    records = [json.loads(text) for text in lines]
    chooser = random.Random(1)
    values: list[Any] = [None, 7, "", "x", [], {}, [{"type": "input_text"}], {"content": 3}, True]
    outcomes = []
    for attempt in range(400):
        changed = [dict(record, payload=dict(record["payload"])) for record in records]
        record = chooser.choice(changed)
        target = record if chooser.random() < 0.3 else record["payload"]
        target[chooser.choice(list(target))] = chooser.choice(values)
        result = outcome(write(tmp_path / f"fuzz{attempt}.jsonl", changed))
        if isinstance(result, Trajectory):
            assert_valid(result)
        outcomes.append(type(result).__name__)
    assert "Trajectory" in outcomes


def test_claims_only_rollouts(tmp_path: Path) -> None:
    assert codex.looks_like(parse_file(real(tmp_path, "codex", ROLLOUT)))
    assert codex.looks_like(line("session_meta", {"id": "s"}))  # a one-line file parses to its record
    assert not codex.looks_like([{"type": "message", "message": {"role": "user", "content": "x"}}])
    assert not codex.looks_like([{"type": "event_msg", "payload": {"type": "token_count"}}])
    assert not codex.looks_like({"type": "response_item", "payload": "x"})
