"""Undo survives a resume: the session log says which change was a compaction, so a resumed session
(from `--resume` or the session picker) can undo the compactions of the session it continues."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.history import pairing_problems
from core.sessions.log import SessionLog

Message = dict[str, Any]


pytestmark = pytest.mark.usefixtures("no_api_key")


def make(made: list[Agent], workdir: Path, resume: bool = False, **overrides: Any) -> Agent:
    for number in range(1, 9):
        (workdir / f"file{number}.txt").write_text(f"file {number} line\n" * 300, encoding="utf-8")
    settings = Settings(workdir=workdir, offline=True, resume=resume,
                        compaction=CompactionSettings(context_char_limit=8_000), **overrides)
    agent = Agent.from_settings(settings)
    made.append(agent)
    return agent


async def run(agent: Agent, text: str) -> None:
    [event async for event in agent.run_turn(text)]


async def close(agent: Agent) -> Path:
    assert agent.session is not None
    await agent.session.flush()
    return agent.session.path


async def test_a_resumed_session_undoes_the_compactions_of_the_one_it_continues(
    made: list[Agent], tmp_path: Path
) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    await run(agent, "read file2.txt")
    [event async for event in agent.compact("the files")]
    await run(agent, "read file3.txt")  # a later turn: it stays after what undo brings back
    second_before = list(agent.messages)
    [event async for event in agent.compact(None)]
    await run(agent, "read file4.txt")
    assert len(agent.compactions) >= 2
    live = list(agent.messages)
    await close(agent)

    resumed = make(made, tmp_path, resume=True)
    assert list(resumed.messages) == live
    assert [record.steps for record in resumed.compactions] == [record.steps for record in agent.compactions]
    assert await resumed.undo_compaction()
    later = live[len(agent.compactions[-1].after):]
    assert list(resumed.messages) == [*second_before, *later]
    await close(resumed)

    # a resume of the resumed session offers the remaining undo, and not the one already undone
    again = make(made, tmp_path, resume=True)
    assert list(again.messages) == [*second_before, *later]
    assert len(again.compactions) == len(agent.compactions) - 1
    while len(again.compactions) > 1:
        assert await again.undo_compaction()
    assert await again.undo_compaction()
    oldest = list(agent.compactions[0].before)  # the history before the first compaction of all
    assert list(again.messages)[: len(oldest)] == oldest
    assert pairing_problems(list(again.messages)) == []
    assert not await again.undo_compaction()


async def test_the_session_picker_brings_back_undo_and_pins(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    tool_use_id = agent.messages[2]["content"][0]["tool_use_id"]
    await agent.pin(tool_use_id)
    before = list(agent.messages)
    [event async for event in agent.compact(None)]
    path = await close(agent)

    other = make(made, tmp_path)
    await other.resume(path)
    assert other.pinned == frozenset({tool_use_id})
    assert await other.undo_compaction()
    assert list(other.messages) == before


async def test_undo_depth_zero_writes_no_undo_records_and_a_forged_one_is_not_trusted(
    made: list[Agent], tmp_path: Path
) -> None:
    agent = make(made, tmp_path, undo_depth=0)
    await run(agent, "read file1.txt")
    [event async for event in agent.compact(None)]
    path = await close(agent)
    assert not agent.compactions
    assert '"type":"compaction"' not in path.read_text(encoding="utf-8").replace(" ", "")

    # records that only look like undo records: a compaction record the next change does not follow,
    # one of the wrong shape, and one whose "before" is no valid history
    forged = tmp_path / ".ctxtui" / "sessions" / "session_29990101-000000-1-aaaaaa.jsonl"
    user = {"role": "user", "content": "hello"}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    lines = [
        {"type": "meta", "created": 0},
        {"type": "message", "message": user},
        {"type": "compaction", "reason": "prepare", "steps": ["snip_compact"], "files": []},
        {"type": "message", "message": reply},
        {"type": "compaction", "reason": "prepare", "steps": "snip_compact", "files": 3},
        {"type": "splice", "reason": "prepare", "length": 2,
         "changes": [{"start": 1, "removed": 1, "added": [reply]}]},
        {"type": "message", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t",
                                                                          "name": "bash", "input": {}}]}},
        {"type": "compaction", "reason": "prepare", "steps": ["micro_compact"], "files": []},
        {"type": "splice", "reason": "prepare", "length": 2,
         "changes": [{"start": 2, "removed": 1, "added": []}]},
    ]
    forged.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    replay = SessionLog.replay(forged, undo_depth=20)
    assert replay.messages == [user, reply]
    assert replay.compactions == []  # the one valid-looking record's "before" ends in an unanswered tool_use


async def test_the_steps_that_succeeded_before_a_failed_one_can_be_undone(
    made: list[Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.archive import ArchiveError
    from core.events import CompactionStep, ErrorEvent

    for number in range(1, 4):
        (tmp_path / f"big{number}.txt").write_text(f"big {number} line\n" * 600, encoding="utf-8")
    settings = Settings(workdir=tmp_path, offline=True, compaction=CompactionSettings(
        tool_result_batch_char_limit=5_000, large_result_char_limit=3_000, persisted_preview_chars=500,
        snip_trigger_messages=10, snip_target_messages=6))
    agent = Agent.from_settings(settings)
    made.append(agent)
    await run(agent, "read big1.txt")
    await run(agent, "read big2.txt")
    kept = len(agent.compactions)

    async def refuse(messages: Any) -> Any:
        raise ArchiveError("the disk is full")

    monkeypatch.setattr(agent.archive, "save_transcript", refuse)
    events = [event async for event in agent.run_turn("read big3.txt")]
    assert any(isinstance(event, ErrorEvent) and "disk is full" in event.message for event in events)
    fired = [event.step for event in events if isinstance(event, CompactionStep)]
    assert "tool_result_budget" in fired  # it persisted big3's result before snip failed
    assert len(agent.compactions) == kept + 1 and agent.compactions[-1].steps == ("tool_result_budget",)
    before = list(agent.compactions[-1].before)
    assert await agent.undo_compaction()
    assert list(agent.messages)[: len(before)] == before
    assert "big 3 line\n" * 600 in json.dumps(list(agent.messages), ensure_ascii=False).replace("\\n", "\n")
