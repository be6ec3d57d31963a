"""Thinking as the API has it, over the real SDK and the loopback fake: requests carry `thinking` as the
SDK's types define it (where the Models API says the model accepts it), signed thinking blocks come
back verbatim, thinking tokens are counted, a request whose blocks ctxtui's state made invalid is not
sent, and a reply cut at the context window is said in one line. Summary calls are priced too."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from core.events import AgentEvent, ContextSampled, ErrorEvent, Notice, TurnFinished
from core.history import breakdown, pairing_problems
from core.history.thinking import thinking_positions
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import FakeAnthropicServer, MessageReply, text_reply, tool_reply
from tests.support.permission import run

MODEL = "claude-sonnet-5-5"


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    anthropic_env.models[MODEL] = 1_000_000
    anthropic_env.thinking[MODEL] = ("adaptive", "disabled")
    async with sdk_agents(tmp_path, defaults={"model": MODEL}) as make:
        yield make


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def streamed(server: FakeAnthropicServer) -> list[dict[str, Any]]:
    return [body for body in server.message_requests() if body.get("stream") is True]


def thinking_reply(thought: str, *then: dict[str, Any], stop: str = "end_turn") -> MessageReply:
    return MessageReply([{"type": "thinking", "thinking": thought}, *then], stop_reason=stop)


async def test_thinking_round_trips_verbatim_with_its_signature(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    anthropic_env.script(
        MessageReply([{"type": "redacted_thinking", "seed": "r1"},
                      {"type": "thinking", "thinking": "I should read the file first."},
                      {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.txt"}}],
                     stop_reason="tool_use"),
        thinking_reply("It says alpha.", {"type": "text", "text": "It says alpha."}),
    )
    agent = build()
    events = await run(agent, "what is in a.txt?")
    assert of(events, TurnFinished)[0].error is None
    first, second = streamed(anthropic_env)
    assert first["thinking"] == second["thinking"] == {"type": "adaptive"}  # ThinkingConfigAdaptiveParam
    blocks = [block for _, _, block in thinking_positions(agent.messages)]
    assert [block["type"] for block in blocks] == ["redacted_thinking", "thinking", "thinking"]
    assert blocks[1]["signature"] == anthropic_env.signer.signature(MODEL, "I should read the file first.")
    assert blocks[0]["data"] == anthropic_env.signer.redacted(MODEL, "r1")
    # sent back exactly as received (the fake checked every signature and answered)
    assert second["messages"][1] == agent.messages[1]
    assert agent.timeline[0].thinking_tokens and agent.timeline[1].thinking_tokens
    figures = breakdown(agent.messages)
    assert figures["thinking"] == sum(len(json.dumps(value, ensure_ascii=False))
                                      for block in blocks for key, value in block.items() if key != "type")


async def test_thinking_off_is_sent_as_disabled_and_a_model_that_says_nothing_gets_its_default(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(thinking_reply("hidden", {"type": "text", "text": "plain"}), text_reply("x"))
    agent = build(thinking="off")
    await run(agent, "hello")
    assert streamed(anthropic_env)[0]["thinking"] == {"type": "disabled"}  # ThinkingConfigDisabledParam
    assert not list(thinking_positions(agent.messages))  # the fake thinks only when asked to
    del anthropic_env.thinking[MODEL]  # a Models API object without capabilities: thinking is not sent
    other = build()
    await run(other, "hello")
    assert "thinking" not in streamed(anthropic_env)[1]


async def test_a_changed_thinking_block_is_refused_by_the_api_as_documented(
    anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(thinking_reply("step one", {"type": "text", "text": "ok"}))
    client = anthropic.AsyncAnthropic(base_url=anthropic_env.base_url, api_key="x", max_retries=0)
    try:
        reply = await client.messages.create(model=MODEL, max_tokens=100, thinking={"type": "adaptive"},
                                             messages=[{"role": "user", "content": "hi"}])
        block = reply.content[0].model_dump()

        def replay(thought: dict[str, Any]) -> Any:
            return [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [thought]},
                    {"role": "user", "content": "and?"}]

        for changed in ({**block, "thinking": "step two"}, {**block, "signature": block["signature"][:-4] + "AAAA"}):
            with pytest.raises(anthropic.BadRequestError, match=r"messages\.1\.content\.0: Invalid `signature`"):
                await client.messages.create(model=MODEL, max_tokens=100, messages=replay(changed))
        with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):  # bound to its model
            await client.messages.create(model="claude-opus-5-5", max_tokens=100, messages=replay(block))
    finally:
        await client.close()


async def test_a_request_replaying_a_block_it_would_be_refused_for_is_not_sent(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    anthropic_env.script(thinking_reply("first thought", {"type": "text", "text": "one"}), text_reply("never"))
    agent = build()
    await run(agent, "one")
    sent = len(streamed(anthropic_env))
    assistant = agent.messages[1]
    edited = {**assistant, "content": [{**assistant["content"][0], "thinking": "a rewritten thought"},
                                       *assistant["content"][1:]]}
    agent.conversation.replace([agent.messages[0], edited], "a bad edit")
    events = await run(agent, "two")
    (error,) = of(events, ErrorEvent)
    assert error.kind == "thinking" and "\n" not in error.message
    assert error.message.startswith("not sent: messages.1.content.0 is a thinking block changed")
    assert "/new" in error.message
    assert len(streamed(anthropic_env)) == sent  # nothing went out
    assert not pairing_problems(agent.messages)


async def test_a_session_resumed_with_another_model_does_not_send_its_thinking(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    anthropic_env.script(thinking_reply("by sonnet", {"type": "text", "text": "one"}))
    first = build()
    await run(first, "one")
    await first.aclose()
    anthropic_env.models["claude-opus-5-5"] = 1_000_000
    anthropic_env.thinking["claude-opus-5-5"] = ("adaptive",)
    resumed = build(model="claude-opus-5-5", resume=True)
    events = await run(resumed, "two")
    (error,) = of(events, ErrorEvent)
    assert f"written by {MODEL}" in error.message and "claude-opus-5-5" in error.message
    assert len(streamed(anthropic_env)) == 1


async def test_a_reply_cut_at_the_context_window_is_one_line_and_its_calls_are_not_run(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    anthropic_env.script(tool_reply([("toolu_a", "read_file", {"path": "a.txt"})], text="Reading"))
    anthropic_env._queue[-1].stop_reason = "model_context_window_exceeded"  # type: ignore[union-attr]
    agent = build()
    events = await run(agent, "read a.txt")
    warnings = [n for n in of(events, Notice) if n.kind == "warning"]
    assert len(warnings) == 1 and "model_context_window_exceeded" in warnings[0].message
    assert "\n" not in warnings[0].message
    result = agent.messages[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_a" and result["is_error"] and "not run" in result["content"]
    assert len(streamed(anthropic_env)) == 1 and not pairing_problems(agent.messages)
    assert of(events, TurnFinished)[0].error is None


async def test_summary_calls_are_sampled_and_priced_into_the_session_cost(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(text_reply("one"), text_reply("A factual summary of the work so far."))
    agent = build(thinking="off")
    await run(agent, "background " * 200)
    events = [event async for event in agent.compact()]
    sampled = of(events, ContextSampled)
    assert len(sampled) == 1 and sampled[0].sample.kind == "summary"
    summary = sampled[0].sample
    assert summary.cost and summary.input_tokens and summary.output_tokens
    assert sampled[0].session_cost == pytest.approx((agent.timeline[0].cost or 0) + summary.cost)
    assert [sample.kind for sample in agent.timeline] == ["turn", "summary"]
