"""Tokens, cache and cost over the real SDK and the loopback fake API.

Every test builds the agent with `Agent.from_settings` (AnthropicModel -> AsyncAnthropic -> HTTP on
127.0.0.1 -> tests/support/fakeapi.py) and checks the request bodies the fake recorded against what the agent
says it sent: the timeline, the cache breakpoints, the exact counts and their fallbacks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.events import AgentEvent, CompactionStep, ContextSampled, TextDelta, TurnFinished
from core.history import estimate_chars
from core.model.counting import estimate_request, model_window
from core.usage.timeline import describe_sample
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import (
    FakeAnthropicServer,
    MessageReply,
    PromptCache,
    estimate_tokens,
    json_reply,
    prompt_too_long,
    rate_limited,
    server_error,
    text_reply,
    tool_reply,
)
from tests.support.permission import run


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    async with sdk_agents(tmp_path) as make:
        yield make


def streamed(server: FakeAnthropicServer) -> list[dict[str, Any]]:
    return [body for body in server.message_requests() if body.get("stream") is True]


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def has_cache_control(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(has_cache_control(item) for item in value.values())
    if isinstance(value, list):
        return any(has_cache_control(item) for item in value)
    return False


def breakpoints(body: dict[str, Any]) -> int:
    """Cache breakpoints in a request: the top-level one plus every marked block."""
    def count(value: Any) -> int:
        if isinstance(value, dict):
            return ("cache_control" in value) + sum(count(item) for item in value.values())
        if isinstance(value, list):
            return sum(count(item) for item in value)
        return 0

    return ("cache_control" in body) + count(body.get("tools")) + count(body.get("system")) + count(
        body.get("messages")
    )


def write_lines(path: Path, chars: int, tag: str) -> str:
    line = f"{tag} line with some text to read\n"
    text = (line * (chars // len(line) + 1))[:chars]
    path.write_text(text)
    return text


# --------------------------------------------------------------------------- prompt caching


async def test_requests_carry_cache_control_and_the_history_is_not_touched(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    anthropic_env.script(tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]), text_reply("done"))
    agent = build()
    events = await run(agent, "read a.txt")
    assert of(events, TurnFinished)[0].error is None

    bodies = streamed(anthropic_env)
    assert len(bodies) == 2
    for body in bodies:
        # automatic: the newest message's last block; with the cache_ttl setting's TTL (default 5m)
        assert body["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
        assert not any("cache_control" in tool for tool in body["tools"][:-1])
        assert breakpoints(body) <= 4
    # what was sent is the history itself: no breakpoint was written into it
    assert not has_cache_control(agent.messages)
    assert not has_cache_control(agent.toolbox.schemas)
    assert bodies[1]["messages"] == agent.messages[:3]


async def test_usage_cache_fields_reach_the_timeline_exactly(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n" * 50)
    anthropic_env.script(tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]), text_reply("done"))
    agent = build()
    events = await run(agent, "read a.txt")
    assert of(events, TurnFinished)[0].error is None

    bodies = streamed(anthropic_env)
    replay = PromptCache()  # the fake's cache, replayed over the recorded bodies
    timeline = agent.timeline
    assert len(timeline) == len(bodies) == 2
    for sample, body in zip(timeline, bodies, strict=True):
        read, creation = replay.use(body)
        assert (sample.cache_read_tokens, sample.cache_creation_tokens) == (read, creation)
        assert sample.input_tokens == estimate_tokens(body) - read - creation
        assert sample.prompt_tokens == estimate_tokens(body)
        assert sample.output_tokens and sample.output_tokens > 0
    # the second call reads the prefix the first one wrote, and writes only what is new
    assert timeline[0].cache_read_tokens == 0 and timeline[0].cache_creation_tokens
    assert timeline[1].cache_read_tokens == timeline[0].cache_creation_tokens
    # the gauge's "API input" is the whole prompt, not only its uncached part
    assert agent.last_input_tokens == estimate_tokens(bodies[-1])


async def test_cost_per_call_and_per_session_from_the_price_table(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(
        MessageReply([{"type": "text", "text": "one"}], input_tokens=1_000, output_tokens=100,
                     cache_read_tokens=2_000, cache_creation_tokens=500),
        MessageReply([{"type": "text", "text": "two"}], input_tokens=10, output_tokens=20,
                     cache_read_tokens=3_000, cache_creation_tokens=0),
    )
    agent = build(model="claude-sonnet-5-5")  # $2 in, $10 out, $2.50 cache write, $0.10 cache read
    await run(agent, "first")
    await run(agent, "second")
    first, second = agent.timeline
    assert first.cost == pytest.approx((1_000 * 2 + 100 * 10 + 500 * 2.5 + 2_000 * 0.10) / 1e6)
    assert second.cost == pytest.approx((10 * 2 + 20 * 10 + 3_000 * 0.10) / 1e6)
    line = describe_sample(first)
    assert "3,500 tokens" in line and "cache read 2,000" in line and "cache write 500" in line
    assert f"${first.cost:.4f}" in line


async def test_an_unpriced_model_has_no_cost(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    agent = build()  # "claude-test" is in no price table
    await run(agent, "hello")
    (sample,) = agent.timeline
    assert sample.input_tokens is not None and sample.cost is None
    assert "$" not in describe_sample(sample)


# --------------------------------------------------------------------------- the timeline


async def test_timeline_has_one_sample_per_call_with_what_was_sent(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    write_lines(tmp_path / "big.txt", 150_000, "big")  # over the 30,000-char large-result limit
    (tmp_path / "small.txt").write_text("small\n")
    anthropic_env.script(
        tool_reply([("toolu_big", "read_file", {"path": "big.txt"})]),
        tool_reply([("toolu_small", "read_file", {"path": "small.txt"})]),
        text_reply("done"),
    )
    agent = build()
    events = await run(agent, "read the files")
    assert of(events, TurnFinished)[0].error is None
    events += await run(agent, "again")

    bodies = streamed(anthropic_env)
    timeline = agent.timeline
    assert len(timeline) == len(bodies) == 4
    assert [sample.call for sample in timeline] == [1, 2, 3, 4]
    for sample, body in zip(timeline, bodies, strict=True):
        assert sample.chars_after == estimate_chars(body["messages"])
        assert sample.messages == len(body["messages"])
        assert sample.error is None and sample.estimated_tokens
    # one ContextSampled per call, each after that call's text and carrying the final sample
    sampled = of(events, ContextSampled)
    assert [event.sample for event in sampled] == timeline
    # the steps that ran before each call, and what they saved
    steps_between: list[list[CompactionStep]] = [[]]
    for event in events:
        if isinstance(event, CompactionStep):
            steps_between[-1].append(event)
        elif isinstance(event, ContextSampled):
            steps_between.append([])
    for sample, steps in zip(timeline, steps_between, strict=False):
        assert sample.steps == tuple(step.step for step in steps)
        assert sample.saved == tuple(step.saved for step in steps)
    second = timeline[1]
    assert second.steps  # the huge read was cut down before call 2
    assert second.chars_before == steps_between[1][0].chars_before > second.chars_after
    assert timeline[0].chars_before == timeline[0].chars_after
    # what the step cost in cache writes shows on the call after it
    assert second.cache_creation_tokens and second.cache_creation_tokens > 0
    assert f"{second.steps[0]} -{second.saved[0]:,}" in describe_sample(second)


async def test_a_refused_call_is_a_sample_with_its_error(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(text_reply("first"), prompt_too_long(), text_reply("after reactive compact"))
    agent = build()
    await run(agent, "one: " + "background " * 300)  # long enough that a summary of it makes the request smaller
    events = await run(agent, "two")
    assert of(events, TurnFinished)[0].error is None
    bodies = streamed(anthropic_env)
    # the reactive compaction's summary call is sampled too, between the refused call and the retry
    assert [sample.kind for sample in agent.timeline] == ["turn", "turn", "summary", "turn"]
    summary = agent.timeline[2]
    assert summary.input_tokens and summary.output_tokens and summary.steps == ()
    timeline = [sample for sample in agent.timeline if sample.kind == "turn"]
    assert len(timeline) == len(bodies) == 3
    refused, retried = timeline[1], timeline[2]
    assert refused.error and "too long" in refused.error and refused.input_tokens is None
    assert retried.steps == ("reactive_compact",) and retried.error is None
    for sample, body in zip(timeline, bodies, strict=True):
        assert sample.chars_after == estimate_chars(body["messages"])


# --------------------------------------------------------------------------- exact counts


async def test_exact_count_is_taken_from_the_server_after_a_change(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    agent = build()
    await run(agent, "hello")
    first = await agent.count_next_request()
    await run(agent, "a longer second request " * 20)
    second = await agent.count_next_request()

    counts = anthropic_env.count_requests()
    assert len(counts) == 2
    assert first.exact and first.label == "exact (count_tokens)"
    assert first.tokens == estimate_tokens(counts[0])
    assert second.exact and second.tokens == estimate_tokens(counts[1]) > first.tokens
    # counted as it will be sent: the same system, tools and breakpoints, the current history
    body = counts[1]
    assert body["messages"] == agent.messages
    assert body["system"] == agent.system_prompt
    assert body["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    assert [tool["name"] for tool in body["tools"]] == [tool["name"] for tool in agent.toolbox.schemas]
    assert body["model"] == "claude-test"


async def test_count_of_a_scripted_figure(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script_count(12_345)
    agent = build()
    count = await agent.count_next_request()
    assert (count.tokens, count.source) == (12_345, "api")


async def test_a_429_on_count_tokens_falls_back_to_the_labelled_estimate(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    agent = build()
    await run(agent, "hello there")
    anthropic_env.script_count(rate_limited(retry_after_ms=5_000))
    count = await agent.count_next_request()
    assert not count.exact and count.source == "estimate"
    assert "429" in count.reason and "estimated" in count.label and "429" in count.label
    expected = estimate_request(agent.tokens, agent.system_prompt, agent.messages, agent.toolbox.schemas)
    assert count.tokens == expected
    assert len(anthropic_env.count_requests()) == 1  # no retry: the next change counts again
    # and the next count, the server answering again, is exact
    assert (await agent.count_next_request()).exact


async def test_a_failing_count_tokens_falls_back_to_the_estimate(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script_count(server_error("boom", should_retry=False))
    agent = build()
    count = await agent.count_next_request()
    assert count.source == "estimate" and "count_tokens failed" in count.reason
    assert "\n" not in count.label


BAD_COUNT_BODIES = {
    "null": {"input_tokens": None},
    "string": {"input_tokens": "12345"},
    "object": {"input_tokens": {"value": 12}},
    "list": {"input_tokens": [12]},
    "float": {"input_tokens": 12.5},
    "bool": {"input_tokens": True},
    "negative": {"input_tokens": -5},
    "zero": {"input_tokens": 0},
    "huge": {"input_tokens": 10**15},
    "beyond-int64": {"input_tokens": 2**70},
    "missing": {"type": "count"},
    "body-null": None,
    "body-list": [1, 2],
    "body-string": "12",
}


@pytest.mark.parametrize("body", BAD_COUNT_BODIES.values(), ids=BAD_COUNT_BODIES.keys())
async def test_an_implausible_count_falls_back_to_the_labelled_estimate(
    build: Build, anthropic_env: FakeAnthropicServer, body: Any
) -> None:
    agent = build()
    await run(agent, "hello there")
    anthropic_env.script_count(json_reply(body))

    count = await agent.count_next_request()

    assert (count.source, count.exact) == ("estimate", False)
    assert count.tokens == estimate_request(agent.tokens, agent.system_prompt, agent.messages, agent.toolbox.schemas)
    assert count.label.startswith("estimated (tiktoken, count_tokens ") and "\n" not in count.label
    assert (await agent.count_next_request()).exact  # the next answer, a real count, is believed again


# --------------------------------------------------------------------------- the window


async def test_window_from_the_models_api_else_the_table_else_the_setting(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.models["claude-test"] = 321_000
    window = await model_window(build().model)
    assert (window.tokens, window.source) == (321_000, "api")
    assert any(r.path == "/v1/models/claude-test" for r in anthropic_env.requests)

    table = await model_window(build(model="claude-haiku-4-5-20251001").model)  # 404 from the fake
    assert (table.tokens, table.source) == (200_000, "table")
    setting = await model_window(build(model="claude-unknown").model, setting=64_000)
    assert (setting.tokens, setting.source) == (64_000, "setting")
    unknown = await model_window(build(model="claude-unknown").model)
    assert unknown.tokens is None and unknown.label == "window unknown"


def test_request_bodies_are_plain_json(tmp_path: Path) -> None:
    """The request the model builds serialises as it is (no SDK objects slip in)."""
    from core.model.anthropic import AnthropicModel

    model = AnthropicModel("claude-test", api_key="x", base_url="http://127.0.0.1:9")
    messages = [{"role": "user", "content": "hi"}]
    tools = [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]
    request = model.request(system="sys", messages=messages, tools=tools)
    json.dumps(request)
    assert request["messages"] is messages
    assert tools == [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]
    assert request["tools"][0] is tools[0] and request["tools"][1] is not tools[1]


async def test_text_streams_before_the_sample(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(text_reply("streamed text", chunks=3))
    events = await run(build(), "hi")
    last_delta = max(i for i, event in enumerate(events) if isinstance(event, TextDelta))
    sampled = [i for i, event in enumerate(events) if isinstance(event, ContextSampled)]
    assert len(sampled) == 1 and sampled[0] > last_delta


async def test_a_newer_change_cancels_a_debounced_count(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    """The debounce sleeps first, so a count cancelled by a newer change never reaches the server."""
    import asyncio

    agent = build()
    pending = asyncio.ensure_future(agent.count_next_request(debounce=30.0))
    await asyncio.sleep(0)  # one step of the loop, not a wait: the count starts and reaches its debounce
    pending.cancel()
    newer = await agent.count_next_request(debounce=0.01)
    assert pending.cancelled() and newer.exact
    assert len(anthropic_env.count_requests()) == 1


async def test_a_cancelled_call_keeps_its_sample_marked_cancelled(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    import asyncio

    anthropic_env.script(text_reply("word " * 200, chunks=100, delay=0.05))
    agent = build()
    first_text = asyncio.Event()

    async def consume() -> None:
        async for event in agent.run_turn("a long story"):
            if isinstance(event, TextDelta):
                first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (sample,) = agent.timeline
    assert sample.error == "cancelled" and sample.input_tokens is None
    assert sample.chars_after == estimate_chars(streamed(anthropic_env)[0]["messages"])
    await run(agent, "next")  # the next call is a sample of its own, with its usage
    assert [s.call for s in agent.timeline] == [1, 2] and agent.timeline[1].input_tokens is not None
