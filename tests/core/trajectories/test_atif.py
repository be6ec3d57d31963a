"""The ATIF reader on Harbor's real trajectories, on ATIF features those files lack (timestamps,
content parts, reasoning, delegated results), and on damaged or foreign files."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from core.trajectories import Trajectory, TrajectoryError, atif, parse_file
from tests.core.trajectories.trajectory_files import (
    assert_valid,
    damaged,
    outcome,
    read_as,
    real,
    tool_pairs,
    write,
)

OPENHANDS = "openhands_hello-world.trajectory.json"
TERMINUS = "terminus_2_hello-world-context-summarization.trajectory.json"
LINEAR = "terminus_2_hello-world-context-summarization-linear-history.trajectory.json"


def read(path: Path) -> Trajectory:
    return read_as(path, "atif")


def document(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    numbered = [{"step_id": index, **step} for index, step in enumerate(steps, start=1)]
    return {"schema_version": "ATIF-v1.6", "agent": {"name": "test-agent", "version": "1"}, "steps": numbered,
            **fields}


def test_openhands_run_as_harbor_wrote_it(tmp_path: Path) -> None:
    trajectory = read(real(tmp_path, "atif", OPENHANDS))
    assert trajectory.calls == 2
    assert tool_pairs(trajectory.messages) == (2, 1)  # the finish call is the run's last word
    assert trajectory.system is not None and trajectory.system.startswith("You are OpenHands agent")
    assert [tool["name"] for tool in trajectory.tools] == [
        "execute_bash", "think", "finish", "execute_ipython_cell", "task_tracker", "str_replace_editor"]
    assert all(set(tool) == {"name", "description", "input_schema"} for tool in trajectory.tools)
    assert trajectory.tools[0]["input_schema"]["required"] == ["command", "security_risk"]
    assert trajectory.model is None and trajectory.times == [None, None]
    edit = trajectory.messages[1]["content"][1]
    assert edit["name"] == "str_replace_editor" and edit["input"]["path"] == "/app/hello.txt"
    assert trajectory.messages[2]["content"][0] == {"type": "tool_result", "tool_use_id": "call_fake_1",
                                                    "content": "File created successfully at: /app/hello.txt"}
    # "Retrieving content for: ..." and "Added workspace context": events, not text the model read.
    assert trajectory.skipped == 2 and any("2 system step(s)" in note for note in trajectory.notes)


def test_terminus_results_without_ids_answer_the_calls_in_order(tmp_path: Path) -> None:
    trajectory = read(real(tmp_path, "atif", TERMINUS))
    assert trajectory.calls == 7 and trajectory.model == "gpt-4o"
    assert tool_pairs(trajectory.messages) == (7, 7)
    assert trajectory.system is None
    assert trajectory.messages[0]["content"][0]["text"].startswith("You are an AI")
    assert trajectory.messages[2]["content"][0]["tool_use_id"] == "call_0_1"
    assert "mkdir test_dir" in trajectory.messages[2]["content"][0]["content"]
    # The hand-off's answers follow the last result before it, in the same user message.
    handoff = trajectory.messages[6]["content"]
    assert [block["type"] for block in handoff] == ["tool_result", "text"]
    assert handoff[1]["text"].startswith("Here are the answers the other agent provided")
    assert any("7 observation result(s) without source_call_id" in note for note in trajectory.notes)
    assert any("Performed context summarization" in note for note in trajectory.notes)


def test_text_only_run_and_its_continuation(tmp_path: Path) -> None:
    trajectory = read(real(tmp_path, "atif", LINEAR))
    assert trajectory.calls == 3 and tool_pairs(trajectory.messages) == (0, 0)
    assert trajectory.messages[1]["content"][0]["text"].startswith('{\n  "analysis"')
    assert trajectory.messages[2]["content"][0]["text"].startswith("New Terminal Output")
    assert any("trajectory.cont-1.json" in note for note in trajectory.notes)


def test_timestamps_parts_reasoning_and_delegation(tmp_path: Path) -> None:
    data = document(
        {"source": "system", "message": "Be brief.", "timestamp": "2025-10-16T14:30:00Z"},
        {"source": "user", "message": [
            {"type": "text", "text": "Look at this."},
            {"type": "image", "source": {"media_type": "image/png", "path": "a.png"}}],
         "timestamp": "2025-10-16T14:30:01Z"},
        {"source": "agent", "model_name": "anthropic/claude-sonnet-4-5", "message": "Two calls.",
         "reasoning_content": "think", "timestamp": "2025-10-16T14:30:05.500+00:00",
         "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls"}},
                        {"tool_call_id": "c1", "function_name": "delegate", "arguments": {}}],
         "observation": {"results": [
             {"source_call_id": "c1", "content": [{"type": "text", "text": "a.py"}]},
             {"source_call_id": "c1", "subagent_trajectory_ref": [{"trajectory_path": "sub.json"}]}]}},
        {"source": "agent", "message": "Done.", "timestamp": "2025-10-16T14:31:05"},
        agent={"name": "a", "version": "1", "tool_definitions": [{"name": "bash", "input_schema": {}}]})
    trajectory = read(write(tmp_path / "t.json", data))
    assert trajectory.system == "Be brief." and trajectory.model == "claude-sonnet-4-5"
    assert trajectory.times == [1760625005.5, 1760625065.0]
    assert trajectory.messages[0]["content"][0]["text"] == "Look at this.\n[image]"
    assistant, results = trajectory.messages[1]["content"], trajectory.messages[2]["content"]
    assert [block["id"] for block in assistant if block["type"] == "tool_use"] == ["c1", "c1_"]
    assert [(block["tool_use_id"], block["content"]) for block in results] == [
        ("c1", "a.py"), ("c1_", "[a sub-agent's trajectory: not in this file]")]
    assert trajectory.tools == [{"name": "bash", "description": "", "input_schema": {}}]
    assert any("reasoning_content" in note for note in trajectory.notes)
    assert any("image or audio" in note for note in trajectory.notes)


def test_recognised_but_unreadable(tmp_path: Path) -> None:
    for name, data, reason in [
        ("no-steps", {"schema_version": "ATIF-v1.5", "agent": {"name": "a"}, "steps": "none"},
         "without a list"),
        ("no-agent-step", document({"source": "user", "message": "hi"}), "no agent step"),
    ]:
        result = outcome(write(tmp_path / f"{name}.json", data))
        assert isinstance(result, str) and reason in result


def test_damaged_copies_never_raise_anything_else(tmp_path: Path) -> None:
    good = real(tmp_path, "atif", OPENHANDS)
    results = {name: outcome(path) for name, path in damaged(tmp_path, good).items()}
    assert results["truncated"] is None  # not JSON: no reader can tell what it was
    assert results["empty"] is None
    for name in ("binary", "not-utf8"):
        assert isinstance(results[name], str) and "not UTF-8" in str(results[name])


def test_wrong_typed_fields_cost_the_field(tmp_path: Path) -> None:
    data = json.loads(real(tmp_path, "atif", TERMINUS).read_text())
    data["steps"][1]["message"] = 12
    data["steps"][1]["tool_calls"] = {"tool_call_id": "x"}
    data["steps"][2]["tool_calls"][0]["arguments"] = "not json"
    data["steps"][3]["observation"] = {"results": [7, {"content": None}]}
    data["steps"][6]["timestamp"] = "yesterday"
    data["steps"].insert(4, "a step")
    data["agent"] = ["not", "an", "object"]
    trajectory = read(write(tmp_path / "typed.json", data))
    assert trajectory.calls == 7 and trajectory.model == "gpt-4o"
    assert trajectory.messages[1]["content"][0] == {"type": "text", "text": "12"}
    assert trajectory.messages[3]["content"][1]["input"] == {"arguments": "not json"}
    assert any("2 step(s) or result(s) not of ATIF's shape" in note for note in trajectory.notes)


def test_any_field_replaced_by_any_type(tmp_path: Path) -> None:
    """Every outcome of a file whose fields were swapped for other JSON types, 300 at random (seeded):
    a valid history, or one line naming the file."""
    original = json.loads(real(tmp_path, "atif", OPENHANDS).read_text())
    chooser = random.Random(0)
    values: list[Any] = [None, 7, -1.5, "", "x", [], {}, [1, "a"], {"a": None}, True]
    for attempt in range(300):
        data = copy.deepcopy(original)
        step = chooser.choice(data["steps"])
        target = step
        for _ in range(chooser.randrange(3)):
            inner = [value for value in target.values() if isinstance(value, (dict, list))] if isinstance(
                target, dict) else [value for value in target if isinstance(value, (dict, list))]
            if not inner:
                break
            target = chooser.choice(inner)
        if isinstance(target, dict) and target:
            target[chooser.choice(list(target))] = chooser.choice(values)
        elif isinstance(target, list) and target:
            target[chooser.randrange(len(target))] = chooser.choice(values)
        result = outcome(write(tmp_path / f"fuzz{attempt}.json", data))
        if isinstance(result, Trajectory):
            assert_valid(result)
        else:
            assert isinstance(result, str), attempt


def test_claims_only_atif(tmp_path: Path) -> None:
    assert atif.looks_like(parse_file(real(tmp_path, "atif", OPENHANDS)))
    assert not atif.looks_like({"steps": [], "messages": []})
    assert not atif.looks_like([{"schema_version": "ATIF-v1.6"}])
    with pytest.raises(TrajectoryError):
        atif.read(tmp_path / "x.json", {"schema_version": "ATIF-v1.6", "steps": []})
