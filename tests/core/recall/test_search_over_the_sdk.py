"""search_context through the real anthropic SDK and the loopback Messages API (DESIGN.md, "Recall"):
a scripted model reads a file holding a unique token, the session is compacted three times, then a
scripted search_context call for the token answers with the archived transcript that holds it, which the
next request carries as the call's tool_result; `Agent.search` finds the same file."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.events import CompactionStep, ToolCallFinished
from core.markers import parse_marker
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import FakeAnthropicServer, text_reply, tool_reply
from tests.support.permission import run

TOKEN = "ZEBRA-7731-QUASAR"


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    lines = [f"config line {number}: nothing to see" for number in range(1, 60)]
    lines[41] = f"deploy_key = {TOKEN}  # the one the person asked about"
    (tmp_path / "settings.ini").write_text("\n".join(lines) + "\n")
    async with sdk_agents(tmp_path, defaults={"compaction": CompactionSettings()}) as make:
        yield make


def last_request(server: FakeAnthropicServer) -> list[dict[str, Any]]:
    """The messages of the newest turn request (a summary call sends no tools)."""
    return [body for body in server.message_requests() if body.get("tools")][-1]["messages"]


async def compact(agent: Agent) -> list[CompactionStep]:
    return [event async for event in agent.compact() if isinstance(event, CompactionStep)]


async def test_a_token_read_three_compactions_ago_is_found(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(
        tool_reply([("toolu_read", "read_file", {"path": "settings.ini"})]),
        text_reply("I read the settings."),
        text_reply("SUMMARY one: the settings file was read."),
        text_reply("Done with the second task."),
        text_reply("SUMMARY two: two tasks done."),
        text_reply("Done with the third task."),
        text_reply("SUMMARY three: three tasks done."),
    )
    agent = build()
    await run(agent, "read settings.ini")
    transcripts = []
    for request in ("", "the second task", "the third task"):
        if request:
            await run(agent, request)
        (step,) = await compact(agent)
        assert step.step == "compact_history" and step.saved > 0
        marker = parse_marker(agent.messages[0]["content"])
        assert marker is not None and marker.kind == "compacted"
        transcripts.append(marker.path)
    assert len(set(transcripts)) == 3
    assert not any(TOKEN in json.dumps(message) for message in agent.messages)  # gone from the context
    holder = transcripts[0]  # the first compaction archived the read
    assert TOKEN in (Path(agent.archive.workdir) / holder).read_text()

    anthropic_env.script(
        tool_reply([("toolu_find", "search_context", {"query": TOKEN, "limit": 3})]),
        text_reply(f"The deploy key was {TOKEN}."),
    )
    events = await run(agent, "what was the deploy key?")
    (finished,) = [event for event in events if isinstance(event, ToolCallFinished)]
    assert finished.name == "search_context" and not finished.is_error

    sent = last_request(anthropic_env)
    (result,) = [block for block in sent[-1]["content"] if block.get("type") == "tool_result"]
    assert result["tool_use_id"] == "toolu_find" and not result.get("is_error")
    answer = result["content"]
    assert answer.startswith(f'1 hit for "{TOKEN}" in the archive, best first.')
    first = answer.split("\n")[1]
    assert first.startswith(f"1. {holder} line ") and "(transcript, score" in first
    line = int(first.split(" line ")[1].split(" ")[0])
    assert TOKEN in (Path(agent.archive.workdir) / holder).read_text().split("\n")[line - 1]
    assert f"deploy_key = {TOKEN}" in answer and f'read_file(path="{holder}", offset={line})' in answer

    (hit,) = await agent.search(TOKEN)
    assert (hit.path, hit.line) == (holder, line) and TOKEN in hit.snippet and isinstance(hit.score, float)
    assert await agent.search("XYZZY-never-archived") == []
