"""The OpenHands reader on real trajectories (an evaluation record, saved trajectories), on what those
files lack (actions of one response interleaved with their observations, a condensation, runs
without function calling, several records), and on damaged files."""

from __future__ import annotations

import copy
import gzip
import json
import random
from pathlib import Path
from typing import Any

from core.trajectories import Trajectory, openhands, parse_file
from tests.core.trajectories.trajectory_files import (
    TRAJECTORIES,
    assert_valid,
    damaged,
    outcome,
    read_as,
    real,
    tool_pairs,
    write,
)

EVALUATION = "multi_swe_bench_output.first-line.jsonl.gz"
GUI = "basic_gui_mode.json"
CHAT = "basic_interactions.json"


def read(path: Path) -> Trajectory:
    return read_as(path, "openhands")


def response(response_id: str, text: str | None, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    tool_calls = [{"id": call_id, "type": "function",
                   "function": {"name": name, "arguments": json.dumps(arguments)}}
                  for call_id, name, arguments in calls]
    return {"id": response_id, "created": 1746000000, "model": "anthropic/claude-sonnet-4-5",
            "choices": [{"message": {"role": "assistant", "content": text, "tool_calls": tool_calls}}]}


def action(event_id: int, kind: str, args: dict[str, Any], call: str | None = None,
           model_response: dict[str, Any] | None = None, source: str = "agent") -> dict[str, Any]:
    event: dict[str, Any] = {"id": event_id, "timestamp": "2025-04-30T16:32:54.707474", "source": source,
                             "message": "", "action": kind, "args": args}
    if call is not None:
        event["tool_call_metadata"] = {"function_name": kind, "tool_call_id": call,
                                       "model_response": model_response, "total_calls_in_response": 2}
    return event


def observation(event_id: int, kind: str, content: str, call: str | None = None,
                extras: dict[str, Any] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"id": event_id, "timestamp": "2025-04-30T16:32:58", "source": "agent",
                             "message": "", "cause": event_id - 1, "observation": kind, "content": content,
                             "extras": extras or {}}
    if call is not None:
        event["tool_call_metadata"] = {"function_name": kind, "tool_call_id": call}
    return event


def test_evaluation_record(tmp_path: Path) -> None:
    trajectory = read(real(tmp_path, "openhands", EVALUATION))
    assert trajectory.calls == 23
    assert tool_pairs(trajectory.messages) == (23, 22)  # the finish call is the run's last word
    assert trajectory.model == "llama-4-maverick"  # what the responses name (the config says an alias)
    assert trajectory.system is not None and trajectory.system.startswith("You are OpenHands agent")
    assert [tool["name"] for tool in trajectory.tools] == [
        "execute_bash", "think", "finish", "str_replace_editor"]
    assert trajectory.times[0] == 1746001974.0 and trajectory.times[-1] == 1746002058.0
    first = trajectory.messages[0]["content"]
    assert first[0]["text"].startswith("<uploaded_files>\n/workspace/ponylang__ponyc__0.1")
    assert "GITHUB_TOKEN" in first[1]["text"]  # the recall's knowledge, approximated
    call = trajectory.messages[1]["content"]
    assert call[0]["text"].startswith("The task involves fixing an issue")
    assert call[1] == {"type": "tool_use", "id": "toolu_01", "name": "execute_bash",
                       "input": {"command": "ls -l /workspace/ponylang__ponyc__0.1"}}
    output = trajectory.messages[2]["content"][0]["content"]
    assert output.startswith("total 300\n") and output.endswith("[Command finished with exit code 0]")
    assert trajectory.skipped == 1  # the recall action: not read
    assert any("recall" in note for note in trajectory.notes)


def test_saved_trajectory_with_environment_events(tmp_path: Path) -> None:
    trajectory = read(real(tmp_path, "openhands", GUI))
    assert trajectory.calls == 5 and tool_pairs(trajectory.messages) == (4, 4)
    assert trajectory.model == "claude-3-5-sonnet-20241022" and trajectory.system is None
    assert trajectory.times[:2] == [1737433775.0, 1737433788.0]
    assert trajectory.skipped == 8  # state changes and null observations
    result = trajectory.messages[2]["content"][0]["content"]
    assert result.startswith(
        "\n[The command completed with exit code 0.]\n[Current working directory: /workspace]")
    assert trajectory.messages[-1]["content"][0]["text"].startswith("I've created a complete Vue.js todo")


def test_messages_then_finish(tmp_path: Path) -> None:
    trajectory = read(real(tmp_path, "openhands", CHAT))
    assert trajectory.calls == 3 and trajectory.model == "gpt-4o-2024-08-06"
    assert [message["role"] for message in trajectory.messages] == ["user", "assistant"] * 3
    assert trajectory.times[0] == 1738368852.686046  # a message's own (zone-less) timestamp, read as UTC
    assert trajectory.messages[-1]["content"][0]["name"] == "finish"


def test_one_response_interleaved_with_its_observations(tmp_path: Path) -> None:
    both = response("r1", "Two things.", ("c1", "execute_bash", {"command": "ls"}),
                    ("c2", "str_replace_editor", {"command": "view", "path": "/a"}))
    events = [
        action(0, "system", {"content": "You are OpenHands.", "tools": [
            {"type": "function", "function": {"name": "execute_bash", "description": "Run",
                                              "parameters": {"type": "object"}}}]}),
        action(1, "message", {"content": "go"}, source="user"),
        action(2, "run", {"command": "ls", "thought": "Two things."}, "c1", both),
        observation(3, "run", "a.py", "c1", {"metadata": {"exit_code": 2, "working_dir": "/w"}}),
        action(4, "read", {"path": "/a", "thought": ""}, "c2", both),
        observation(5, "error", "no such file", "c2"),
        action(6, "condensation", {"forgotten_event_ids": [2, 3], "summary": "Listed files."}),
        action(7, "run", {"command": "pwd", "thought": "", "blocking": False}, "c3",
               {"id": "r2", "choices": []}),
        observation(8, "run", "/w", "c3"),
    ]
    trajectory = read(write(tmp_path / "trajectory.json", {"trajectory": events}))
    assert trajectory.calls == 2 and trajectory.system == "You are OpenHands."
    assert trajectory.tools == [
        {"name": "execute_bash", "description": "Run", "input_schema": {"type": "object"}}]
    assert [block.get("id") for block in trajectory.messages[1]["content"]] == [None, "c1", "c2"]
    assert trajectory.messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1",
         "content": "a.py\n[Current working directory: /w]\n[Command finished with exit code 2]"},
        {"type": "tool_result", "tool_use_id": "c2", "is_error": True,
         "content": "no such file\n[Error occurred in processing last action]"}]
    # A response the file did not keep: the call is the action's own arguments.
    assert trajectory.messages[3]["content"][0]["input"] == {"command": "pwd"}
    assert any("condensed the history 1 time(s)" in note for note in trajectory.notes)
    assert not any("Listed files." in json.dumps(message) for message in trajectory.messages)


