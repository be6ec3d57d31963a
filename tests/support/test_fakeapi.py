"""The fake Messages API speaks the protocol the real ``anthropic`` SDK expects."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest

from tests.support.fakeapi import (
    Exchange,
    FakeAnthropicServer,
    RecordedRequest,
    Response,
    error_event_mid_stream,
    error_reply,
    hang,
    overloaded,
    prompt_too_long,
    rate_limited,
    reset_mid_stream,
    server_error,
    split_evenly,
    text_reply,
    tool_reply,
)

MODEL = "claude-test-model"
MESSAGES: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hi"}]

_open_clients: list[anthropic.AsyncAnthropic] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    """Close every client made by make_client, so no sockets are left for the garbage collector."""
    yield
    while _open_clients:
        await _open_clients.pop().close()


def make_client(server: FakeAnthropicServer, **options: Any) -> anthropic.AsyncAnthropic:
    """A real SDK client pointed at the fake (no retries unless asked), closed after the test."""
    options.setdefault("max_retries", 0)
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="x", **options)
    _open_clients.append(client)
    return client


async def stream_text(client: anthropic.AsyncAnthropic) -> tuple[list[str], anthropic.types.Message]:
    async with client.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES) as stream:
        deltas = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    return deltas, final


async def create(client: anthropic.AsyncAnthropic) -> anthropic.types.Message:
    return await client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)


def raw_post(server: FakeAnthropicServer, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """POST /v1/messages with the standard library, to look at the bytes on the wire."""
    request = urllib.request.Request(
        server.base_url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as reply:
        return reply.status, {k.lower(): v for k, v in reply.headers.items()}, reply.read()


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    frames = raw.decode().split("\n\n")
    assert frames[-1] == "", "the stream must end with a blank line"
    events: list[tuple[str, dict[str, Any]]] = []
    for frame in frames[:-1]:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        events.append((event_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))))
    return events


# --------------------------------------------------------------------------- successful replies


async def test_stream_text_reply(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(text_reply("hello there, world", chunks=3))
    deltas, final = await stream_text(make_client(fake_api))
    assert deltas == split_evenly("hello there, world", 3)
    assert len(deltas) == 3
    assert [block.type for block in final.content] == ["text"]
    assert final.content[0].text == "hello there, world"  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.model == MODEL
    assert final.id.startswith("msg_")
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0


async def test_stream_event_sequence_seen_by_sdk(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(text_reply("abcdef", chunks=2, input_tokens=123, output_tokens=7))
    client = make_client(fake_api)
    stream = await client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES, stream=True)
    events = [event async for event in stream]
    assert [event.type for event in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0].message.usage.input_tokens == 123  # type: ignore[union-attr]
    assert events[5].usage.output_tokens == 7  # type: ignore[union-attr]
    assert events[5].delta.stop_reason == "end_turn"  # type: ignore[union-attr]


async def test_sse_wire_format(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(text_reply("hey", chunks=3))
    body = {"model": MODEL, "max_tokens": 8, "messages": MESSAGES, "stream": True}
    status, headers, raw = await asyncio.to_thread(raw_post, fake_api, body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["request-id"].startswith("req_")
    events = parse_sse(raw)
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    assert [data["delta"] for name, data in events if name == "content_block_delta"] == [
        {"type": "text_delta", "text": "h"},
        {"type": "text_delta", "text": "e"},
        {"type": "text_delta", "text": "y"},
    ]


async def test_tool_reply_streams_tool_inputs(fake_api: FakeAnthropicServer) -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("toolu_1", "read_file", {"path": "a.txt"}),
        ("toolu_2", "bash", {"command": "ls -la | head", "nested": {"n": [1, 2, 3], "ok": True}}),
    ]
    fake_api.script(tool_reply(calls, text="Let me look."))
    async with make_client(fake_api).messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert [block.type for block in final.content] == ["text", "tool_use", "tool_use"]
    assert final.content[0].text == "Let me look."  # type: ignore[union-attr]
    tool_blocks = [block for block in final.content if block.type == "tool_use"]
    assert [(b.id, b.name, b.input) for b in tool_blocks] == calls


async def test_tool_input_is_sent_in_several_fragments(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(tool_reply([("toolu_9", "glob", {"pattern": "**/*.py"})], json_chunks=4))
    body = {"model": MODEL, "max_tokens": 8, "messages": MESSAGES, "stream": True}
    _, _, raw = await asyncio.to_thread(raw_post, fake_api, body)
    events = parse_sse(raw)
    start = next(data for name, data in events if name == "content_block_start")
    assert start["content_block"] == {"type": "tool_use", "id": "toolu_9", "name": "glob", "input": {}}
    fragments = [data["delta"]["partial_json"] for name, data in events if name == "content_block_delta"]
    assert len(fragments) == 5 and fragments[0] == ""
    assert json.loads("".join(fragments)) == {"pattern": "**/*.py"}
    message_delta = next(data for name, data in events if name == "message_delta")
    assert message_delta["delta"]["stop_reason"] == "tool_use"


async def test_non_streaming_create(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(text_reply("summary text"))
    message = await create(make_client(fake_api))
    assert message.content[0].text == "summary text"  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL
    assert fake_api.message_requests()[0].get("stream", False) is False


async def test_non_streaming_wire_format(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(text_reply("summary text", input_tokens=11, output_tokens=3))
    body = {"model": MODEL, "max_tokens": 8, "messages": MESSAGES, "stream": False}
    status, headers, raw = await asyncio.to_thread(raw_post, fake_api, body)
    assert status == 200 and headers["content-type"] == "application/json"
    message = json.loads(raw)
    assert message["id"].startswith("msg_")
    del message["id"]
    assert message == {
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": "summary text"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 11,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 3,
        },
    }


async def test_tool_reply_without_streaming(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(tool_reply([("toolu_1", "read_file", {"path": "a.txt"})]))
    message = await create(make_client(fake_api))
    assert message.stop_reason == "tool_use"
    assert [(b.type, b.id, b.input) for b in message.content] == [  # type: ignore[union-attr]
        ("tool_use", "toolu_1", {"path": "a.txt"})
    ]


async def test_script_is_fifo_then_default(fake_api: FakeAnthropicServer) -> None:
    client = make_client(fake_api)
    fake_api.script(text_reply("one"), text_reply("two"))
    assert fake_api.pending() == 2
    texts = [(await create(client)).content[0].text for _ in range(3)]  # type: ignore[union-attr]
    assert texts == ["one", "two", "ok"]
    fake_api.default = text_reply("fallback")
    assert (await create(client)).content[0].text == "fallback"  # type: ignore[union-attr]
    assert fake_api.pending() == 0


async def test_callable_script_sees_request_body(fake_api: FakeAnthropicServer) -> None:
    def echo(body: dict[str, Any]) -> Response:
        return text_reply(f"you said {body['messages'][-1]['content']} to {body['model']}")

    fake_api.script(echo)
    _, final = await stream_text(make_client(fake_api))
    assert final.content[0].text == f"you said hi to {MODEL}"  # type: ignore[union-attr]


async def test_delay_spreads_events_over_time(fake_api: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []  # every wait the server made while answering
    sleep = Exchange.sleep

    def spy(exchange: Exchange, seconds: float) -> None:
        waits.append(seconds)
        sleep(exchange, seconds)

    monkeypatch.setattr(Exchange, "sleep", spy)
    fake_api.script(text_reply("x" * 20, chunks=10, delay=0.01))
    deltas, _ = await stream_text(make_client(fake_api))
    assert len(deltas) == 10
    assert waits == [0.01] * 15  # a wait between each two of the 16 events (2 starts, ping, 10 deltas, 3 ends)


# --------------------------------------------------------------------------- recording


async def test_requests_are_recorded(fake_api: FakeAnthropicServer) -> None:
    client = make_client(fake_api)
    await stream_text(client)
    await create(client)
    requests = fake_api.requests
    assert [(r.method, r.path) for r in requests] == [("POST", "/v1/messages")] * 2
    for recorded in requests:
        # anthropic 2.x sends the key as a bearer token, not as x-api-key
        assert recorded.headers["authorization"] == "Bearer x"
        assert recorded.api_key == "x"
        assert recorded.headers["content-type"] == "application/json"
        assert "anthropic-version" in recorded.headers
        assert recorded.body["model"] == MODEL
        assert recorded.body["messages"] == MESSAGES
        assert recorded.body["max_tokens"] == 64
    bodies = fake_api.message_requests()
    assert bodies[0]["stream"] is True
    assert bodies[1].get("stream", False) is False


async def test_anthropic_env_fixture(anthropic_env: FakeAnthropicServer) -> None:
    anthropic_env.script(text_reply("from env"))
    async with anthropic.AsyncAnthropic(
        max_retries=0
    ) as client:  # base URL and key come from the environment
        message = await create(client)
    assert message.content[0].text == "from env"  # type: ignore[union-attr]
    assert anthropic_env.requests[0].api_key == "test-key-not-real"


# --------------------------------------------------------------------------- HTTP errors


@pytest.mark.parametrize(
    ("reply", "exc_class", "status", "err_type"),
    [
        (prompt_too_long(), anthropic.BadRequestError, 400, "invalid_request_error"),
        (rate_limited(retry_after_ms=10), anthropic.RateLimitError, 429, "rate_limit_error"),
        (overloaded(retry_after_ms=10), anthropic.OverloadedError, 529, "overloaded_error"),
        (server_error(), anthropic.InternalServerError, 500, "api_error"),
        (
            error_reply(401, "authentication_error", "invalid x-api-key"),
            anthropic.AuthenticationError,
            401,
            None,
        ),
    ],
)
@pytest.mark.parametrize("streaming", [False, True])
async def test_http_errors_map_to_sdk_exceptions(
    fake_api: FakeAnthropicServer,
    reply: Response,
    exc_class: type[anthropic.APIStatusError],
    status: int,
    err_type: str | None,
    streaming: bool,
) -> None:
    fake_api.script(reply)
    client = make_client(fake_api)
    with pytest.raises(exc_class) as caught:
        if streaming:
            await stream_text(client)
        else:
            await create(client)
    assert type(caught.value) is exc_class
    assert caught.value.status_code == status
    assert caught.value.type == (err_type or "authentication_error")
    assert len(fake_api.requests) == 1


async def test_prompt_too_long_message(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(prompt_too_long())
    with pytest.raises(anthropic.BadRequestError) as caught:
        await stream_text(make_client(fake_api))
    assert "prompt is too long" in str(caught.value)
    assert caught.value.api_message == "prompt is too long: 210000 tokens > 200000 maximum"
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }


def test_overloaded_error_is_an_internal_server_error() -> None:
    assert issubclass(anthropic.OverloadedError, anthropic.InternalServerError)


async def test_sdk_retries_rate_limit_then_succeeds(fake_api: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []  # the SDK's chosen wait before each retry
    calculate = anthropic._base_client.BaseClient._calculate_retry_timeout

    def spy(client: Any, *args: Any, **kwargs: Any) -> float:
        waits.append(calculate(client, *args, **kwargs))
        return waits[-1]

    monkeypatch.setattr(anthropic._base_client.BaseClient, "_calculate_retry_timeout", spy)
    fake_api.script(rate_limited(retry_after_ms=10), text_reply("after retry"))
    _, final = await stream_text(make_client(fake_api, max_retries=2))
    assert final.content[0].text == "after retry"  # type: ignore[union-attr]
    assert len(fake_api.requests) == 2
    assert waits == [0.01]  # retry-after-ms was honoured, not the SDK's backoff (0.375 s or more)


async def test_sdk_retries_overloaded_then_succeeds(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(overloaded(retry_after_ms=10), overloaded(retry_after_ms=10), text_reply("third time"))
    message = await create(make_client(fake_api, max_retries=2))
    assert message.content[0].text == "third time"  # type: ignore[union-attr]
    assert len(fake_api.requests) == 3


async def test_x_should_retry_false_stops_retries(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(server_error(should_retry=False), text_reply("never reached"))
    with pytest.raises(anthropic.InternalServerError):
        await create(make_client(fake_api, max_retries=2))
    assert len(fake_api.requests) == 1
    assert fake_api.pending() == 1


# --------------------------------------------------------------------------- broken streams


def transport_error(error: BaseException) -> BaseException:
    """The HTTP library's error behind `error`: anthropic 2.14 lets it through while a body is read,
    2.17 wraps it in APIConnectionError / APITimeoutError (raised from it)."""
    return error.__cause__ if isinstance(error, anthropic.APIConnectionError) and error.__cause__ else error


async def test_reset_mid_stream(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(reset_mid_stream("partial text"))
    received: list[str] = []
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)) as caught:
        async with make_client(fake_api).messages.stream(
            model=MODEL, max_tokens=64, messages=MESSAGES
        ) as stream:
            async for text in stream.text_stream:
                received.append(text)
    assert isinstance(transport_error(caught.value), httpx2.RemoteProtocolError)
    assert received == split_evenly("partial text", 3)[:1]


async def test_reset_mid_stream_is_not_retried(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(reset_mid_stream())
    with pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)) as caught:
        await stream_text(make_client(fake_api, max_retries=2))
    assert isinstance(transport_error(caught.value), httpx2.TransportError)
    assert len(fake_api.requests) == 1


async def test_reset_before_body_complete_non_streaming(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(reset_mid_stream())
    with pytest.raises(anthropic.APIConnectionError) as caught:
        await create(make_client(fake_api))
    assert type(caught.value) is anthropic.APIConnectionError


async def test_error_event_mid_stream(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(error_event_mid_stream("overloaded_error", "Overloaded"))
    received: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with make_client(fake_api).messages.stream(
            model=MODEL, max_tokens=64, messages=MESSAGES
        ) as stream:
            async for text in stream.text_stream:
                received.append(text)
    error = caught.value
    # The HTTP status was 200, so the SDK raises the plain APIStatusError (not OverloadedError);
    # the error kind is only in .type / .body.
    assert type(error) is anthropic.APIStatusError
    assert error.status_code == 200
    assert error.type == "overloaded_error"
    assert error.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert received == ["par"]


async def test_hang_times_out(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(hang(10))
    client = make_client(fake_api, timeout=0.5)
    # a timeout, not the connection error the hang ends with after 10 s
    with pytest.raises(anthropic.APITimeoutError):
        await stream_text(client)
    assert len(fake_api.requests) == 1


async def test_stalled_stream_raises_a_read_timeout(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(text_reply("abcdef", chunks=3, delay=2.0))
    with pytest.raises((httpx2.ReadTimeout, anthropic.APITimeoutError)) as caught:
        await stream_text(make_client(fake_api, timeout=0.3))
    assert isinstance(transport_error(caught.value), httpx2.ReadTimeout)


async def test_stop_releases_hanging_handler() -> None:
    server = FakeAnthropicServer().start()
    server.script(hang(60))
    pending = asyncio.create_task(create(make_client(server)))
    await asyncio.to_thread(server.wait_for_requests, 1)
    await asyncio.to_thread(server.stop)
    with pytest.raises(anthropic.APIConnectionError):
        await asyncio.wait_for(pending, timeout=2)
    assert await asyncio.to_thread(server.wait_for_outcomes, 1) == ["stopped"]  # released by stop, not after 60 s


async def test_outcomes_tell_a_finished_response_from_a_client_that_hung_up(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(text_reply("read to the end"), text_reply("word " * 100, chunks=100, delay=0.01))
    client = make_client(fake_api)
    await stream_text(client)
    async with client.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES) as stream:
        async for _ in stream.text_stream:
            break  # leave after the first piece of text: the stream is closed mid-way
    assert await asyncio.to_thread(fake_api.wait_for_outcomes, 2) == ["complete", "client gone"]


async def test_broken_callable_reports_500(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(lambda body: body["no such key"])
    with pytest.raises(anthropic.InternalServerError) as caught:
        await create(make_client(fake_api, max_retries=2))
    assert "fakeapi: KeyError" in str(caught.value)
    assert len(fake_api.requests) == 1  # x-should-retry: false
    assert isinstance(fake_api.errors[0], KeyError)


def test_recorded_api_key_reads_either_header() -> None:
    assert RecordedRequest("POST", "/v1/messages", {"x-api-key": "k1"}, None).api_key == "k1"
    assert RecordedRequest("POST", "/v1/messages", {"authorization": "Bearer k2"}, None).api_key == "k2"
    assert RecordedRequest("POST", "/v1/messages", {}, None).api_key is None


def test_wait_for_requests_times_out() -> None:
    with FakeAnthropicServer() as server, pytest.raises(TimeoutError):
        server.wait_for_requests(1, timeout=0.05)


def test_server_context_manager_and_idempotent_stop() -> None:
    with FakeAnthropicServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.port > 0
    server.stop()  # idempotent
    with pytest.raises(RuntimeError):
        _ = server.base_url
