"""The server engines end to end: the agent on the real SDK against the loopback fake's model of the
API's context management (tests/support/fake_context.py): valid requests per engine, every server
step shown (events, ledger, timeline), compaction blocks round-tripped over 30+ calls and a resume,
a failed block kept, and nothing of ours allowed to change a signed block."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.compaction.steering import SignedBlockError
from core.config import Settings
from core.events import CompactionStep, ErrorEvent, Notice, TurnFinished
from core.history import pairing_problems
from core.history.blocks import compaction_blocks
from tests.support.fake_context import CLEARED, failed_block
from tests.support.fakeapi import FakeAnthropicServer, MessageReply, prompt_too_long, text_reply, tool_reply
from tests.support.permission import run

Build = Callable[..., Agent]


def settings_for(workdir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"workdir": workdir, "model": "claude-test", "max_retries": 0, "request_timeout": 5.0,
                              "compaction": CompactionSettings(), "yes": True}
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    agents: list[Agent] = []

    def make(**overrides: Any) -> Agent:
        agent = Agent.from_settings(settings_for(tmp_path, **overrides), allow_all=True)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()


def files(workdir: Path, count: int, chars: int) -> list[str]:
    names = []
    for number in range(count):
        name = f"f{number:02d}.txt"
        (workdir / name).write_text("".join(f"{name} line {i:05d} ".ljust(99, "x") + "\n"
                                            for i in range(chars // 100)), encoding="utf-8")
        names.append(name)
    return names


def reads(names: list[str]) -> list[Any]:
    return [tool_reply([(f"toolu_{number:03d}", "read_file", {"path": name})]) for number, name in enumerate(names)]


def steps(events: list[Any], name: str) -> list[CompactionStep]:
    return [event for event in events if isinstance(event, CompactionStep) and event.step == name]


async def test_server_clear_requests_and_steps(build: Build, anthropic_env: FakeAnthropicServer,
                                               tmp_path: Path) -> None:
    names = files(tmp_path, 6, 8_000)
    anthropic_env.script(*reads(names), text_reply("done"))
    agent = build(engine="server-clear", clear_trigger_tokens=5_000, clear_keep_tool_uses=2,
                  clear_exclude_tools="glob", compaction=CompactionSettings(context_char_limit=20_000))
    events = await run(agent, "read them all")
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    bodies = [request for request in anthropic_env.requests if request.path.startswith("/v1/messages?")
              or request.path == "/v1/messages"]
    for request in bodies:
        assert request.headers.get("anthropic-beta") == "context-management-2025-06-27"
        assert request.body["context_management"] == {"edits": [{
            "type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 5_000},
            "keep": {"type": "tool_uses", "value": 2}, "exclude_tools": ["glob"]}]}
    cleared = steps(events, "server:clear_tool_uses_20250919")
    assert cleared, "the API cleared results and ctxtui did not show it"
    # the client ran tool_result_budget only: over its 20,000-char limit nothing of it fired
    assert not [event for event in events if isinstance(event, CompactionStep) and not event.step.startswith("server:")]
    last = cleared[-1]
    assert last.cleared == tuple(f"toolu_{number:03d}" for number in range(len(last.cleared)))
    assert len(last.cleared) == len(names) - 2  # all but the newest two
    entries = [entry for entry in agent.ledger if entry.step == "server:clear_tool_uses_20250919"]
    assert sorted(entry.tool_use_id or "" for entry in entries) == list(last.cleared)  # each result once
    assert all(entry.path is not None and entry.tokens for entry in entries)
    marked = [sample for sample in agent.timeline if "server:clear_tool_uses_20250919" in sample.steps]
    assert len(marked) == len(cleared)
    # the local history keeps every result whole: the server edits only what the model reads
    assert not any(CLEARED in str(message) for message in agent.messages)


async def test_server_compact_round_trip_over_thirty_calls_and_a_resume(
        build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path) -> None:
    names = files(tmp_path, 32, 20_000)
    anthropic_env.script(*reads(names), text_reply("all read"))
    agent = build(engine="server-compact", compact_trigger_tokens=50_000, compact_instructions="keep paths")
    events = await run(agent, "read every file")
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    compacted = steps(events, "server:compact_20260112")
    assert len(compacted) >= 3 and anthropic_env.context.compactions == len(compacted)
    blocks = [block for _, _, block in compaction_blocks(agent.messages)]
    assert len(blocks) == len(compacted)
    assert [block["content"] for block in blocks] == anthropic_env.context.summaries  # verbatim
    bodies = anthropic_env.message_requests()
    assert len(bodies) == 33
    for body in bodies:
        assert body["context_management"] == {"edits": [{"type": "compact_20260112", "instructions": "keep paths",
                                                         "trigger": {"type": "input_tokens", "value": 50_000}}]}
    # each block goes back in place, byte for byte, in every later request
    last = bodies[-1]["messages"]
    assert [block for _, _, block in compaction_blocks(last)] == blocks
    assert all(entry.kind == "messages" for entry in agent.ledger if entry.step == "server:compact_20260112")
    assert pairing_problems(agent.messages) == []
    await agent.aclose()

    resumed = build(engine="server-compact", compact_trigger_tokens=50_000, compact_instructions="keep paths",
                    resume=True)
    anthropic_env.script(text_reply("still here"))
    events = await run(resumed, "and now?")
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None, events
    sent = anthropic_env.message_requests()[-1]["messages"]
    assert [block for _, _, block in compaction_blocks(sent)] == blocks


async def test_a_failed_compaction_is_kept_and_shown(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(MessageReply([failed_block(), {"type": "text", "text": "carrying on"}]),
                         text_reply("next"))
    agent = build(engine="server-compact")
    events = await run(agent, "hello")
    [step] = steps(events, "server:compact_20260112")
    assert "failed (null content)" in step.detail and step.ledger == ()
    kept = [block for _, _, block in compaction_blocks(agent.messages)]
    # as the SDK gives it back (a null encrypted_content is absent), with its null content and signature
    assert kept == [{key: value for key, value in failed_block().items() if key != "encrypted_content"}]
    events = await run(agent, "again")
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    assert [block for _, _, block in compaction_blocks(anthropic_env.message_requests()[-1]["messages"])] == kept


async def test_nothing_of_ours_changes_a_signed_block(build: Build, anthropic_env: FakeAnthropicServer,
                                                      tmp_path: Path) -> None:
    names = files(tmp_path, 1, 1_000)
    anthropic_env.script(MessageReply([failed_block(), {"type": "text", "text": "ok"}]), *reads(names),
                         text_reply("read"), prompt_too_long())
    agent = build(engine="server-compact")
    await run(agent, "start")
    await run(agent, "read it")
    before = list(agent.messages)
    with pytest.raises(SignedBlockError, match="compaction block the server signed"):
        agent.conversation.replace(agent.messages[2:], "drop")
    # the API refuses the context: reactive compaction would summarise the block away, and is refused
    events = await run(agent, "more")
    errors = [event.message for event in events if isinstance(event, ErrorEvent)]
    assert any("compaction block the server signed" in message and "\n" not in message for message in errors)
    assert list(agent.messages[: len(before)]) == before


async def test_a_tampered_block_is_refused_like_the_api(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(MessageReply([failed_block(), {"type": "text", "text": "ok"}]))
    agent = build(engine="server-compact")
    await run(agent, "start")
    agent.messages[1]["content"][0]["content"] = "forged"  # behind ctxtui's back
    events = await run(agent, "next")
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.error is not None
    assert "Invalid `signature` in `compaction` block" in finished.error


async def test_offline_a_server_engine_says_the_client_pipeline_runs(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agent = Agent.from_settings(settings_for(tmp_path, engine="server-clear"))
    try:
        events = await run(agent, "help")
    finally:
        await agent.aclose()
    assert any(isinstance(event, Notice) and "server-clear needs the API" in event.message for event in events)


@pytest.mark.slow
def test_headless_stream_json_carries_the_server_steps(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    from tests.support.cli import api_env, ctxtui

    names = files(tmp_path, 5, 8_000)
    fake_api.script(*reads(names), text_reply("done"))
    done = ctxtui("-p", "read them", "--output-format", "stream-json", "--workdir", str(tmp_path), "--model",
                  "claude-test", "--set", "engine=server-clear", "--set", "clear_trigger_tokens=4000",
                  "--set", "clear_keep_tool_uses=1", env={**api_env(fake_api), "XDG_CONFIG_HOME": str(tmp_path)},
                  timeout=60)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    server = [record for record in records if record.get("type") == "compaction"
              and record["step"] == "server:clear_tool_uses_20250919"]
    assert server and server[-1]["cleared"] == [f"toolu_{number:03d}" for number in range(4)]
    assert server[-1]["saved_tokens"] > 0 and server[-1]["detail"].startswith("the API cleared 4 tool results")
