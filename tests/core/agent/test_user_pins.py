"""Pinning a user message: every step keeps it byte-exact, in order, and the pin lives with the session.

A real offline agent on real files in a tmp dir; what is checked is the history the agent keeps
and every request the model is sent.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.archive import Archive
from core.compaction import CompactionSettings, Compactor
from core.compaction.steering import SteeringError
from core.config import Settings
from core.history import pairing_problems
from core.history.messages import user_pin_key
from core.markers import parse_marker, snip_marker
from core.model.base import ModelEvent
from core.model.offline import OfflineModel
from core.sessions.log import SessionLog

Message = dict[str, Any]
PINNED = "Never touch the migrations folder; the deploy script depends on its exact layout. 汉字 é"


pytestmark = pytest.mark.usefixtures("no_api_key")


class RecordingModel(OfflineModel):
    """The offline model, keeping a JSON copy of every request it is sent."""

    def __init__(self) -> None:
        super().__init__(chunk_delay=0)
        self.requests: list[list[Message]] = []

    async def stream(self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     max_tokens: int) -> AsyncIterator[ModelEvent]:
        self.requests.append(json.loads(json.dumps(list(messages))))
        async for event in super().stream(system=system, messages=messages, tools=tools, max_tokens=max_tokens):
            yield event


def make(made: list[Agent], workdir: Path, model: OfflineModel | None = None, resume: bool = False,
         **compaction: Any) -> Agent:
    for number in range(1, 13):
        (workdir / f"file{number}.txt").write_text(f"file {number} line\n" * 300, encoding="utf-8")
    settings = Settings(workdir=workdir, offline=True, resume=resume, compaction=CompactionSettings(**compaction))
    agent = Agent.from_settings(settings, model=model)
    made.append(agent)
    return agent


async def run(agent: Agent, text: str) -> None:
    [event async for event in agent.run_turn(text)]


def user_texts(messages: list[Message]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], str)]


def key_of(agent: Agent, text: str) -> str:
    index = next(i for i, m in enumerate(agent.messages) if m["role"] == "user" and m["content"] == text)
    key = agent.pin_key(index)
    assert key is not None and key.startswith("user:")
    return key


async def test_a_pinned_user_message_survives_snips_micro_and_a_summary_then_undo_and_resume(
    made: list[Agent], tmp_path: Path
) -> None:
    model = RecordingModel()
    agent = make(made, tmp_path, model=model, context_char_limit=8_000, snip_trigger_messages=12,
                 snip_target_messages=8)
    await run(agent, "read file11.txt")
    await run(agent, "read file12.txt")  # the pinned message is not in the head a snip keeps anyway
    await run(agent, PINNED)
    key = key_of(agent, PINNED)
    notice = await agent.pin(key)
    assert agent.pinned == frozenset({key}) and notice.kind == "info" and "Never touch" in notice.message
    sent_from = len(model.requests)
    for number in range(1, 11):
        await run(agent, f"read file{number}.txt")
    steps = [sample.steps for sample in agent.timeline]
    assert any("snip_compact" in fired for fired in steps), steps  # the message was in a snipped middle
    assert any(parse_marker(m["content"]) is not None for m in agent.messages if isinstance(m["content"], str))
    for request in model.requests[sent_from:]:
        assert PINNED in user_texts(request), "the pinned message left a request"
    assert user_texts(agent.messages).count(PINNED) == 1
    assert pairing_problems(agent.messages) == []

    before = list(agent.messages)
    [event async for event in agent.compact("the files")]
    summary_at = next(i for i, m in enumerate(agent.messages)
                      if isinstance(m["content"], str) and (found := parse_marker(m["content"])) is not None
                      and found.kind == "compacted")
    assert agent.messages[summary_at + 1:].count({"role": "user", "content": PINNED}) == 1  # after the summary
    assert pairing_problems(agent.messages) == []
    assert await agent.undo_compaction()
    assert list(agent.messages) == before

    await agent.session.flush()  # type: ignore[union-attr]
    assert key in SessionLog.replay(agent.session.path).pins  # type: ignore[union-attr]
    resumed = make(made, tmp_path, resume=True, context_char_limit=8_000)
    assert resumed.pinned == frozenset({key})
    await resumed.unpin(key)
    assert resumed.pinned == frozenset()


async def test_only_a_users_own_words_can_be_pinned(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path)
    await run(agent, "read file1.txt")
    roles = [m["role"] for m in agent.messages]
    assert roles[:3] == ["user", "assistant", "user"]
    assert agent.pin_key(0) == user_pin_key(agent.messages[0])
    tool_use_id = agent.messages[2]["content"][0]["tool_use_id"]
    assert agent.pin_key(2) == tool_use_id  # a tool result is pinned by its id
    assert agent.pin_key(1) is None  # the model's reply
    assert agent.pin_key(99) is None and agent.pin_key(-1) is None
    assert user_pin_key({"role": "user", "content": snip_marker(4, ".transcripts/t.jsonl")}) is None
    assert user_pin_key({"role": "user", "content": ""}) is None
    assert user_pin_key({"role": "user", "content": [{"type": "text", "text": "hi"}]}) is not None
    with pytest.raises(SteeringError, match="no user message"):
        await agent.pin("user:0000000000000000")
    with pytest.raises(SteeringError, match="not pinned"):
        await agent.unpin(user_pin_key(agent.messages[0]) or "")
    assert agent.pinned == frozenset()


async def test_pinned_user_messages_alone_over_the_limit_warn_instead_of_looping(
    made: list[Agent], tmp_path: Path
) -> None:
    agent = make(made, tmp_path, context_char_limit=3_000)
    agent.auto_compact = False
    big = "keep every word of this: " + "requirement " * 300
    await run(agent, big)
    notice = await agent.pin(key_of(agent, big))
    assert notice.kind == "warning" and "unpin" in notice.message
    agent.auto_compact = True
    await run(agent, "read file1.txt")  # the pipeline goes on: no loop, no failure
    assert big in user_texts(agent.messages)
    assert pairing_problems(agent.messages) == []


async def test_the_reactive_step_carries_a_pinned_user_message(tmp_path: Path) -> None:
    async def summarize(messages: list[Message], focus: str | None) -> str:
        return "summary of the work"

    compactor = Compactor(Archive(tmp_path), summarize=summarize, settings=CompactionSettings(reactive_keep_messages=2))
    history: list[Message] = [{"role": "user", "content": PINNED}, {"role": "assistant", "content": "ok"}]
    for number in range(6):
        history += [{"role": "user", "content": f"step {number}"}, {"role": "assistant", "content": "x" * 2_000}]
    key = user_pin_key(history[0])
    assert key is not None
    compactor.pinned = frozenset({key})
    result = await compactor.reactive_compact(history, "step 5")
    found = parse_marker(result[0]["content"])
    assert found is not None and found.kind == "reactive"
    assert result[1] == {"role": "user", "content": PINNED}  # carried right after the summary
    assert result[2:] == history[-2:]
    assert pairing_problems(result) == []


async def test_undo_keeps_the_newest_compactions_only_and_frees_what_left_the_history(
    made: list[Agent], tmp_path: Path
) -> None:
    for number in range(1, 13):
        (tmp_path / f"file{number}.txt").write_text(f"file {number} line\n" * 300, encoding="utf-8")
    settings = Settings(workdir=tmp_path, offline=True, undo_depth=2,
                        compaction=CompactionSettings(context_char_limit=8_000))
    agent = Agent.from_settings(settings)
    made.append(agent)
    firsts: list[list[Message]] = []
    for number in range(1, 5):
        await run(agent, f"read file{number}.txt")
        firsts.append(list(agent.messages))
        [event async for event in agent.compact(None)]
    assert len(agent.compactions) == 2
    assert await agent.undo_compaction()
    assert list(agent.messages) == firsts[3]
    later = list(agent.messages)[len(agent.compactions[0].after):]  # turn 4, after the third compaction
    assert later[0] == {"role": "user", "content": "read file4.txt"}
    assert await agent.undo_compaction()
    assert list(agent.messages) == [*firsts[2], *later]  # the later turn stays after what came back
    assert not await agent.undo_compaction()  # the two older ones were let go of
    assert list(agent.messages) == [*firsts[2], *later]


def test_undo_depth_is_a_setting_that_refuses_a_negative_value(tmp_path: Path) -> None:
    from core.config import ConfigError, resolve_config

    assert resolve_config(overrides=["undo_depth=3"], environ={}, path=tmp_path / "none.toml").top["undo_depth"] == 3
    with pytest.raises(ConfigError, match="undo_depth"):
        resolve_config(overrides=["undo_depth=-1"], environ={}, path=tmp_path / "none.toml")
