"""`ctxtui proxy` passes every byte through: the real SDK as the client, the loopback fake as the upstream."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from tests.support.fakeapi import (
    ErrorEventMidStream,
    Exchange,
    FakeAnthropicServer,
    MessageReply,
    Response,
    error_reply,
    reset_mid_stream,
    text_reply,
)
from tests.support.proxy import TEST_KEY, read_record, running_proxy, sdk_client

MODEL = "claude-sonnet-5-5"
HI: list[Any] = [{"role": "user", "content": "hi ✓ «quoted» \u2028 end"}]


def fixed_reply(text: str = "héllo ✓ there", chunks: int = 4) -> MessageReply:
    """A reply whose bytes depend only on the request (fixed id and usage)."""
    return MessageReply([{"type": "text", "text": text}], chunks=chunks, message_id="msg_fixed",
                        input_tokens=7, output_tokens=3)


async def test_a_reply_and_its_request_pass_byte_for_byte(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    sent: list[httpx2.Request] = []

    async def keep(request: httpx2.Request) -> None:
        sent.append(request)

    fake_api.script(fixed_reply(), fixed_reply())
    async with running_proxy(fake_api.base_url, tmp_path) as proxy:
        direct = sdk_client(fake_api.base_url)
        through = sdk_client(proxy.url, http_client=httpx2.AsyncClient(event_hooks={"request": [keep]}),
                             default_headers={"anthropic-beta": "context-management-2025-06-27"})
        async with direct, through:
            plain = await direct.messages.with_raw_response.create(model=MODEL, max_tokens=20, messages=HI)
            proxied = await through.messages.with_raw_response.create(model=MODEL, max_tokens=20, messages=HI)
        await proxy.finished(1)
    assert proxied.http_response.content == plain.http_response.content
    assert proxied.http_response.headers["content-type"] == plain.http_response.headers["content-type"]
    assert proxied.http_response.headers["request-id"].startswith("req_fake_")
    upstream = fake_api.requests[-1]
    assert upstream.raw == sent[0].content, "the upstream got the body bytes the client sent"
    for name, value in sent[0].headers.items():
        if name.lower() not in ("host", "connection"):
            assert upstream.headers[name.lower()] == value, name
    assert upstream.headers["host"] == f"127.0.0.1:{fake_api.port}"


async def test_a_stream_passes_byte_for_byte(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(fixed_reply(chunks=6), fixed_reply(chunks=6))
    bodies: list[bytes] = []
    async with running_proxy(fake_api.base_url, tmp_path) as proxy:
        for base_url in (fake_api.base_url, proxy.url):
            async with sdk_client(base_url) as client:
                async with client.messages.with_streaming_response.create(
                        model=MODEL, max_tokens=20, messages=HI, stream=True) as response:
                    assert response.headers["content-type"].startswith("text/event-stream")
                    bodies.append(b"".join([chunk async for chunk in response.iter_bytes()]))
        calls = await proxy.finished(1)
    assert bodies[1] == bodies[0]
    assert bodies[0].count(b"event: content_block_delta") == 6
    assert calls[0].reply is not None and calls[0].reply["content"] == [{"type": "text", "text": "héllo ✓ there"}]


class GatedStream(Response):
    """Sends message_start, then waits until the test says the client has it, then sends the rest."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waited_in_vain = False
        self.sent: list[str] = []

    def respond(self, exchange: Exchange) -> None:
        events = fixed_reply(chunks=3).stream_events(exchange.body)
        exchange.start_stream()
        name, data = events[0]
        self.sent.append(name)  # before it goes out: the client may read it before this thread runs on
        exchange.send_event(name, data)
        if not self.release.wait(10):
            self.waited_in_vain = True
        for name, data in events[1:]:
            self.sent.append(name)
            exchange.send_event(name, data)
        exchange.end_stream()


async def test_a_stream_arrives_event_by_event(fake_api: FakeAnthropicServer) -> None:
    gate = GatedStream()
    fake_api.script(gate)
    seen: list[str] = []
    async with running_proxy(fake_api.base_url) as proxy, sdk_client(proxy.url) as client:
        stream = await client.messages.create(model=MODEL, max_tokens=20, messages=HI, stream=True)
        async for event in stream:
            seen.append(event.type)
            if len(seen) == 1:
                assert gate.sent == ["message_start"], "the first event reached the client before the upstream sent more"
                gate.release.set()
    assert not gate.waited_in_vain
    assert seen == [name for name in gate.sent if name != "ping"]  # the SDK skips pings


