"""Steering at the core level: drop, restore, undo and pause, on a real offline agent and a real archive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.archive import Archive
from core.compaction import CompactionSettings
from core.compaction.steering import SteeringError
from core.config import Settings
from core.events import CompactionStep, Notice
from core.history import estimate_chars, pairing_problems
from core.markers import RESTORED_HEADING, parse_marker

Message = dict[str, Any]


pytestmark = pytest.mark.usefixtures("no_api_key")


def make(made: list[Agent], workdir: Path, **compaction: Any) -> Agent:
    for number in range(1, 9):
        (workdir / f"file{number}.txt").write_text(f"file {number} line\n" * 300, encoding="utf-8")
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True, compaction=CompactionSettings(**compaction)))
    made.append(agent)
    return agent


async def run(agent: Agent, text: str) -> list[Any]:
    return [event async for event in agent.run_turn(text)]


def results(messages: list[Message]) -> dict[str, Any]:
    return {
        block["tool_use_id"]: block["content"]
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


def assert_valid(agent: Agent) -> None:
    assert pairing_problems(agent.messages) == []
    assert agent.chars == estimate_chars(agent.messages)


async def test_drop_archives_the_result_and_leaves_a_placeholder(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    (tool_use_id, text), = results(agent.messages).items()
    before = [dict(message) for message in agent.messages]
    change = await agent.drop(tool_use_id)
    assert change and change.chars == agent.chars < estimate_chars(before)
    marker = parse_marker(results(agent.messages)[tool_use_id])
    assert marker is not None and marker.kind == "placeholder"
    assert await Archive(tmp_path).read_text(marker.path) == text
    with pytest.raises(SteeringError, match="already archived"):
        await agent.drop(tool_use_id)
    with pytest.raises(SteeringError, match="no tool result"):
        await agent.drop("toolu_nope")
    assert_valid(agent)


async def test_restore_puts_the_text_back_in_place_byte_exact(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    (tool_use_id, text), = results(agent.messages).items()
    await agent.drop(tool_use_id)
    marker = parse_marker(results(agent.messages)[tool_use_id])
    assert marker is not None
    await agent.restore(marker.path)
    assert results(agent.messages)[tool_use_id] == text
    assert len(agent.messages) == 4  # user, assistant (tool call), results, assistant: nothing appended
    assert_valid(agent)


async def test_restore_appends_a_labelled_message_when_the_marker_is_gone(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    (tool_use_id, text), = results(agent.messages).items()
    await agent.drop(tool_use_id)
    marker = parse_marker(results(agent.messages)[tool_use_id])
    assert marker is not None
    agent.new_session()
    await run(agent, "read file2.txt")
    await agent.restore(marker.path)
    last = agent.messages[-1]
    assert last["role"] == "user" and last["content"] == f"{RESTORED_HEADING.format(path=marker.path)}\n{text}"
    assert_valid(agent)


async def test_restore_refuses_text_larger_than_the_limit_and_forged_paths(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path, context_char_limit=2_000)
    path = await agent.archive.save_tool_result("toolu_big", "y" * 5_000)
    before = list(agent.messages)
    with pytest.raises(SteeringError, match="context limit"):
        await agent.restore(path)
    for forged in ("../../etc/passwd", "/etc/passwd", "file1.txt"):
        with pytest.raises(SteeringError, match="not a tool result in the archive"):
            await agent.restore(forged)
    assert agent.messages == before


async def test_undo_right_after_a_compact_gives_back_the_same_list(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path)
    for number in (1, 2, 3):
        await run(agent, f"read file{number}.txt")
    before = list(agent.messages)
    frozen = json.dumps(before)
    events = [event async for event in agent.compact("the files")]
    assert any(isinstance(event, CompactionStep) and event.step == "compact_history" for event in events)
    assert len(agent.messages) == 1
    assert await agent.undo_compaction()
    assert agent.messages == before and json.dumps(agent.messages) == frozen
    assert not await agent.undo_compaction()  # nothing left to undo
    assert_valid(agent)


async def test_undo_after_later_turns_keeps_them_after_the_step(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    before = list(agent.messages)
    [event async for event in agent.compact(None)]
    compacted = list(agent.messages)
    await run(agent, "read file2.txt")
    later = agent.messages[len(compacted):]
    assert later
    await agent.undo_compaction()
    assert agent.messages == [*before, *later]
    assert_valid(agent)


async def test_paused_compaction_sends_the_whole_history(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path, context_char_limit=6_000)
    agent.auto_compact = False
    events: list[Any] = []
    for number in range(1, 5):
        events += await run(agent, f"read file{number}.txt")
    assert not [event for event in events if isinstance(event, CompactionStep)]
    assert agent.chars > 6_000
    assert all(not str(content).startswith("[Earlier") for content in results(agent.messages).values())
    warnings = [event for event in events if isinstance(event, Notice) and event.kind == "warning"]
    assert warnings and "paused" in warnings[-1].message
    agent.auto_compact = True
    events = await run(agent, "read file5.txt")
    assert [event for event in events if isinstance(event, CompactionStep)]
    assert_valid(agent)
