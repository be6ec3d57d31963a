"""Files the trajectory importers are tested on: the real fixtures (unpacked into a tmp dir), damaged
copies of them, the project's other history files, and a check that a converted history is one the
Messages API accepts (roles alternate, every tool_use answered once in the next user message)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from core.trajectories import Trajectory, TrajectoryError, read_trajectory

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TRAJECTORIES = FIXTURES / "trajectories"


def real(tmp_path: Path, kind: str, name: str) -> Path:
    """The fixture `tests/fixtures/trajectories/<kind>/<name>` as a plain file in `tmp_path`."""
    source = TRAJECTORIES / kind / name
    target = tmp_path / name.removesuffix(".gz")
    data = source.read_bytes()
    target.write_bytes(gzip.decompress(data) if name.endswith(".gz") else data)
    return target


def write(path: Path, value: Any) -> Path:
    """`value` as JSON (a list of records as JSON Lines when `path` ends in .jsonl)."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(record) + "\n" for record in value), encoding="utf-8")
    else:
        path.write_text(json.dumps(value), encoding="utf-8")
    return path


def outcome(path: Path) -> Trajectory | str | None:
    """What reading `path` gives: the trajectory, None (not recognised), or the error's one line.
    Any other exception fails the test that calls this."""
    try:
        return read_trajectory(path)
    except TrajectoryError as error:
        line = str(error)
        assert "\n" not in line and line.startswith(str(path)), line
        return line


def damaged(tmp_path: Path, good: Path) -> dict[str, Path]:
    """Broken versions of the file `good`: cut in the middle, binary, a byte that is not UTF-8, empty."""
    data = good.read_bytes()
    files = {
        "truncated": data[: len(data) // 2],
        "binary": bytes(range(256)) * 64,
        "not-utf8": data[: len(data) // 3] + b"\xff\xfe" + data[len(data) // 3:],
        "empty": b"",
    }
    paths = {}
    for name, content in files.items():
        path = tmp_path / f"{name}{good.suffix}"
        path.write_bytes(content)
        paths[name] = path
    return paths


def other_histories(tmp_path: Path) -> dict[str, Path]:
    """The project's own history files, which no trajectory reader may claim."""
    messages = [{"role": "user", "content": "Fix the tests."},
                {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                                  {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                   "input": {"file_path": "a.py"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                              "content": "x"}]}]
    paths = {
        "messages": write(tmp_path / "messages.json", messages),
        "request": write(tmp_path / "request.json", {"model": "claude-sonnet-4-5", "max_tokens": 1024,
                                                     "system": "You help.", "messages": messages}),
    }
    for name in ("ctxtui_session.jsonl", "claude_code_session.jsonl", "proxy_recording.jsonl"):
        paths[name] = FIXTURES / "engines" / name
    return paths


def tool_pairs(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """How many tool_use and tool_result blocks the history holds."""
    blocks = [block for message in messages for block in message["content"]]
    return (sum(block["type"] == "tool_use" for block in blocks),
            sum(block["type"] == "tool_result" for block in blocks))


def assert_valid(trajectory: Trajectory) -> None:
    """The history is one the Messages API takes: user and assistant alternate, every block is a dict
    of a known type with string text, and each tool_use is answered exactly once, first thing in the
    next user message (only the last assistant message may leave calls open)."""
    messages = trajectory.messages
    assert messages, "an empty history"
    for index, message in enumerate(messages):
        assert message["role"] in ("user", "assistant")
        if index:
            assert message["role"] != messages[index - 1]["role"], f"two {message['role']} messages in a row"
        assert isinstance(message["content"], list) and message["content"]
        for block in message["content"]:
            assert block["type"] in ("text", "tool_use", "tool_result")
            if block["type"] == "text":
                assert isinstance(block["text"], str)
            if block["type"] == "tool_use":
                assert isinstance(block["id"], str) and isinstance(block["name"], str)
                assert isinstance(block["input"], dict)
            if block["type"] == "tool_result":
                assert isinstance(block["content"], str)
        if message["role"] != "assistant":
            kinds = [block["type"] == "tool_result" for block in message["content"]]
            assert kinds == sorted(kinds, reverse=True), f"message {index}: a tool_result after text"
            continue
        uses = [block["id"] for block in message["content"] if block["type"] == "tool_use"]
        assert len(uses) == len(set(uses)), "a tool_use id repeated"
        if index + 1 == len(messages):
            continue
        answers = [block["tool_use_id"] for block in messages[index + 1]["content"]
                   if block["type"] == "tool_result"]
        assert sorted(answers) == sorted(uses), f"message {index}: calls {uses} answered by {answers}"
    assert len(trajectory.times) == trajectory.calls


def read_as(path: Path, kind: str) -> Trajectory:
    """The file read as a trajectory of `kind` (its reader claimed it) with a valid history."""
    trajectory = read_trajectory(path)
    assert trajectory is not None and trajectory.format == kind, path
    assert_valid(trajectory)
    return trajectory