async def test_errors_and_retry_headers_pass_through(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    headers = {"retry-after": "7", "retry-after-ms": "7000", "anthropic-ratelimit-requests-remaining": "0",
               "x-should-retry": "true"}
    fake_api.script(error_reply(429, "rate_limit_error", "slow down", headers),
                    error_reply(529, "overloaded_error", "Overloaded"), ErrorEventMidStream())
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, sdk_client(proxy.url) as client:
        with pytest.raises(anthropic.RateLimitError) as limited:
            await client.messages.create(model=MODEL, max_tokens=20, messages=HI)
        with pytest.raises(anthropic.APIStatusError) as overloaded:
            await client.messages.create(model=MODEL, max_tokens=20, messages=HI)
        with pytest.raises(anthropic.APIStatusError) as mid_stream:
            async with client.messages.stream(model=MODEL, max_tokens=20, messages=HI) as stream:
                async for _ in stream:
                    pass
        calls = await proxy.finished(3)
    response = limited.value.response
    for name, value in headers.items():
        assert response.headers[name] == value
    assert limited.value.body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    assert overloaded.value.status_code == 529
    assert "Overloaded" in str(mid_stream.value)
    assert [(call.status, (call.error or {}).get("type")) for call in calls] == [
        (429, "rate_limit_error"), (529, "overloaded_error"), (200, "overloaded_error")]
    first = read_record(Path(calls[0].record or ""))
    assert first[1]["headers"]["retry-after"] == "7"
    assert first[1]["headers"]["anthropic-ratelimit-requests-remaining"] == "0"


class BothAtOnce(Response):
    """Answers only once two requests are in flight together (so a proxy that serialises them fails)."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier

    def respond(self, exchange: Exchange) -> None:
        self.barrier.wait(10)
        first = exchange.body["messages"][0]["content"]
        MessageReply([{"type": "text", "text": f"answer to {first}"}], chunks=4, delay=0.002).respond(exchange)


async def test_two_clients_at_once_are_recorded_apart(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    barrier = threading.Barrier(2)
    fake_api.default = lambda body: BothAtOnce(barrier)

    async def conversation(client: anthropic.AsyncAnthropic, opening: str) -> list[str]:
        history: list[Any] = [{"role": "user", "content": opening}]
        texts = []
        for turn in range(2):
            async with client.messages.stream(model=MODEL, max_tokens=20, messages=history) as stream:
                reply = await stream.get_final_message()
            texts.append(reply.content[0].text)  # type: ignore[union-attr]
            history += [{"role": "assistant", "content": texts[-1]}, {"role": "user", "content": f"go on {turn}"}]
        return texts

    async with running_proxy(fake_api.base_url, tmp_path) as proxy:
        async with sdk_client(proxy.url, default_headers={"User-Agent": "client-a/1"}) as a, \
                sdk_client(proxy.url, default_headers={"User-Agent": "client-b/1"}) as b:
            got_a, got_b = await asyncio.gather(conversation(a, "alpha"), conversation(b, "beta"))
        calls = await proxy.finished(4)
        conversations = proxy.watch.conversations
    assert got_a == ["answer to alpha"] * 2 and got_b == ["answer to beta"] * 2
    assert sorted(conversation.label for conversation in conversations) == ["alpha", "beta"]
    records = sorted((tmp_path / ".ctxtui" / "proxy").glob("*.jsonl"))
    assert len(records) == 4
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for path in records:
        request, response = read_record(path)
        opening = request["body"]["messages"][0]["content"]
        assert request["user_agent"] == {"alpha": "client-a/1", "beta": "client-b/1"}[opening]
        assert response["reply"]["content"][0]["text"] == f"answer to {opening}"
        by_agent.setdefault(request["user_agent"], []).append(request)
    assert {agent: len(requests) for agent, requests in by_agent.items()} == {"client-a/1": 2, "client-b/1": 2}
    second_turns = [call for call in calls if call.turn == 2]
    assert len(second_turns) == 2
    for call in second_turns:
        assert call.diff.added == (1, 2) and not call.diff.removed and not call.diff.changed
        first_turn = next(other for other in calls if other.id == call.diff.previous)
        assert first_turn.conversation == call.conversation and first_turn.user_agent == call.user_agent


async def test_a_client_that_hangs_up_closes_its_upstream_request(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(MessageReply([{"type": "text", "text": "x" * 400}], chunks=400, delay=0.01))
    async with running_proxy(fake_api.base_url) as proxy, sdk_client(proxy.url) as client:
        stream = await client.messages.create(model=MODEL, max_tokens=20, messages=HI, stream=True)
        async for event in stream:
            assert event.type == "message_start"
            break
        await stream.close()
        outcomes = await asyncio.to_thread(fake_api.wait_for_outcomes, 1, 10.0)
        calls = await proxy.finished(1)
    assert outcomes == ["client gone"], "the upstream saw its request closed, not run to its end"
    assert calls[0].outcome == "client_gone"


async def test_an_upstream_that_is_down_gives_a_502_and_the_proxy_goes_on(fake_api: FakeAnthropicServer) -> None:
    port = fake_api.port
    fake_api.stop()
    async with running_proxy(f"http://127.0.0.1:{port}") as proxy, sdk_client(proxy.url) as client:
        with pytest.raises(anthropic.InternalServerError) as down:
            await client.messages.create(model=MODEL, max_tokens=20, messages=HI)
        with FakeAnthropicServer(port=port) as back:
            back.script(text_reply("back again"))
            reply = await client.messages.create(model=MODEL, max_tokens=20, messages=HI)
        calls = await proxy.finished(2)
    assert down.value.status_code == 502
    error = down.value.body["error"]  # type: ignore[index]
    assert error["type"] == "api_error" and f"127.0.0.1:{port} cannot be reached" in error["message"]
    assert reply.content[0].text == "back again"  # type: ignore[union-attr]
    assert [call.outcome for call in calls] == ["unreachable", "complete"]


async def test_an_upstream_that_breaks_off_breaks_off_the_client_too(fake_api: FakeAnthropicServer) -> None:
    fake_api.script(reset_mid_stream(), reset_mid_stream())
    failures: list[type[BaseException]] = []
    async with running_proxy(fake_api.base_url) as proxy:
        for base_url in (fake_api.base_url, proxy.url):
            async with sdk_client(base_url) as client:
                with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)) as broken:
                    async with client.messages.stream(model=MODEL, max_tokens=20, messages=HI) as stream:
                        async for _ in stream:
                            pass
                failures.append(type(broken.value))
        calls = await proxy.finished(1)
    assert failures[1] is failures[0], "the client fails through the proxy as it fails without it"
    assert calls[0].outcome == "upstream_cut" and not calls[0].complete


async def test_other_endpoints_pass_through_unrecorded(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.models["claude-sonnet-5-5"] = 1_000_000
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, sdk_client(proxy.url) as client:
        counted = await client.messages.count_tokens(model=MODEL, messages=HI)
        model = await client.models.retrieve(MODEL)
    assert counted.input_tokens > 0 and model.max_input_tokens == 1_000_000
    assert not (tmp_path / ".ctxtui" / "proxy").exists() or not list((tmp_path / ".ctxtui" / "proxy").iterdir())
    assert proxy.watch.calls == []


async def test_only_v1_paths_on_a_loopback_host_are_served(fake_api: FakeAnthropicServer) -> None:
    async with running_proxy(fake_api.base_url) as proxy, httpx2.AsyncClient() as http:
        elsewhere = await http.get(f"{proxy.url}/admin")
        rebound = await http.post(f"{proxy.url}/v1/messages", headers={"Host": "evil.example:80"}, content=b"{}")
    assert elsewhere.status_code == 404 and elsewhere.json()["error"]["type"] == "not_found_error"
    assert rebound.status_code == 403 and rebound.json()["error"]["type"] == "permission_error"
    assert fake_api.requests == []


def test_the_server_refuses_a_host_that_is_not_loopback() -> None:
    from core.proxy.server import ProxyError, ProxyServer

    with pytest.raises(ProxyError, match="loopback only"):
        ProxyServer("https://api.anthropic.com", host="0.0.0.0")


def test_the_key_used_here_is_not_a_real_one() -> None:
    assert TEST_KEY.startswith("sk-ant-api03-proxy-test")


class GzippedReply(Response):
    """A whole JSON reply sent gzip-compressed, as an upstream may when the client accepts it."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def respond(self, exchange: Exchange) -> None:
        exchange.send_json_bytes(200, self.data, {"content-encoding": "gzip"})


async def test_compressed_bodies_pass_compressed_both_ways(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    message = fixed_reply().message_body({"model": MODEL})
    packed_reply = gzip.compress(json.dumps(message).encode(), mtime=0)
    fake_api.script(GzippedReply(packed_reply))
    packed_request = gzip.compress(json.dumps({"model": MODEL, "max_tokens": 5, "messages": HI}).encode(), mtime=0)
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, httpx2.AsyncClient() as http:
        headers = {"content-type": "application/json", "content-encoding": "gzip", "accept-encoding": "gzip"}
        async with http.stream("POST", f"{proxy.url}/v1/messages", content=packed_request, headers=headers) as reply:
            received = b"".join([chunk async for chunk in reply.aiter_raw()])
            encoding = reply.headers["content-encoding"]
        (call,) = await proxy.finished(1)
    assert fake_api.requests[0].raw == packed_request, "the request went on compressed, as sent"
    assert received == packed_reply and encoding == "gzip", "the reply came back compressed, as sent"
    assert call.messages == HI and call.reply == message, "the recording reads both through their encoding"


async def test_a_request_of_several_megabytes_passes_whole(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    big = [{"role": "user", "content": "a long file:\n" + "line of code ✓\n" * 250_000}]
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, sdk_client(proxy.url) as client:
        reply = await client.messages.create(model=MODEL, max_tokens=5, messages=big)  # type: ignore[arg-type]
        (call,) = await proxy.finished(1)
    assert reply.content[0].text == "ok"  # type: ignore[union-attr]
    assert len(fake_api.requests[0].raw) > 3_000_000
    assert call.messages == big and call.chars > 3_000_000
