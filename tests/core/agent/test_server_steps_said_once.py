"""What the API clears is said once (issue 30, item 21): under server-clear the API clears the same old
results again on every later call; a call that clears nothing new is no step (no chat line, no
"0 new" every turn), while a call that clears more is one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import CompactionStep, TurnFinished
from tests.support.fakeapi import FakeAnthropicServer, text_reply, tool_reply
from tests.support.permission import run

CLEAR = "server:clear_tool_uses_20250919"
Build = Callable[..., Agent]


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    agents: list[Agent] = []
    for number in range(5):
        (tmp_path / f"f{number}.txt").write_text(f"f{number} a line of the file\n" * 300, encoding="utf-8")

    def make(**overrides: Any) -> Agent:
        values: dict[str, Any] = {"workdir": tmp_path, "model": "claude-test", "max_retries": 0,
                                  "request_timeout": 5.0, "compaction": CompactionSettings(), "yes": True}
        values.update(overrides)
        agent = Agent.from_settings(Settings(**values), allow_all=True)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()


def cleared(events: list[Any]) -> list[CompactionStep]:
    return [event for event in events if isinstance(event, CompactionStep) and event.step == CLEAR]


async def test_a_call_that_clears_nothing_new_is_no_step(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    agent = build(engine="server-clear", clear_trigger_tokens=3_000, clear_keep_tool_uses=1)
    anthropic_env.script(*[tool_reply([(f"toolu_{n}", "read_file", {"path": f"f{n}.txt"})]) for n in range(5)],
                         text_reply("read them"))
    first = await run(agent, "read every file")
    assert isinstance(first[-1], TurnFinished) and first[-1].error is None
    steps = cleared(first)
    assert steps and all(step.ledger for step in steps)  # each call that cleared more: one step
    calls = len(agent.timeline)
    for reply in ("fine", "and again"):
        anthropic_env.script(text_reply(reply))
        later = await run(agent, "thanks")
        assert isinstance(later[-1], TurnFinished) and later[-1].error is None
        assert cleared(later) == [], [step.detail for step in cleared(later)]  # the same four, cleared again
    assert not any(CLEAR in sample.steps for sample in agent.timeline[calls:])
    entries = [entry for entry in agent.ledger if entry.step == CLEAR]
    assert sorted(entry.tool_use_id or "" for entry in entries) == [f"toolu_{n}" for n in range(4)]
