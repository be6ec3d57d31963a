"""Pins, preview, the reviewed summary and standing summary instructions, on a real offline agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.compaction.steering import SteeringError
from core.config import Settings
from core.events import CompactionStep
from core.history import pairing_problems
from core.markers import parse_marker
from core.model.offline import OfflineModel
from core.sessions.log import SessionLog

Message = dict[str, Any]


pytestmark = pytest.mark.usefixtures("no_api_key")


def make(made: list[Agent], workdir: Path, resume: bool = False, instructions: str = "", **compaction: Any) -> Agent:
    for number in range(1, 9):
        (workdir / f"file{number}.txt").write_text(f"file {number} line\n" * 300, encoding="utf-8")
    settings = Settings(workdir=workdir, offline=True, resume=resume, summary_instructions=instructions,
                        compaction=CompactionSettings(**compaction))
    agent = Agent.from_settings(settings)
    made.append(agent)
    return agent


def tree_of(folder: Path) -> list[str]:
    return sorted(str(path) for path in folder.rglob("*"))


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


async def test_a_pinned_result_survives_compaction_and_is_saved_with_the_session(
    made: list[Agent], tmp_path: Path
) -> None:
    agent = make(made, tmp_path, context_char_limit=9_000)
    await run(agent, "read file1.txt")
    (pinned, text), = results(agent.messages).items()
    notice = await agent.pin(pinned)
    assert agent.pinned == frozenset({pinned}) and notice.kind == "info" and pinned in notice.message
    for number in range(2, 6):
        await run(agent, f"read file{number}.txt")
    assert results(agent.messages)[pinned] == text  # micro and fit went past it
    others = [content for key, content in results(agent.messages).items() if key != pinned]
    assert any(parse_marker(content) is not None for content in others)
    [event async for event in agent.compact("the files")]
    assert results(agent.messages)[pinned] == text  # carried after the summary
    assert pairing_problems(agent.messages) == []
    await agent.session.flush()  # type: ignore[union-attr]
    resumed = make(made, tmp_path, resume=True, context_char_limit=9_000)
    assert resumed.pinned == frozenset({pinned})
    await resumed.unpin(pinned)
    assert resumed.pinned == frozenset()
    await resumed.session.flush()  # type: ignore[union-attr]
    assert SessionLog.replay(resumed.session.path).pins == []  # type: ignore[union-attr]


async def test_pin_refuses_unknown_ids_and_warns_when_pins_alone_exceed_the_limit(
    made: list[Agent], tmp_path: Path
) -> None:
    agent = make(made, tmp_path, context_char_limit=3_000)
    agent.auto_compact = False
    await run(agent, "read file1.txt")
    await run(agent, "read file2.txt")
    with pytest.raises(SteeringError, match="no tool result"):
        await agent.pin("toolu_nope")
    with pytest.raises(SteeringError, match="not pinned"):
        await agent.unpin("toolu_nope")
    ids = list(results(agent.messages))
    first = await agent.pin(ids[0])
    assert first.kind == "warning" and "unpin" in first.message  # one 3,600-char result > 3,000
    agent.auto_compact = True
    events = await run(agent, "read file3.txt")  # the pipeline goes on: no loop, no failure
    assert any(isinstance(event, CompactionStep) for event in events)
    assert results(agent.messages)[ids[0]] == "file 1 line\n" * 300
    assert pairing_problems(agent.messages) == []


async def test_preview_predicts_the_steps_prepare_takes(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path, context_char_limit=9_000)
    for number in range(1, 3):
        await run(agent, f"read file{number}.txt")
    agent.auto_compact = False
    await run(agent, "read file3.txt")
    await run(agent, "read file4.txt")
    before = json.dumps(agent.messages)
    files = tree_of(tmp_path)
    predicted = await agent.preview()
    assert json.dumps(agent.messages) == before and tree_of(tmp_path) == files
    assert predicted and all(step.step != "compact_history" for step in predicted)
    agent.auto_compact = True
    taken = [event async for event in agent.compactor.prepare_events(agent.messages, agent.conversation.request)
             if isinstance(event, CompactionStep)]
    assert taken
    assert [(s.step, s.chars_before, s.chars_after, s.messages_affected, s.files_written) for s in taken] == [
        (s.step, s.chars_before, s.chars_after, s.messages_affected, s.files_written) for s in predicted]


async def test_a_reviewed_summary_goes_in_exactly_and_a_draft_changes_nothing(
    made: list[Agent], tmp_path: Path
) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    before = json.dumps(agent.messages)
    draft = await agent.draft_summary("the file")
    assert draft.strip() and json.dumps(agent.messages) == before
    edited = draft + "\nEdited by hand: keep file1 line counts."
    [event async for event in agent.compact("the file", summary=edited)]
    assert len(agent.messages) == 1
    marker = parse_marker(agent.messages[0]["content"])
    assert marker is not None and marker.summary == edited
    assert await agent.undo_compaction()
    assert json.dumps(agent.messages) == before
    warning = await agent.recompact_warning()
    assert warning is None  # far under the limit: nothing would compact again


async def test_an_undo_that_would_compact_again_says_so(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path, context_char_limit=9_000)
    for number in range(1, 4):
        await run(agent, f"read file{number}.txt")
    assert agent.compactions
    assert await agent.undo_compaction()
    warning = await agent.recompact_warning()
    assert warning is not None and warning.kind == "warning" and "pause" in warning.message
    agent.auto_compact = False
    assert await agent.recompact_warning() is None


async def test_standing_summary_instructions_reach_every_summary(
    made: list[Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str | None] = []
    original = OfflineModel.summarize

    async def spy(self: OfflineModel, text: str, focus: str | None) -> str:
        seen.append(focus)
        return await original(self, text, focus)

    monkeypatch.setattr(OfflineModel, "summarize", spy)
    agent = make(made, tmp_path, instructions="always keep the failing test names")
    await run(agent, "read file1.txt")
    await agent.draft_summary("the parser")
    [event async for event in agent.compact(None)]
    assert len(seen) == 2
    assert "the parser" in (seen[0] or "")
    assert all("always keep the failing test names" in (focus or "") for focus in seen)


async def test_the_pause_is_a_setting(made: list[Agent], tmp_path: Path) -> None:
    from core.config import apply_config, resolve_config

    config = resolve_config(environ={"CTXTUI_AUTO_COMPACT": "false"}, path=tmp_path / "none.toml")
    assert apply_config(Settings(workdir=tmp_path), config).auto_compact is False
    assert config.source("auto_compact") == "env CTXTUI_AUTO_COMPACT"
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, auto_compact=False))
    made.append(agent)
    assert agent.auto_compact is False
