"""A cache lost on the server's side, though nothing of ours changed the prefix, is a miss: known from the
usage (it read well below the previous request's cached prefix), not only from our clock. Over the real SDK
and the loopback fake, whose prompt cache (tests/support/fake_cache.py) can be dropped, runs on the test's
clock, and looks back 20 blocks from a breakpoint as the API does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.events import AgentEvent, CacheMiss, Notice, TurnFinished
from core.usage.timeline import describe_sample
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import FakeAnthropicServer, FakeClock, Response, text_reply, tool_reply
from tests.support.permission import run

MODEL = "claude-sonnet-5-5"


@pytest.fixture
def clock(anthropic_env: FakeAnthropicServer) -> FakeClock:
    return anthropic_env.use_clock(FakeClock())


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Build]:
    async with sdk_agents(tmp_path, defaults={"model": MODEL}, clock=clock) as make:
        yield make


def n(value: int | None) -> int:
    assert value is not None
    return value


def cached(sample: Any) -> int:
    """The prefix a call left cached: what it read and wrote."""
    return n(sample.cache_read_tokens) + n(sample.cache_creation_tokens)


def no_disagreement(events: list[AgentEvent]) -> bool:
    return not [notice for notice in events if isinstance(notice, Notice) and "diagnosis" in notice.message]


async def test_an_evicted_cache_is_a_miss_named_evicted(
    build: Build, anthropic_env: FakeAnthropicServer, clock: FakeClock
) -> None:
    anthropic_env.script(text_reply("one"), text_reply("two"), text_reply("three"))
    agent = build()
    await run(agent, "first " * 200)
    clock.advance(60)  # well inside the 5-minute TTL on every clock
    anthropic_env.prompt_cache.clear()  # the server dropped it
    events = await run(agent, "second")
    first, second = agent.timeline
    assert n(second.cache_read_tokens) < cached(first)
    assert second.cache_miss == CacheMiss("evicted", None, None, cached(first) - n(second.cache_read_tokens))
    assert second.api_miss_reason == "none" and no_disagreement(events)  # the structure did not diverge
    assert "cache miss: evicted, " in describe_sample(second)
    clock.advance(60)
    await run(agent, "third")  # the second call wrote it again: read as foreseen
    assert agent.timeline[2].cache_miss is None and n(agent.timeline[2].cache_read_tokens) >= cached(second)


async def test_a_cache_that_expired_while_the_request_was_on_its_way_is_ttl_expired(
    build: Build, anthropic_env: FakeAnthropicServer, clock: FakeClock
) -> None:
    def late(body: dict[str, Any]) -> Response:
        clock.advance(2)  # the request reaches the server 2 s after it left, past the TTL
        return text_reply("two")

    anthropic_env.script(text_reply("one"), late)
    agent = build()
    await run(agent, "first " * 200)
    clock.advance(299)  # by our clock the cache is still warm when the request goes out
    await run(agent, "second")
    first, second = agent.timeline
    assert second.cache_read_tokens == 0
    assert second.cache_miss == CacheMiss("ttl_expired", None, None, cached(first))


async def test_a_turn_that_adds_more_blocks_than_the_api_looks_back_over_is_named(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    calls = []
    for number in range(10):  # 10 calls and 10 results: 20 new blocks after the cached prefix
        (tmp_path / f"f{number}.txt").write_text(f"file {number}\n")
        calls.append((f"toolu_{number}", "read_file", {"path": f"f{number}.txt"}))
    anthropic_env.script(tool_reply(calls), text_reply("read them all"))
    agent = build()
    events = await run(agent, "read the ten files " * 40)
    assert next(event for event in events if isinstance(event, TurnFinished)).error is None
    first, second = agent.timeline
    assert n(second.cache_read_tokens) < cached(first)  # only the tools' breakpoint was found
    miss = second.cache_miss
    assert miss == CacheMiss("lookback_exceeded", None, None, cached(first) - n(second.cache_read_tokens))


async def test_the_report_counts_a_miss_the_usage_showed(
    build: Build, anthropic_env: FakeAnthropicServer, clock: FakeClock, tmp_path: Path
) -> None:
    from tests.support.cli import ctxtui

    anthropic_env.script(text_reply("one"), text_reply("two"))
    agent = build()
    await run(agent, "first " * 200)
    anthropic_env.prompt_cache.clear()
    await run(agent, "second")
    await agent.aclose()
    (session,) = (tmp_path / ".ctxtui" / "sessions").glob("*.jsonl")
    result = ctxtui("inspect", str(session), "--report", "--output-format", "json")
    assert result.returncode == 0, result.stderr
    misses = json.loads(result.stdout)["economics"]["misses"]
    assert misses["evicted"] == {"calls": 1, "tokens": agent.timeline[1].cache_miss.tokens}  # type: ignore[union-attr]


async def test_the_proxy_names_a_cache_the_server_evicted(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    from core.proxy.calls import call_sample
    from tests.support.proxy import running_proxy, sdk_client

    system = [{"type": "text", "text": "You are a careful coding agent. " * 300, "cache_control": {"type": "ephemeral"}}]
    first = {"role": "user", "content": [{"type": "text", "text": "fix the test", "cache_control": {"type": "ephemeral"}}]}
    second = [{"role": "user", "content": [{"type": "text", "text": "fix the test"}]},
              {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]},
              {"role": "user", "content": [{"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}]}]
    fake_api.script(text_reply("reply 1"), text_reply("reply 2"))
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, sdk_client(proxy.url) as client:
        await client.messages.create(model=MODEL, max_tokens=100, system=system,  # type: ignore[arg-type]
                                     messages=[first])  # type: ignore[list-item]
        await proxy.finished(1)
        fake_api.prompt_cache.clear()
        await client.messages.create(model=MODEL, max_tokens=100, system=system,  # type: ignore[arg-type]
                                     messages=second)  # type: ignore[arg-type]
        calls = await proxy.finished(2)
    before, after = calls[0].usage, calls[1].usage
    assert before is not None and after is not None
    lost = before.cache_read_tokens + before.cache_creation_tokens - after.cache_read_tokens
    assert calls[1].cache_miss == CacheMiss("evicted", None, None, lost) and lost > 0
    assert call_sample(calls[1]).cache_miss == calls[1].cache_miss  # the timeline marks it