def test_runs_without_function_calling_and_user_commands(tmp_path: Path) -> None:
    events = [
        action(0, "message", {"content": "fix it"}, source="user"),
        action(1, "run", {"command": "make"}, source="user"),
        observation(2, "run", "ok", extras={"metadata": {"exit_code": 0}}),
        action(3, "run", {"command": "ls", "thought": "Listing."}),
        observation(4, "run", "a.py"),
        action(5, "finish", {"final_thought": "Done.", "thought": ""}),
    ]
    trajectory = read(write(tmp_path / "trajectory.json", events))
    assert trajectory.calls == 2 and tool_pairs(trajectory.messages) == (0, 0)
    texts = [block["text"] for message in trajectory.messages for block in message["content"]]
    assert texts[1] == "User executed the command:\nmake"
    assert texts[2] == ("\nObserved result of command executed by user:\nok\n"
                        "[Command finished with exit code 0]")
    assert texts[3] == "Listing." and texts[5] == "Done."
    assert any("without tool_call_metadata" in note for note in trajectory.notes)


def test_evaluation_file_of_several_records(tmp_path: Path) -> None:
    record = json.loads(gzip.decompress((TRAJECTORIES / "openhands" / EVALUATION).read_bytes()))
    other = dict(record, instance_id="second")
    trajectory = read(write(tmp_path / "output.jsonl", [record, other]))
    assert trajectory.calls == 23
    assert "1 more evaluation record(s) in the file not read (the first is)" in trajectory.notes


def test_recognised_but_unreadable(tmp_path: Path) -> None:
    events = [action(0, "message", {"content": "hi"}, source="user"),
              observation(1, "agent_state_changed", "", extras={"agent_state": "awaiting_user_input"})]
    result = outcome(write(tmp_path / "trajectory.json", events))
    assert isinstance(result, str) and "no agent turn" in result


def test_damaged_copies(tmp_path: Path) -> None:
    for name in (GUI, EVALUATION):
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        broken = damaged(folder, real(folder, "openhands", name))
        results = {kind: outcome(path) for kind, path in broken.items()}
        assert results["truncated"] is None and results["empty"] is None  # not JSON at all
        for kind in ("binary", "not-utf8"):
            assert isinstance(results[kind], str) and "not UTF-8" in str(results[kind])


def test_any_field_replaced_by_any_type(tmp_path: Path) -> None:
    """Fields of the events swapped for other JSON types, 300 at random (seeded): a valid history, or
    one line naming the file."""
    original = json.loads(real(tmp_path, "openhands", GUI).read_text())
    chooser = random.Random(2)
    values: list[Any] = [None, 7, "", "x", [], {}, [1, "a"], {"id": []}, True]
    outcomes = set()
    for attempt in range(300):
        events = copy.deepcopy(original)
        target = chooser.choice(events)
        for _ in range(chooser.randrange(4)):
            inner = [value for value in (target.values() if isinstance(target, dict) else target)
                     if isinstance(value, (dict, list)) and value]
            if not inner:
                break
            target = chooser.choice(inner)
        if isinstance(target, dict):
            target[chooser.choice(list(target))] = chooser.choice(values)
        else:
            target[chooser.randrange(len(target))] = chooser.choice(values)
        result = outcome(write(tmp_path / f"fuzz{attempt}.json", events))
        if isinstance(result, Trajectory):
            assert_valid(result)
        outcomes.add(type(result).__name__)
    assert "Trajectory" in outcomes


def test_claims_only_openhands(tmp_path: Path) -> None:
    assert openhands.looks_like(parse_file(real(tmp_path, "openhands", GUI)))
    assert openhands.looks_like(parse_file(real(tmp_path, "openhands", EVALUATION)))
    assert not openhands.looks_like({"history": [{"role": "user", "content": "x", "action": "ls"}]})
    assert not openhands.looks_like([{"source": "agent", "action": 3}])
    assert not openhands.looks_like({"trajectory": "x"})
