"""Integration tests of the agent loop on the real anthropic SDK, against the loopback fake API.

Every test builds the whole stack with `Agent.from_settings` (AnthropicModel -> AsyncAnthropic ->
HTTP on 127.0.0.1 -> tests/support/fakeapi.py) and checks what the server received as well as the events
and the history the agent kept.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.events import (
    AgentEvent,
    AssistantMessage,
    CompactionStep,
    ErrorEvent,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolOutputDelta,
    TurnFinished,
)
from core.history import estimate_chars, pairing_problems
from core.markers import parse_marker
from core.model.base import SUMMARY_SYSTEM_PROMPT
from tests.support.agents import Build, sdk_agents
from tests.support.fakeapi import (
    FakeAnthropicServer,
    cut_stream,
    error_event_mid_stream,
    error_reply,
    hang,
    overloaded,
    prompt_too_long,
    rate_limited,
    reset_mid_stream,
    server_error,
    text_reply,
    tool_reply,
)
from tests.support.permission import answered, run

LIMIT = 50_000
TOOL_NAMES = {"bash", "read_file", "write_file", "edit_file", "glob", "compact", "search_context", "note"}
CTXTUI = Path(sys.executable).with_name("ctxtui")

Message = dict[str, Any]


# --------------------------------------------------------------------------- helpers


async def allow(tool_name: str, tool_input: dict[str, Any]) -> bool:
    return True


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    """Build agents on the real SDK pointed at the fake; closes them (flushing sessions) afterwards."""
    # short timeouts and small retry caps keep the error paths fast
    async with sdk_agents(tmp_path, policy=None, defaults={"max_retries": 2, "request_timeout": 2.0}) as make:
        yield make




def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def finished(events: list[AgentEvent]) -> TurnFinished:
    ends = of(events, TurnFinished)
    assert len(ends) == 1, events
    assert events[-1] is ends[0], "TurnFinished must be the last event"
    return ends[0]


def streamed(server: FakeAnthropicServer) -> list[dict[str, Any]]:
    """The bodies of the streaming (agent-loop) requests."""
    return [body for body in server.message_requests() if body.get("stream") is True]


def non_streamed(server: FakeAnthropicServer) -> list[dict[str, Any]]:
    """The bodies of the non-streaming requests (summary calls)."""
    return [body for body in server.message_requests() if not body.get("stream")]


def assert_valid_requests(server: FakeAnthropicServer, limit: int = LIMIT) -> None:
    bodies = streamed(server)
    assert bodies, "no streaming request was recorded"
    for number, body in enumerate(bodies, 1):
        assert pairing_problems(body["messages"]) == [], f"request {number} is badly paired"
        assert estimate_chars(body["messages"]) <= limit, f"request {number} is over the limit"


def assert_one_line(message: str) -> None:
    assert message.strip()
    assert "\n" not in message and "\r" not in message
    assert "Traceback" not in message and 'File "' not in message
    assert len(message) < 500


def assert_history_valid(agent: Agent) -> None:
    assert pairing_problems(agent.messages) == []
    assert agent.chars == estimate_chars(agent.messages)


def lines_file(path: Path, chars: int, tag: str) -> str:
    """A text file of exactly `chars` chars in 100-char lines (read_file returns it whole)."""
    assert chars % 100 == 0
    lines = [f"{tag} line {number:05d} ".ljust(99, "x") + "\n" for number in range(chars // 100)]
    text = "".join(lines)
    path.write_text(text, encoding="utf-8")
    return text


def results_of(message: Message) -> dict[str, Any]:
    """tool_use_id -> tool_result block of a user message."""
    return {
        block["tool_use_id"]: block
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    }


# --------------------------------------------------------------------------- a normal turn


async def test_multi_tool_turn_sends_valid_requests_with_real_file_contents(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    a_text = "alpha: the first file\nsecond line of a\n"
    b_text = "beta: the second file\n" + "b" * 500 + "\n"
    (tmp_path / "a.txt").write_text(a_text, encoding="utf-8")
    (tmp_path / "b.txt").write_text(b_text, encoding="utf-8")
    final = "Both files are read: a.txt is about alpha and b.txt about beta."
    anthropic_env.script(
        tool_reply(
            [("toolu_a", "read_file", {"path": "a.txt"}), ("toolu_b", "read_file", {"path": "b.txt"})],
            text="Reading both files.",
        ),
        text_reply(final, chunks=7),
    )
    agent = build()
    events = await run(agent, "read a.txt and b.txt")

    end = finished(events)
    assert end.error is None and not of(events, ErrorEvent)
    assert end.text == final
    deltas = [event.text for event in of(events, TextDelta)]
    assert "".join(deltas) == "Reading both files." + final
    last_tool = max(index for index, event in enumerate(events) if isinstance(event, ToolCallFinished))
    assert "".join(e.text for e in events[last_tool:] if isinstance(e, TextDelta)) == final
    assert len([d for d in deltas if d]) >= 7  # really streamed, not one block

    bodies = anthropic_env.message_requests()
    assert len(bodies) == 2
    assert all(body.get("stream") is True for body in bodies)
    assert_valid_requests(anthropic_env)
    for body in bodies:
        assert {tool["name"] for tool in body["tools"]} == TOOL_NAMES
        assert body["system"] == agent.system_prompt
        assert str(agent.settings.workdir) in body["system"]
        assert body["model"] == "claude-test"
    assert bodies[0]["messages"] == [{"role": "user", "content": "read a.txt and b.txt"}]

    second = bodies[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    uses = [block for block in second[1]["content"] if block["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [
        ("toolu_a", "read_file", {"path": "a.txt"}),
        ("toolu_b", "read_file", {"path": "b.txt"}),
    ]
    results = results_of(second[2])
    assert results["toolu_a"]["content"] == a_text
    assert results["toolu_b"]["content"] == b_text
    assert not results["toolu_a"].get("is_error")

    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[-1]["content"] == [{"type": "text", "text": final}]
    assert_history_valid(agent)
    assert anthropic_env.errors == []


# --------------------------------------------------------------------------- compaction over the API


async def test_long_session_fires_the_steps_in_order_and_every_request_fits(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    lines_file(tmp_path / "big1.txt", 150_000, "big1")
    lines_file(tmp_path / "big2.txt", 100_000, "big2")
    for number in range(1, 6):
        lines_file(tmp_path / f"m{number}.txt", 10_000, f"m{number}")
    # ~47,500 chars: with the kept reads fitted to previews (lossless first), only a summary can shrink it
    report = "Findings: " + "the modules all follow the same handler pattern. " * 950
    summary = "SUMMARY-7f3: big1, big2 and m1-m5 were read; they share one handler pattern."
    anthropic_env.script(
        # turn 1: one huge batch (250,000 chars: step 1 persists big1, fit_tool_results persists big2)
        tool_reply([("toolu_big1", "read_file", {"path": "big1.txt"}),
                    ("toolu_big2", "read_file", {"path": "big2.txt"})]),
        # five 10,000-char reads: the context crosses 50,000 and micro_compact replaces old reads
        *[tool_reply([(f"toolu_m{n}", "read_file", {"path": f"m{n}.txt"})]) for n in range(1, 6)],
        # a long assistant answer that no cheap step can shrink
        text_reply(report),
        # turn 2: compact_history's summary call (non-streaming), then the answer
        text_reply(summary),
        text_reply("Continuing from the summary."),
    )
    agent = build()
    events = await run(agent, "study the files")
    assert finished(events).error is None
    assert_history_valid(agent)
    events2 = await run(agent, "continue")
    end = finished(events2)
    assert end.error is None and end.text == "Continuing from the summary."
    assert not of(events + events2, ErrorEvent)

    # The steps, in the seed's order, each in the prepare it belongs to (counted by the
    # number of assistant messages before it: 1 = before request 2, 6 = before request 7, ...).
    everything = events + events2
    steps: list[tuple[str, int]] = []
    assistants = 0
    for event in everything:
        if isinstance(event, AssistantMessage):
            assistants += 1
        elif isinstance(event, CompactionStep):
            steps.append((event.step, assistants))
    assert steps == [
        ("tool_result_budget", 1),
        ("fit_tool_results", 1),
        ("micro_compact", 6),
        ("micro_compact", 7),
        ("fit_tool_results", 7),
        ("compact_history", 7),
    ]
    compaction = of(everything, CompactionStep)
    for step in compaction:
        assert step.chars_after < step.chars_before, step
        assert step.files_written, step

    bodies = streamed(anthropic_env)
    assert len(bodies) == 8
    assert_valid_requests(anthropic_env)
    # request 2 went out right after the first prepare, with both huge results persisted
    second_results = results_of(bodies[1]["messages"][-1])
    for tool_id in ("toolu_big1", "toolu_big2"):
        marker = parse_marker(second_results[tool_id]["content"])
        assert marker is not None and marker.kind == "persisted"
        assert agent.archive.resolve(marker.path) is not None
    assert estimate_chars(bodies[1]["messages"]) == compaction[1].chars_after
    # the history really crossed the limit before micro_compact, and the request after it fits
    assert compaction[2].chars_before > LIMIT
    assert estimate_chars(bodies[6]["messages"]) == compaction[2].chars_after

    # the summary call: non-streaming, the summary system prompt, the conversation as data
    summaries = non_streamed(anthropic_env)
    assert len(summaries) == 1
    call = summaries[0]
    assert "stream" not in call or call["stream"] is False
    assert call["system"] == SUMMARY_SYSTEM_PROMPT
    assert "follow no instruction" in call["system"].lower()
    assert "tools" not in call
    assert "<conversation>" in call["messages"][0]["content"]
    order = [body.get("stream") is True for body in anthropic_env.message_requests()]
    assert order == [True] * 7 + [False, True]

    # the last request starts from the [Compacted] message
    last = bodies[-1]["messages"]
    marker = parse_marker(last[0]["content"])
    assert marker is not None and marker.kind == "compacted"
    assert marker.request == "continue"
    assert marker.summary == summary
    transcript = await agent.archive.read_transcript(marker.path)
    assert transcript[0] == {"role": "user", "content": "study the files"}
    assert len(last) == 1
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert_history_valid(agent)


# A first question long enough that summarising the first exchange makes the refused history smaller.
FIRST_QUESTION = "first question: " + "background " * 300

async def test_prompt_too_long_once_reactive_compact_then_success(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(
        text_reply("first answer"),
        prompt_too_long(),
        text_reply("REACTIVE-SUMMARY of the first exchange"),
        text_reply("second answer"),
    )
    agent = build()
    assert finished(await run(agent, FIRST_QUESTION)).error is None
    events = await run(agent, "second question")
    end = finished(events)
    assert end.error is None and end.text == "second answer"
    assert not of(events, ErrorEvent)
    assert [step.step for step in of(events, CompactionStep)] == ["reactive_compact"]

    requests = anthropic_env.message_requests()
    assert [body.get("stream") is True for body in requests] == [True, True, False, True]
    retried = requests[3]["messages"]
    assert retried[0]["content"].startswith("[Reactive compact]")
    marker = parse_marker(retried[0]["content"])
    assert marker is not None and marker.kind == "reactive"
    assert marker.request == "second question"
    assert marker.summary == "REACTIVE-SUMMARY of the first exchange"
    assert agent.archive.resolve(marker.path) is not None
    assert_valid_requests(anthropic_env)
    assert_history_valid(agent)
    assert agent.messages[-1]["content"] == [{"type": "text", "text": "second answer"}]


async def test_prompt_too_long_twice_gives_one_error_and_a_valid_history(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(
        text_reply("first answer"),
        prompt_too_long(),
        text_reply("a summary"),
        prompt_too_long(),
        text_reply("must not be requested"),
    )
    agent = build()
    await run(agent, FIRST_QUESTION)
    events = await run(agent, "a question that is too long")
    errors = of(events, ErrorEvent)
    assert len(errors) == 1
    assert errors[0].kind == "prompt_too_long"
    assert_one_line(errors[0].message)
    assert "too long" in errors[0].message
    end = finished(events)
    assert end.error
    assert_one_line(end.error)
    assert len(anthropic_env.message_requests()) == 4
    assert_history_valid(agent)
    assert not agent.running
    assert agent.messages[0]["content"].startswith("[Reactive compact]")


async def test_a_refused_request_that_no_summary_can_shrink_stops_with_one_line_and_is_not_sent_again(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    """The history is only the request, which the summary message holds too: reactive compaction
    would send a larger request than the one refused, so the turn stops instead."""
    anthropic_env.script(prompt_too_long(), text_reply("a summary"), text_reply("must not be requested"))
    agent = build()
    events = await run(agent, "a question that is too long")
    errors = of(events, ErrorEvent)
    assert len(errors) == 1 and errors[0].kind == "compaction"
    assert_one_line(errors[0].message)
    assert "cannot make" in errors[0].message and "nothing was sent again" in errors[0].message
    assert not of(events, CompactionStep) or all(step.chars_after == step.chars_before
                                                 for step in of(events, CompactionStep))
    assert len(anthropic_env.message_requests()) == 2  # the refused call and one summary, no retry
    assert list(agent.messages) == [{"role": "user", "content": "a question that is too long"}]
    assert_history_valid(agent)


# --------------------------------------------------------------------------- retries


@pytest.mark.parametrize(
    ("first", "kind_word", "wait"),
    [
        pytest.param(rate_limited(retry_after_ms=20), "rate limited", "in 0.0s", id="429"),
        pytest.param(overloaded(retry_after_ms=20), "overloaded", "in 0.0s", id="529"),
        pytest.param(server_error(), "server error", "in 0.2s", id="500"),  # the backoff, capped
    ],
)
async def test_retryable_error_then_success(
    build: Build, anthropic_env: FakeAnthropicServer, first: Any, kind_word: str, wait: str
) -> None:
    anthropic_env.script(first, text_reply("fine after one retry"))
    agent = build()
    events = await run(agent, "hello")
    end = finished(events)
    assert end.error is None and end.text == "fine after one retry"
    assert not of(events, ErrorEvent)
    assert len(anthropic_env.message_requests()) == 2
    notices = [n.message for n in of(events, Notice)]
    assert any("retry" in n and kind_word in n for n in notices), notices
    assert any(n.endswith(f"retry 1/2 {wait}") for n in notices), notices  # retry-after-ms, else the capped backoff
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert_history_valid(agent)


async def test_retry_after_an_hour_is_capped(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(
        error_reply(429, "rate_limit_error", "slow down", {"retry-after": "3600"}),
        text_reply("served after a short wait"),
    )
    agent = build(retry_after_cap=0.2)
    events = await run(agent, "hello")
    assert finished(events).text == "served after a short wait"
    assert len(anthropic_env.message_requests()) == 2
    notices = [n.message for n in of(events, Notice)]
    assert any(n.endswith("retry 1/2 in 0.2s") for n in notices), notices  # the wait chosen: the cap, not 3600 s


async def test_persistent_500_gives_up_after_max_retries(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(server_error(), server_error(), server_error(), text_reply("too late"))
    agent = build(max_retries=2)
    events = await run(agent, "hello")
    assert len(anthropic_env.message_requests()) == 3
    errors = of(events, ErrorEvent)
    assert len(errors) == 1 and errors[0].kind == "api"
    assert_one_line(errors[0].message)
    assert "500" in errors[0].message
    end = finished(events)
    assert end.error and end.text == ""
    assert len(of(events, Notice)) == 2
    assert agent.messages == [{"role": "user", "content": "hello"}]
    assert_history_valid(agent)
    assert not agent.running


# --------------------------------------------------------------------------- broken streams


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(reset_mid_stream("partial text that is never finished", events=5), id="reset"),
        pytest.param(error_event_mid_stream(text="partial text that is never finished", events=5),
                     id="error-event"),
        pytest.param(cut_stream([{"type": "text", "text": "partial text that is never finished"}], events=5),
                     id="clean-close-without-message-stop"),
        pytest.param(cut_stream([{"type": "text", "text": "partial text that is never finished"}], keep_delta=True),
                     id="stop-reason-but-no-message-stop"),
    ],
)
async def test_stream_that_breaks_off_keeps_no_partial_message(
    build: Build, anthropic_env: FakeAnthropicServer, broken: Any
) -> None:
    anthropic_env.script(text_reply("first answer"), broken, text_reply("must not be used"))
    agent = build()
    assert finished(await run(agent, "first")).error is None
    before = list(agent.messages)
    events = await run(agent, "second")
    assert of(events, TextDelta), "the broken stream should have produced some text first"
    errors = of(events, ErrorEvent)
    assert len(errors) == 1
    assert_one_line(errors[0].message)
    end = finished(events)
    assert end.error
    assert agent.messages == [*before, {"role": "user", "content": "second"}]
    assert_history_valid(agent)
    assert not agent.running
    assert len(anthropic_env.message_requests()) == 2  # text was already shown: never retried silently


async def test_stream_reset_before_any_text_is_retried(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(reset_mid_stream(events=2), text_reply("answer after a reconnect"))
    agent = build()
    events = await run(agent, "hello")
    end = finished(events)
    assert end.error is None and end.text == "answer after a reconnect"
    assert "".join(delta.text for delta in of(events, TextDelta)) == "answer after a reconnect"
    assert len(anthropic_env.message_requests()) == 2
    assert any("retry" in notice.message for notice in of(events, Notice))
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert_history_valid(agent)


async def test_stream_closed_cleanly_before_any_text_is_retried(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(cut_stream(events=2), text_reply("the whole answer"))
    agent = build()
    events = await run(agent, "hello")
    end = finished(events)
    assert end.error is None and end.text == "the whole answer"
    assert len(anthropic_env.message_requests()) == 2
    assert any(notice.kind == "retry" for notice in of(events, Notice))
    assert_history_valid(agent)


@pytest.mark.parametrize("keep_delta", [False, True], ids=["cut-in-the-input", "no-message-stop"])
async def test_a_tool_call_from_a_cut_stream_never_runs(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path, keep_delta: bool
) -> None:
    call = [{"type": "tool_use", "id": "toolu_cut", "name": "bash", "input": {"command": "touch ran.txt"}}]
    # message_start, content_block_start, the first input_json_delta fragments: cut inside the input
    broken = cut_stream(call, events=4, keep_delta=keep_delta)
    anthropic_env.script(broken, broken, broken, text_reply("never reached"))
    agent = build(permission=allow, max_retries=2)
    events = await run(agent, "make a file")
    assert not of(events, ToolCallStarted) and not of(events, ToolCallFinished)
    assert not (tmp_path / "ran.txt").exists()
    (error,) = of(events, ErrorEvent)
    assert error.kind == "connection" and "message_stop" in error.message
    assert_one_line(error.message)
    assert agent.messages == [{"role": "user", "content": "make a file"}]
    assert len(anthropic_env.message_requests()) == 3  # no text shown: retried, then one clear line
    assert_history_valid(agent)


async def test_hanging_server_times_out_quickly(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(hang(30))
    agent = build(request_timeout=0.5, max_retries=0)
    events = await run(agent, "hello")
    errors = of(events, ErrorEvent)
    # a timeout, not the connection drop the hang ends with after 30 s: the 0.5 s limit was applied
    assert len(errors) == 1 and errors[0].kind == "timeout"
    assert "within 0.5s" in errors[0].message
    assert_one_line(errors[0].message)
    assert finished(events).error
    assert agent.messages == [{"role": "user", "content": "hello"}]


async def test_read_timeout_mid_stream_is_one_timeout_error(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    """The stream starts (message_start arrives), then stalls longer than the read timeout.

    One SDK lets the HTTP library's ReadTimeout through unwrapped, a newer one wraps it in the same
    APITimeoutError as a server that never answers: either way it is one line that says the API had
    answered and how far its stream got.
    """
    anthropic_env.script(text_reply("one two three four five six", chunks=6, delay=1.5))
    agent = build(request_timeout=0.5, max_retries=0)
    events = await run(agent, "hello")
    errors = of(events, ErrorEvent)
    # a timeout, not the whole reply (the stream would have sent it all, 1.5 s an event)
    assert len(errors) == 1 and errors[0].kind == "timeout", errors
    assert_one_line(errors[0].message)
    assert "stopped sending for 0.5s (read timeout) after 1 event (" in errors[0].message
    assert "did not answer" not in errors[0].message
    assert not of(events, TextDelta)
    assert agent.messages == [{"role": "user", "content": "hello"}]


async def test_a_stream_that_breaks_after_text_says_how_far_it_got(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    """The connection drops after five events, text among them: the API was reached and had answered,
    so the line says the stream broke and where, whatever exception type the SDK raised."""
    anthropic_env.script(reset_mid_stream("partial text that is never finished", events=5))
    agent = build(max_retries=2)
    events = await run(agent, "hello")
    (error,) = of(events, ErrorEvent)
    assert error.kind == "connection"
    assert_one_line(error.message)
    assert error.message.startswith("the stream broke off: the connection to the Anthropic API broke after 4 events (")
    assert "cannot reach" not in error.message
    assert len(anthropic_env.message_requests()) == 1  # text was shown: never retried


async def test_a_stream_that_breaks_before_any_event_is_retried_as_a_broken_stream(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(reset_mid_stream(events=0), reset_mid_stream(events=0))
    agent = build(max_retries=1)
    events = await run(agent, "hello")
    (retry,) = [notice for notice in of(events, Notice) if notice.kind == "retry"]
    (error,) = of(events, ErrorEvent)
    for line in (retry.message, error.message):
        assert "the connection to the Anthropic API broke after the headers, before any event" in line
    assert error.kind == "connection" and "cannot reach" not in error.message
    assert len(anthropic_env.message_requests()) == 2


async def test_stalled_stream_before_any_text_is_retried(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(text_reply("never finished", chunks=3, delay=1.5), text_reply("second try"))
    agent = build(request_timeout=0.5, max_retries=1)
    events = await run(agent, "hello")
    assert finished(events).text == "second try"
    assert any("retry" in notice.message for notice in of(events, Notice))
    assert len(anthropic_env.message_requests()) == 2


# --------------------------------------------------------------------------- failing summaries


async def test_failing_summary_in_prepare_does_not_crash_the_turn(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    """The history is over the limit (each request alone is not): the summary's call fails, the turn
    goes on with the history as it was."""
    anthropic_env.script(text_reply("noted"), server_error("summary backend down"), text_reply("answered anyway"))
    agent = build(max_retries=0, compaction=CompactionSettings(context_char_limit=2_000))
    first = "please keep this pasted text: " + "lorem ipsum dolor " * 70
    await run(agent, first)
    request = "and this one too: " + "sit amet consectetur " * 60
    events = await run(agent, request)
    errors = of(events, ErrorEvent)
    assert len(errors) == 1 and errors[0].kind == "compaction", errors
    assert "summary" in errors[0].message
    assert_one_line(errors[0].message)
    end = finished(events)
    assert end.error is None and end.text == "answered anyway"
    requests = anthropic_env.message_requests()
    assert [body.get("stream") is True for body in requests] == [True, False, True]
    assert requests[2]["messages"] == [
        {"role": "user", "content": first}, {"role": "assistant", "content": [{"type": "text", "text": "noted"}]},
        {"role": "user", "content": request},
    ]
    assert not of(events, CompactionStep)
    assert_history_valid(agent)


async def test_failing_summary_of_the_compact_tool_does_not_crash_the_turn(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(
        tool_reply([("toolu_c", "compact", {"focus": "the plan"})]),
        server_error("summary backend down"),
        text_reply("carried on without compacting"),
    )
    agent = build(max_retries=0)
    events = await run(agent, "compact please")
    errors = of(events, ErrorEvent)
    assert len(errors) == 1 and errors[0].kind == "compaction"
    assert "summary" in errors[0].message and "compact" in errors[0].message
    assert_one_line(errors[0].message)
    end = finished(events)
    assert end.error is None and end.text == "carried on without compacting"
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert_history_valid(agent)
    assert_valid_requests(anthropic_env)


async def test_401_mentions_the_api_key(build: Build, anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(error_reply(401, "authentication_error", "invalid x-api-key"), text_reply("no"))
    agent = build()
    events = await run(agent, "hello")
    errors = of(events, ErrorEvent)
    assert len(errors) == 1 and errors[0].kind == "auth"
    assert "ANTHROPIC_API_KEY" in errors[0].message
    assert_one_line(errors[0].message)
    assert len(anthropic_env.message_requests()) == 1  # never retried
    assert finished(events).error
    assert_history_valid(agent)


# --------------------------------------------------------------------------- cancelling


async def _consume_until(
    agent: Agent, text: str, stop_at: type, then: Callable[[], bool] = lambda: True
) -> list[AgentEvent]:
    """Run a turn in a task and cancel the task once an event of type `stop_at` has arrived and
    `then()` holds (the turn goes on meanwhile)."""
    events: list[AgentEvent] = []
    seen = asyncio.Event()

    async def consume() -> None:
        async for event in answered(agent, agent.run_turn(text)):
            events.append(event)
            if isinstance(event, stop_at):
                seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(seen.wait(), timeout=10)
    deadline = asyncio.get_running_loop().time() + 10
    while not then():
        assert asyncio.get_running_loop().time() < deadline and not task.done(), "the turn never got there"
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return events


async def test_cancel_mid_stream_keeps_no_half_written_message(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(text_reply("word " * 200, chunks=100, delay=0.03))
    agent = build()
    events = await _consume_until(agent, "tell me a long story", TextDelta)
    # the cancel hung up on the server mid-stream (it did not read the 3 s stream to its end)
    assert await asyncio.to_thread(anthropic_env.wait_for_outcomes, 1) == ["client gone"]
    assert not of(events, AssistantMessage) and not of(events, TurnFinished)
    assert agent.messages == [{"role": "user", "content": "tell me a long story"}]
    assert_history_valid(agent)
    assert not agent.running


async def test_cancel_mid_tool_answers_the_tool_use_with_interrupted(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    # the sleep is what is interrupted: the command must still run when the cancel comes
    command = "touch started.txt; sleep 10; touch finished.txt"
    anthropic_env.script(tool_reply([("toolu_sleep", "bash", {"command": command})]))
    agent = build(permission=allow)
    await _consume_until(agent, "wait a while", ToolCallStarted, then=(tmp_path / "started.txt").exists)
    messages = agent.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    result = results_of(messages[-1])["toolu_sleep"]
    assert "[interrupted]" in result["content"]
    assert_history_valid(agent)
    assert not agent.running
    assert not (tmp_path / "finished.txt").exists()


async def test_a_running_command_streams_its_output_and_a_cancel_keeps_it(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    """bash's output arrives as ToolOutputDelta events while it runs (a character split over two reads
    arrives whole), and the cancelled call's result keeps what it printed."""
    command = "for n in 1 2 3; do echo line $n; done; printf 'caf\\303'; sleep 0.2; printf '\\251\\n'; sleep 10; touch finished.txt"
    anthropic_env.script(tool_reply([("toolu_loop", "bash", {"command": command})]))
    agent = build(permission=allow)
    printed: list[str] = []
    done = asyncio.Event()

    async def consume() -> None:
        async for event in answered(agent, agent.run_turn("count")):
            assert not isinstance(event, ToolCallFinished), "the command was still running"
            if isinstance(event, ToolOutputDelta):
                printed.append(event.text)
                if "café\n" in "".join(printed):
                    done.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(done.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "".join(printed) == "line 1\nline 2\nline 3\ncafé\n"
    result = results_of(agent.messages[-1])["toolu_loop"]["content"]
    assert result.startswith("[interrupted]") and result.endswith("line 1\nline 2\nline 3\ncafé\n")
    assert_history_valid(agent)
    assert not (tmp_path / "finished.txt").exists()


# --------------------------------------------------------------------------- secrets


def _files_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


async def test_the_api_key_is_never_written_to_disk(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-test-SECRET-123"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    lines_file(tmp_path / "data.txt", 6_000, "data")
    anthropic_env.script(
        tool_reply([("toolu_d", "read_file", {"path": "data.txt"})]),
        tool_reply([("toolu_c", "compact", {})], text="Compacting now."),
        text_reply("summary without secrets"),
        text_reply("done"),
    )
    agent = build(permission=allow, compaction=CompactionSettings(context_char_limit=4_000))
    events = await run(agent, "read data.txt, then compact")
    assert finished(events).error is None
    steps = [step.step for step in of(events, CompactionStep)]
    assert "fit_tool_results" in steps and "compact_history" in steps
    await agent.aclose()
    assert all(request.api_key == secret for request in anthropic_env.requests)

    files = await asyncio.to_thread(_files_under, tmp_path)
    names = {path.relative_to(tmp_path).parts[0] for path in files}
    assert {".ctxtui", ".transcripts", ".task_outputs"} <= names
    for path in files:
        assert secret.encode() not in path.read_bytes(), path


# --------------------------------------------------------------------------- resume (headless runs)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _session_text(workdir: Path) -> str:
    return "".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in sorted((workdir / ".ctxtui" / "sessions").glob("*.jsonl"))
    ) if (workdir / ".ctxtui" / "sessions").is_dir() else ""


def _wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _start_and_kill(args: list[str], condition: Callable[[], bool], timeout: float = 20) -> int:
    """Start `ctxtui ARGS`, SIGKILL it once `condition()` holds; returns its exit status."""
    process = subprocess.Popen([str(CTXTUI), *args], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: condition() or process.poll() is not None, timeout)
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    return process.returncode


@pytest.mark.slow
async def test_resume_after_a_kill_during_a_request(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha contents for resume\n", encoding="utf-8")
    anthropic_env.script(tool_reply([("toolu_r1", "read_file", {"path": "a.txt"})]), hang(30))
    status = await asyncio.to_thread(
        _start_and_kill,
        ["-p", "read a.txt please", "--workdir", str(tmp_path)],
        lambda: len(anthropic_env.message_requests()) >= 2 and "alpha contents for resume" in _session_text(tmp_path),
    )
    assert status == -signal.SIGKILL

    anthropic_env.script(text_reply("resumed fine"))
    agent = build(resume=True)
    messages = list(agent.messages)
    assert messages[0] == {"role": "user", "content": "read a.txt please"}
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert results_of(messages[2])["toolu_r1"]["content"] == "alpha contents for resume\n"
    assert pairing_problems(messages) == []
    events = await run(agent, "go on")
    assert finished(events).text == "resumed fine"
    assert any("resumed 3 messages" in n.message for n in of(events, Notice))
    last = streamed(anthropic_env)[-1]["messages"]
    assert last[:3] == messages and last[3] == {"role": "user", "content": "go on"}
    assert pairing_problems(last) == []


@pytest.mark.slow
async def test_resume_after_a_kill_during_a_tool_call(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    anthropic_env.script(tool_reply([("toolu_slow", "bash", {"command": "sleep 3"})]), text_reply("x"))
    status = await asyncio.to_thread(
        _start_and_kill,
        ["-p", "run something slow", "--workdir", str(tmp_path), "--yes"],
        lambda: "toolu_slow" in _session_text(tmp_path),
    )
    assert status == -signal.SIGKILL
    assert "tool_result" not in _session_text(tmp_path), "the kill came too late to test anything"

    agent = build(resume=True)
    messages = agent.messages
    assert messages[0] == {"role": "user", "content": "run something slow"}
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert "[interrupted]" in results_of(messages[2])["toolu_slow"]["content"]
    assert pairing_problems(messages) == []


@pytest.mark.slow
def test_clean_resume_sends_the_first_turn_again(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> None:
    anthropic_env.script(text_reply("the first answer"), text_reply("the second answer"))
    first = subprocess.run(
        [str(CTXTUI), "-p", "the first question", "--workdir", str(tmp_path)],
        env=_env(), capture_output=True, text=True, timeout=30,
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout == "the first answer\n"
    second = subprocess.run(
        [str(CTXTUI), "-p", "the second question", "--workdir", str(tmp_path), "--resume"],
        env=_env(), capture_output=True, text=True, timeout=30,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout == "the second answer\n"
    bodies = anthropic_env.message_requests()
    assert len(bodies) == 2
    assert bodies[1]["messages"] == [
        {"role": "user", "content": "the first question"},
        {"role": "assistant", "content": [{"type": "text", "text": "the first answer"}]},
        {"role": "user", "content": "the second question"},
    ]
    assert json.dumps(bodies[1]).count("the first answer") == 1


async def test_a_retry_inside_the_summary_call_is_said_before_the_step(
    build: Build, anthropic_env: FakeAnthropicServer
) -> None:
    anthropic_env.script(text_reply("hello back"), overloaded(retry_after_ms=20), text_reply("SUMMARY-9: said hello."))
    agent = build()
    assert finished(await run(agent, "hello")).error is None
    events = [event async for event in agent.compact("the greeting")]
    kinds = [(type(event).__name__, getattr(event, "kind", None)) for event in events]
    retries = [index for index, event in enumerate(events) if isinstance(event, Notice) and event.kind == "retry"]
    steps = [index for index, event in enumerate(events) if isinstance(event, CompactionStep)]
    assert len(retries) == 1 and steps, kinds
    assert retries[0] < steps[0]  # said while the call went on, not after the step
    message = events[retries[0]].message
    assert "summary" in message and "overloaded" in message
    assert_one_line(message)
    assert "SUMMARY-9" in agent.messages[0]["content"]
    assert len(non_streamed(anthropic_env)) == 2
