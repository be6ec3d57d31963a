"""Steering through the real anthropic SDK and the loopback Messages API: what the next request carries."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import CompactionStep
from core.history import pairing_problems
from core.markers import parse_marker
from tests.support.fakeapi import FakeAnthropicServer, prompt_too_long, text_reply, tool_reply
from tests.support.permission import run

Build = Callable[..., Agent]


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    agents: list[Agent] = []

    def make(**compaction: Any) -> Agent:
        settings = Settings(workdir=tmp_path, model="claude-test", max_retries=0, request_timeout=5.0,
                            compaction=CompactionSettings(**compaction))
        agent = Agent.from_settings(settings)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()


def read_reply(number: int, path: str) -> Any:
    return tool_reply([(f"toolu_read_{number}", "read_file", {"path": path})])


async def test_the_request_after_a_restore_carries_the_restored_text(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    text = "".join(f"line {number} of the big file\n" for number in range(800))
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    anthropic_env.script(read_reply(1, "big.txt"), text_reply("read it"), text_reply("now I see it again"))
    agent = build()
    await run(agent, "read big.txt")
    await agent.drop("toolu_read_1")
    placeholder = next(
        block["content"] for message in agent.messages if isinstance(message["content"], list)
        for block in message["content"] if block.get("type") == "tool_result"
    )
    marker = parse_marker(placeholder)
    assert marker is not None and marker.kind == "placeholder"
    await agent.restore(marker.path)
    await run(agent, "look again")
    sent = anthropic_env.message_requests()[-1]["messages"]
    contents = [block.get("content") for message in sent if isinstance(message["content"], list)
                for block in message["content"] if block.get("type") == "tool_result"]
    assert contents == [text]
    assert pairing_problems(sent) == []


async def test_the_request_after_a_pause_carries_the_whole_history(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    for number in range(1, 5):
        (tmp_path / f"f{number}.txt").write_text(f"file {number}\n" * 400, encoding="utf-8")
    script: list[Any] = []
    for number in range(1, 5):
        script += [read_reply(number, f"f{number}.txt"), text_reply(f"read {number}")]
    anthropic_env.script(*script)
    agent = build(context_char_limit=8_000)
    agent.auto_compact = False
    events: list[Any] = []
    for number in range(1, 5):
        events += await run(agent, f"read f{number}.txt")
    assert not [event for event in events if isinstance(event, CompactionStep)]
    sent = anthropic_env.message_requests()[-1]["messages"]
    assert sent == agent.messages[:-1]  # everything but the reply to this very request
    results = [block["content"] for message in sent if isinstance(message["content"], list)
               for block in message["content"] if block.get("type") == "tool_result"]
    assert len(results) == 4 and all(result.startswith("file ") for result in results)


async def test_reactive_compact_still_guards_when_paused(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(
        text_reply("first answer"),
        prompt_too_long(),
        text_reply("SUMMARY of the first exchange"),
        text_reply("second answer"),
    )
    agent = build()
    agent.auto_compact = False
    await run(agent, "first question: " + "background " * 300)  # what reactive compaction summarises outweighs it
    events = await run(agent, "second question")
    assert [step.step for step in events if isinstance(step, CompactionStep)] == ["reactive_compact"]
    assert events[-1].error is None and events[-1].text == "second answer"
    retried = anthropic_env.message_requests()[-1]["messages"]
    marker = parse_marker(retried[0]["content"])
    assert marker is not None and marker.kind == "reactive"
