"""`inspect --compare` and `ctxtui replay` do work linear in what the calls send (issue: 3x the calls
took 6x the time, every request re-serialised and re-priced whole). Measured as the characters the
JSON encoder writes, not as time: the same for the same input on any machine."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import core.history.sizes as sizes
from core.config import Settings
from core.engines.compare import compare
from core.engines.sources import recorded_calls


def session(calls: int) -> list[dict[str, Any]]:
    """A history of `calls` tool calls, each answered with ~1.5k characters."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the bug in app.py"}]
    for number in range(calls):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {number}"},
            {"type": "tool_use", "id": f"toolu_{number}", "name": "bash", "input": {"command": f"cat f{number}.py"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": f"line {number} of output\n" * 80}]})
    messages.append({"role": "assistant", "content": "done"})
    return messages


@pytest.fixture
def encoded() -> Iterator[list[int]]:
    """The characters the project's JSON encoder writes while the test runs."""
    sizes.dumps("start")  # make this thread's encoder
    encode = sizes._local.encode
    total = [0]

    def counting(value: Any, level: int) -> list[str]:
        parts = list(encode(value, level))
        total[0] += sum(map(len, parts))
        return parts

    sizes._local.encode = counting
    yield total
    sizes._local.encode = encode


def written(tmp_path: Path, calls: int, total: list[int]) -> int:
    path = tmp_path / f"s{calls}.json"
    path.write_text(json.dumps(session(calls)))
    recorded = recorded_calls(path)
    before = total[0]
    asyncio.run(compare(recorded, Settings(offline=True, workdir=tmp_path)))
    return total[0] - before


def test_three_times_the_calls_is_about_three_times_the_work(tmp_path: Path, encoded: list[int]) -> None:
    small = written(tmp_path, 60, encoded)
    large = written(tmp_path, 180, encoded)
    # linear work grows ~3x (a little more: the pipeline's steps fire more often); re-serialising every
    # request whole grew 8.2x here (33 M characters for 60 calls against 1.4 M now)
    assert large / small < 4.0, (small, large)
    history_chars = len(json.dumps(session(180)))
    assert large < 40 * history_chars  # four engines, each message written a bounded number of times
