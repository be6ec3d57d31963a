"""A reply whose `usage` holds something that is no token count: the turn goes on, the reply is kept, the
figure is unknown (None) and so is the cost that needs it, and a warning names it. Over the real SDK and
the loopback fake, which writes the figures as raw JSON text (NaN, 1e400, a string), in message_start
or in message_delta, streamed or not (a summary call)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.events import AgentEvent, ContextSampled, ErrorEvent, Notice, TurnFinished
from core.proxy.watch import Watch
from core.usage.figures import MAX_TOKENS
from core.usage.timeline import describe_sample
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import Exchange, FakeAnthropicServer, Response, text_reply
from tests.support.permission import run
from tests.support.proxy import Driver, turn
from tests.support.proxy import body as proxy_body

MODEL = "claude-sonnet-5-5"  # priced: a cost is computed when every figure is known

# Not here: "12" and true, which the SDK itself turns into 12 and 1 as it builds the stream's events
# (a session file's "12" and true are unknown: tests/tui/cli/test_report_untrusted_samples.py).
BAD = ["NaN", "Infinity", "-Infinity", "1e400", "-5", "2.5", '"abc"', '"1e3"', "{}", "[]", "100000000000000"]


@dataclass
class RawUsageReply(Response):
    """A streamed text reply whose usage figures are the raw JSON texts given (`start`: in message_start,
    `delta`: in message_delta), written as they are."""

    start: dict[str, str] = field(default_factory=dict)
    delta: dict[str, str] = field(default_factory=dict)
    text: str = "the whole reply, kept"

    def respond(self, exchange: Exchange) -> None:
        reply = text_reply(self.text, input_tokens=40, output_tokens=7)
        exchange.start_stream()
        for name, data in reply.stream_events(exchange.body):
            usage = data["message"]["usage"] if name == "message_start" else data.get("usage")
            figures = self.start if name == "message_start" else self.delta if name == "message_delta" else {}
            for key in figures:
                usage[key] = f"@@{key}@@"
            raw = json.dumps(data)
            for key, text in figures.items():
                raw = raw.replace(f'"@@{key}@@"', text)
            exchange.send_raw_event(name, raw.encode())
        exchange.end_stream()


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    async with sdk_agents(tmp_path, defaults={"model": MODEL}) as make:
        yield make


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


@pytest.mark.parametrize("bad", BAD)
async def test_a_bad_figure_in_message_start_is_unknown_and_the_reply_is_kept(
    build: Build, anthropic_env: FakeAnthropicServer, bad: str
) -> None:
    anthropic_env.script(RawUsageReply(start={"input_tokens": bad, "cache_read_input_tokens": bad}))
    agent = build()
    events = await run(agent, "hello")
    assert not of(events, ErrorEvent)
    (finished,) = of(events, TurnFinished)
    assert finished.error is None and finished.text == "the whole reply, kept"
    assert agent.messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "the whole reply, kept"}]}
    assert finished.usage["input_tokens"] is None and finished.usage["cache_read_input_tokens"] is None
    (sample,) = agent.timeline
    assert sample.input_tokens is None and sample.cache_read_tokens is None
    assert sample.cache_creation_tokens == 0 and sample.output_tokens == 7  # the good figures stay
    assert sample.cost is None and sample.cost_parts is None and sample.prompt_tokens is None
    assert sample.error is None
    (warning,) = [notice for notice in of(events, Notice) if notice.kind == "warning"]
    assert "input_tokens, cache_read_input_tokens" in warning.message and "unknown" in warning.message
    assert "input ?" in describe_sample(sample) and "output 7" in describe_sample(sample)
    assert of(events, ContextSampled)[-1].session_cost is None


@pytest.mark.parametrize("bad", ["NaN", "1e400", '"seven"', "-1", "3.5"])
async def test_a_bad_figure_in_message_delta_is_unknown_and_the_next_turn_goes_on(
    build: Build, anthropic_env: FakeAnthropicServer, bad: str
) -> None:
    anthropic_env.script(RawUsageReply(delta={"output_tokens": bad}), text_reply("second"))
    agent = build()
    events = await run(agent, "hello")
    assert not of(events, ErrorEvent) and of(events, TurnFinished)[0].text == "the whole reply, kept"
    sample = agent.timeline[0]
    assert sample.output_tokens is None and sample.input_tokens == 40 and sample.cost is None
    second = await run(agent, "again")
    assert of(second, TurnFinished)[0].text == "second" and of(second, TurnFinished)[0].error is None
    assert agent.timeline[1].cost is not None and agent.timeline[1].output_tokens is not None


@pytest.mark.parametrize("figure", [MAX_TOKENS + 1, 10**11])
async def test_the_proxy_checks_a_reply_s_usage_with_the_same_bound(figure: int) -> None:
    """A usage figure no call could report is unknown in the proxy too (one bound for every entry)."""
    watch = Watch(None)
    Driver(watch).call(proxy_body(turn("hello")), usage={"input": figure})
    await watch.aclose()
    (call,) = watch.calls
    assert call.usage is None and call.cost is None
