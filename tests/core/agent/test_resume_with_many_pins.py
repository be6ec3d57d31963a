"""Resuming a session with many pins takes them over in one pass.

Work is counted, not timed: every access to a message of the history by index during the resume.
Twice the history with twice the pins may cost about twice as much, not four times (one lookup
per pin over the whole history was pins x messages).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.config import Settings
from core.history.messages import user_pin_key
from core.history.store import History

Message = dict[str, Any]

pytestmark = pytest.mark.usefixtures("no_api_key")


def session_with_pins(folder: Path, pairs: int) -> tuple[Path, set[str]]:
    """A session of `pairs` read calls (each after a user request), every result and request pinned."""
    messages: list[Message] = []
    pins: set[str] = set()
    for number in range(pairs):
        request: Message = {"role": "user", "content": f"read file {number}"}
        tool_id = f"toolu_{number:06d}"
        messages += [request,
                     {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "read_file",
                                                        "input": {"path": f"f{number}.txt"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                   "content": f"contents {number}"}]},
                     {"role": "assistant", "content": [{"type": "text", "text": f"read {number}"}]}]
        key = user_pin_key(request)
        assert key is not None
        pins |= {tool_id, key}
    records = [{"type": "meta", "created": 1.0}, {"type": "replace", "reason": "resume", "messages": messages},
               {"type": "pins", "ids": sorted(pins)}]
    path = folder / "sessions" / f"session_{pairs:06d}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path, pins


def counting_indexing(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Count every `history[index]` on any History from now on; returns the reader of the count."""
    calls = [0]
    original = list.__getitem__

    def getitem(self: History, index: Any) -> Any:
        calls[0] += 1
        return original(self, index)

    monkeypatch.setattr(History, "__getitem__", getitem, raising=False)
    return lambda: calls[0]


async def resume_cost(tmp_path: Path, pairs: int, monkeypatch: pytest.MonkeyPatch) -> int:
    workdir = tmp_path / f"w{pairs}"
    workdir.mkdir()
    path, pins = session_with_pins(workdir / ".ctxtui", pairs)
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True))
    with monkeypatch.context() as patch:
        count = counting_indexing(patch)
        await agent.resume(path)
        cost = count()
    assert agent.pinned == pins
    await agent.aclose()
    return cost


async def test_resuming_with_many_pins_costs_linear_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = await resume_cost(tmp_path, 250, monkeypatch)
    large = await resume_cost(tmp_path, 500, monkeypatch)

    assert small > 0
    assert large <= 2.5 * small, (small, large)
