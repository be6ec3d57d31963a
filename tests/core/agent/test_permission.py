"""`PermissionRequested` at the core level: the turn asks through its event stream and waits for the reply.

No Textual here: a plain consumer of `Agent.run_turn` answers the `reply` future, as the TUI's dialog
and headless `--yes` do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import (
    AgentEvent,
    HistoryChanged,
    PermissionRequested,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from core.history import estimate_chars, pairing_problems
from core.history.messages import INTERRUPTED
from core.tools import PERMISSION_DENIED

pytestmark = pytest.mark.usefixtures("no_api_key")


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    made = Agent.from_settings(Settings(workdir=tmp_path, offline=True, compaction=CompactionSettings()))
    yield made
    await made.aclose()


async def answering(agent: Agent, text: str, choice: str) -> list[AgentEvent]:
    """Run a turn, answering every permission request with `choice`."""
    events: list[AgentEvent] = []
    async for event in agent.run_turn(text):
        events.append(event)
        if isinstance(event, PermissionRequested):
            event.reply.set_result(choice)
    return events


def results(agent: Agent) -> list[dict[str, Any]]:
    return [
        block
        for message in agent.messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def assert_valid(agent: Agent) -> None:
    assert pairing_problems(agent.messages) == []
    assert agent.chars == estimate_chars(agent.messages)
    assert not agent.running


async def test_allow_once_runs_the_exact_command_and_asks_again_next_time(agent: Agent, tmp_path: Path) -> None:
    events = await answering(agent, "run echo first > one.txt", "once")
    (asked,) = [event for event in events if isinstance(event, PermissionRequested)]
    assert asked.tool == "bash" and asked.input == {"command": "echo first > one.txt"}
    # in order: the call is announced, then consent is asked, then it runs
    kinds = [type(event) for event in events]
    assert kinds.index(ToolCallStarted) < kinds.index(PermissionRequested) < kinds.index(ToolCallFinished)
    started = next(event for event in events if isinstance(event, ToolCallStarted))
    assert asked.tool_use_id == started.tool_use_id
    assert (tmp_path / "one.txt").read_text() == "first\n"

    again = await answering(agent, "run echo second > two.txt", "once")
    assert [event for event in again if isinstance(event, PermissionRequested)]
    assert (tmp_path / "two.txt").exists()
    assert_valid(agent)


async def test_allow_for_the_session_asks_once(agent: Agent, tmp_path: Path) -> None:
    first = await answering(agent, "run touch a.txt", "session")
    assert len([event for event in first if isinstance(event, PermissionRequested)]) == 1
    second = await answering(agent, "run touch b.txt", "deny")  # would deny if it asked
    assert not [event for event in second if isinstance(event, PermissionRequested)]
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()
    assert "bash" in agent.allowed_for_session
    # a new session forgets the grant
    agent.new_session()
    third = await answering(agent, "run touch c.txt", "deny")
    assert [event for event in third if isinstance(event, PermissionRequested)]
    assert not (tmp_path / "c.txt").exists()
    assert_valid(agent)


async def test_deny_answers_the_model_and_runs_nothing(agent: Agent, tmp_path: Path) -> None:
    events = await answering(agent, "run touch made.txt", "deny")
    (result,) = results(agent)
    assert result["content"] == PERMISSION_DENIED and result["is_error"] is True
    finished = [event for event in events if isinstance(event, ToolCallFinished)]
    assert finished[0].is_error and finished[0].output == PERMISSION_DENIED
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    assert not (tmp_path / "made.txt").exists()
    assert_valid(agent)


async def test_closing_the_turn_while_it_waits_denies_and_answers_interrupted(agent: Agent, tmp_path: Path) -> None:
    stream = agent.run_turn("run touch never.txt")
    asked = None
    async with contextlib.aclosing(stream):
        async for event in stream:
            if isinstance(event, PermissionRequested):
                asked = event
                break  # the consumer walks away without answering
    assert asked is not None
    assert asked.reply.done() and asked.reply.result() == "deny"
    (result,) = results(agent)
    assert result["content"] == INTERRUPTED and result["is_error"] is True
    assert not (tmp_path / "never.txt").exists()
    assert_valid(agent)


async def test_cancelling_the_task_while_it_waits_denies_and_repairs(agent: Agent, tmp_path: Path) -> None:
    seen: list[AgentEvent] = []
    asked = asyncio.Event()

    async def consume() -> None:
        async for event in agent.run_turn("run touch never.txt"):
            seen.append(event)
            if isinstance(event, PermissionRequested):
                asked.set()  # and never answer: the task waits inside the turn

    task = asyncio.create_task(consume())
    await asyncio.wait_for(asked.wait(), timeout=10)
    # The turn yields PermissionRequested right before it awaits the reply: by the time this task
    # runs again, the consumer has gone back into the turn and waits there, unanswered.
    request = next(event for event in seen if isinstance(event, PermissionRequested))
    assert not task.done() and not request.reply.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert request.reply.result() == "deny"
    assert [block["content"] for block in results(agent)] == [INTERRUPTED]
    assert not (tmp_path / "never.txt").exists()
    assert_valid(agent)


async def test_allow_all_never_asks(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, yes=True))
    try:
        events = await answering(agent, "run echo preset", "deny")
        assert not [event for event in events if isinstance(event, PermissionRequested)]
        assert "preset" in results(agent)[0]["content"]
    finally:
        await agent.aclose()


async def test_history_events_carry_their_figures(agent: Agent) -> None:
    """A consumer can follow the history from the events alone, without asking the agent."""
    (Path(agent.toolbox.workspace.root) / "a.txt").write_text("alpha\n", encoding="utf-8")
    shadow: list[dict[str, Any]] = []
    async for event in agent.run_turn("read a.txt"):
        if isinstance(event, HistoryChanged):
            for change in event.changes:
                shadow[change.start : change.start + change.removed] = list(change.added)
            assert event.length == len(shadow)
            assert event.chars == estimate_chars(shadow)
    assert shadow == agent.messages
