"""What one exchange may cost `ctxtui proxy` (issue 30, items 1, 2 and 6): memory bounded by its limits,
a decompression bomb stopped while it inflates, and numbers that are no numbers recorded as unknown.

Memory is measured with tracemalloc over the whole process (the fake upstream's thread, the proxy and
the client alike), with bounds far from both the limit set and what an unbounded copy would hold.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from core.proxy.calls import CallFinished, ProxyCall, ProxyNotice
from core.proxy.limits import MIB, ProxyLimits
from core.proxy.record import Recorder
from core.proxy.server import ProxyServer
from core.proxy.sse import BodyTooLarge, decode_body, read_reply
from core.proxy.watch import Watch
from tests.support.fakeapi import Exchange, FakeAnthropicServer, Response, text_reply
from tests.support.proxy import TEST_KEY, read_record

MODEL = "claude-sonnet-5-5"
HEADERS = {"content-type": "application/json", "x-api-key": TEST_KEY, "anthropic-version": "2023-06-01"}
REQUEST = {"model": MODEL, "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}


class Proxy:
    """A proxy with the given limits on a free port; its watch's events are read from the start."""

    def __init__(self, server: ProxyServer, watch: Watch) -> None:
        self.server, self.watch = server, watch
        self.calls: list[ProxyCall] = []
        self.notices: list[str] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for event in self.watch.events():
            if isinstance(event, ProxyNotice):
                self.notices.append(event.message)
            elif isinstance(event, CallFinished):
                self.calls.append(event.call)
            self._changed.set()

    @property
    def url(self) -> str:
        return self.server.url

    async def finished(self, count: int) -> tuple[list[ProxyCall], list[str]]:
        """The first `count` finished calls, and the notices published until the last of them ended."""
        while len(self.calls) < count:
            self._changed.clear()
            await self._changed.wait()
        return self.calls[:count], list(self.notices)


@asynccontextmanager
async def proxy_with(upstream: str, workdir: Path | None, limits: ProxyLimits) -> AsyncIterator[Proxy]:
    watch = Watch(Recorder(workdir) if workdir is not None else None, limits)
    server = ProxyServer(upstream, watch, limits=limits)
    await server.start()
    proxy = Proxy(server, watch)
    try:
        yield proxy
    finally:
        await server.aclose()
        await watch.aclose()
        await proxy._reader


@contextmanager
def traced() -> Iterator[list[int]]:
    """tracemalloc on for the block; yields [baseline, peak above it] (filled in at the end)."""
    tracemalloc.start()
    result = [tracemalloc.get_traced_memory()[0], 0]
    tracemalloc.reset_peak()
    try:
        yield result
    finally:
        result[1] = tracemalloc.get_traced_memory()[1] - result[0]
        tracemalloc.stop()


def size_of(path: str | None) -> int:
    return Path(path or "").stat().st_size


def held_since(baseline: int) -> int:
    return tracemalloc.get_traced_memory()[0] - baseline


def frame(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


# --- 1. a reply without end --------------------------------------------------------------------------

DELTA = frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": "x" * 65_536}})
OPENING = [
    frame("message_start", {"type": "message_start", "message": {
        "id": "msg_long", "type": "message", "role": "assistant", "model": MODEL, "content": [],
        "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    frame("content_block_start", {"type": "content_block_start", "index": 0,
                                  "content_block": {"type": "text", "text": ""}}),
]
CLOSING = [
    frame("content_block_stop", {"type": "content_block_stop", "index": 0}),
    frame("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                            "usage": {"output_tokens": 9}}),
    frame("message_stop", {"type": "message_stop"}),
]


class LongStream(Response):
    """Streams `deltas` text deltas of 64 KiB, then waits for `release` (the stream is still open while the
    test looks), then ends the message."""

    def __init__(self, deltas: int) -> None:
        self.deltas = deltas
        self.release = threading.Event()

    @property
    def before_release(self) -> int:
        return sum(map(len, OPENING)) + self.deltas * len(DELTA)

    @property
    def total(self) -> int:
        return self.before_release + sum(map(len, CLOSING))

    def respond(self, exchange: Exchange) -> None:
        exchange.start_stream()
        for data in [*OPENING, *[DELTA] * self.deltas]:
            exchange._write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.release.wait(60)
        for data in CLOSING:
            exchange._write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        exchange.end_stream()


async def test_a_long_reply_reaches_the_client_whole_while_the_proxy_keeps_only_its_limit(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    stream = LongStream(deltas=768)  # 48 MiB
    fake_api.script(stream)
    limit = 1 * MIB
    with traced() as memory:
        async with proxy_with(fake_api.base_url, tmp_path, ProxyLimits(reply_bytes=limit)) as proxy, \
                httpx2.AsyncClient(timeout=60) as client:
            received = 0
            async with client.stream("POST", f"{proxy.url}/v1/messages", headers=HEADERS,
                                     json={**REQUEST, "stream": True}) as response:
                chunks = response.aiter_raw()
                async for chunk in chunks:
                    received += len(chunk)
                    if received >= stream.before_release:
                        break
                held_mid_stream = held_since(memory[0])  # 48 MiB went through; the stream has not ended
                stream.release.set()
                async for chunk in chunks:
                    received += len(chunk)
            (call,), notices = await proxy.finished(1)
    assert received == stream.total, "the client got every byte"
    assert held_mid_stream < 8 * MIB, f"{held_mid_stream / MIB:.1f} MiB held while 48 MiB streamed through"
    assert memory[1] < 16 * MIB, f"peak {memory[1] / MIB:.1f} MiB"
    assert call.outcome == "complete" and not call.complete
    text = call.reply["content"][0]["text"] if call.reply else ""
    assert 0 < len(text) <= limit and set(text) == {"x"}, "the view has the reply as far as it was kept"
    _, response_record = read_record(Path(call.record or ""))
    assert response_record["bytes"] == stream.total and response_record["cut"]["kept_bytes"] == limit
    assert not response_record["complete"]
    assert any("over proxy_reply_limit" in problem for problem in response_record["problems"])
    assert any("over proxy_reply_limit" in notice for notice in notices)
    assert size_of(call.record) < 2 * limit


# --- 2. bodies inflated only so far ------------------------------------------------------------------


def gzip_of_zeros(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MIB)
    return b"".join([*(packer.compress(block) for _ in range(size // MIB)), packer.flush()])


def test_a_decompression_bomb_stops_while_it_inflates() -> None:
    bomb = gzip_of_zeros(64 * MIB)
    assert len(bomb) < 100_000
    with traced() as memory, pytest.raises(BodyTooLarge, match="past the limit of 1,048,576 bytes"):
        decode_body(bomb, "gzip", 1 * MIB)
    assert memory[1] < 8 * MIB, f"peak {memory[1] / MIB:.1f} MiB inflating a 64 MiB bomb with a 1 MiB limit"
    assert decode_body(gzip.compress(b"small") + gzip.compress(b" and more"), "gzip", 1 * MIB) == b"small and more"
    reply = read_reply(bomb, "application/json", "gzip", limit=MIB)
    assert reply.message is None and "past the limit" in reply.problems[0]


async def test_a_gzip_bomb_request_is_forwarded_as_sent_and_recorded_without_its_body(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    bomb = gzip_of_zeros(16 * MIB)  # ~16 KiB on the wire
    with traced() as memory:
        async with proxy_with(fake_api.base_url, tmp_path, ProxyLimits(body_bytes=1 * MIB)) as proxy, \
                httpx2.AsyncClient(timeout=60) as client:
            reply = await client.post(f"{proxy.url}/v1/messages", content=bomb,
                                      headers={**HEADERS, "content-encoding": "gzip"})
            (call,), notices = await proxy.finished(1)
            again = await client.post(f"{proxy.url}/v1/messages", json=REQUEST, headers=HEADERS)
            await proxy.finished(2)
    assert reply.status_code == 200 and again.status_code == 200, "forwarded, and the proxy goes on"
    assert fake_api.requests[0].raw == bomb, "the upstream got the bytes the client sent"
    assert memory[1] < 12 * MIB, f"peak {memory[1] / MIB:.1f} MiB for a 16 MiB bomb with a 1 MiB body limit"
    assert size_of(call.record) < 64 * 1024, f"the recording is {size_of(call.record):,} bytes"
    request_record, response_record = read_record(Path(call.record or ""))
    assert "over proxy_body_limit" in request_record["body_error"] and "body" not in request_record
    assert request_record["body_text"] == "" and request_record["body_bytes"] == len(bomb)
    assert response_record["status"] == 200
    assert call.body_error is not None and "inflates past 1,048,576 bytes" in call.body_error
    assert any("over proxy_body_limit" in notice for notice in notices)


async def test_a_body_over_the_request_limit_gets_a_413_and_the_proxy_goes_on(
        fake_api: FakeAnthropicServer) -> None:
    large = {**REQUEST, "messages": [{"role": "user", "content": "y" * 200_000}]}

    async def without_length() -> AsyncIterator[bytes]:  # chunked: the proxy finds out while reading
        yield json.dumps(large).encode()

    async with proxy_with(fake_api.base_url, None, ProxyLimits(request_bytes=100_000)) as proxy, \
            httpx2.AsyncClient(timeout=60) as client:
        refused = await client.post(f"{proxy.url}/v1/messages", json=large, headers=HEADERS)
        chunked = await client.post(f"{proxy.url}/v1/messages", content=without_length(), headers=HEADERS)
        fine = await client.post(f"{proxy.url}/v1/messages", json=REQUEST, headers=HEADERS)
    for response in (refused, chunked):
        assert response.status_code == 413 and response.headers["x-should-retry"] == "false"
        assert response.json() == {"type": "error", "error": {
            "type": "request_too_large", "message": "ctxtui proxy: the request body is over 100,000 bytes "
                                                    "(proxy_request_limit)"}}
    assert fine.status_code == 200 and len(fake_api.requests) == 1


async def test_a_request_body_that_is_not_json_is_recorded_as_a_short_preview(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    body = b"\x00" * (4 * MIB)
    async with proxy_with(fake_api.base_url, tmp_path, ProxyLimits()) as proxy, \
            httpx2.AsyncClient(timeout=60) as client:
        reply = await client.post(f"{proxy.url}/v1/messages", content=body, headers=HEADERS)
        (call,), _ = await proxy.finished(1)
    assert reply.status_code == 200 and fake_api.requests[0].raw == body
    assert size_of(call.record) < 64 * 1024, f"{size_of(call.record):,} bytes for a 4 MiB body that is not JSON"
    request_record, _ = read_record(Path(call.record or ""))
    assert request_record["body_error"].startswith("not JSON") and request_record["body_bytes"] == 4 * MIB
    assert request_record["body_text"] == "\x00" * 4096


# --- 6. numbers that are no numbers ------------------------------------------------------------------

BAD_USAGE = ('{"input_tokens": NaN, "output_tokens": Infinity, "cache_read_input_tokens": 1e400, '
             '"cache_creation_input_tokens": -3, "server_tool_use": {"web_search_requests": 2.5}, '
             '"service_tier": "standard"}')


class RawReply(Response):
    """A reply whose bytes are given as they are (JSON that Python's json module would not write)."""

    def __init__(self, data: bytes, stream: bool) -> None:
        self.data, self.stream = data, stream

    def respond(self, exchange: Exchange) -> None:
        if self.stream:
            exchange.start_stream()
            exchange._write(f"{len(self.data):x}\r\n".encode() + self.data + b"\r\n")
            exchange.end_stream()
        else:
            exchange.send_json_bytes(200, self.data)


def bad_message() -> bytes:
    return ('{"id": "msg_bad", "type": "message", "role": "assistant", "model": "' + MODEL + '", '
            '"content": [{"type": "text", "text": "odd figures"}], "stop_reason": "end_turn", '
            f'"usage": {BAD_USAGE}}}').encode()


def bad_stream() -> bytes:
    start = ('{"type": "message_start", "message": {"id": "msg_bad", "type": "message", "role": "assistant", '
             f'"model": "{MODEL}", "content": [], "stop_reason": null, "usage": {{"input_tokens": 4, '
             '"output_tokens": 1}}}')
    events = [
        ("message_start", start),
        ("content_block_start", '{"type": "content_block_start", "index": 0, "content_block": {"type": "text", '
                                '"text": ""}}'),
        ("content_block_delta", '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", '
                                '"text": "odd figures"}}'),
        ("content_block_delta", '{"type": "content_block_delta", "index": 1e400, "delta": {"type": "text_delta", '
                                '"text": "lost"}}'),
        ("content_block_start", '{"type": "content_block_start", "index": NaN, "content_block": {"type": "text"}}'),
        ("content_block_stop", '{"type": "content_block_stop", "index": 0}'),
        ("message_delta", '{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": '
                          '{"output_tokens": NaN, "input_tokens": 1e400}}'),
        ("message_stop", '{"type": "message_stop"}'),
    ]
    return "".join(f"event: {name}\ndata: {data}\n\n" for name, data in events).encode()


def strict_records(path: str | None) -> list[Any]:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} in a record")

    text = Path(path or "").read_text(encoding="utf-8")
    return [json.loads(line, parse_constant=refuse) for line in text.split("\n") if line]


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
async def test_a_reply_whose_usage_is_no_number_is_recorded_with_it_unknown(
        fake_api: FakeAnthropicServer, tmp_path: Path, streamed: bool) -> None:
    fake_api.script(RawReply(bad_stream() if streamed else bad_message(), streamed), text_reply("fine"))
    async with proxy_with(fake_api.base_url, tmp_path, ProxyLimits()) as proxy, \
            httpx2.AsyncClient(timeout=60) as client:
        first = await client.post(f"{proxy.url}/v1/messages", json={**REQUEST, "stream": streamed}, headers=HEADERS)
        second = await client.post(f"{proxy.url}/v1/messages", json=REQUEST, headers=HEADERS)
        (odd, fine), notices = await proxy.finished(2)
    assert first.status_code == second.status_code == 200
    assert odd.outcome == "complete" and odd.usage is None and odd.cost is None, "unknown, never a made-up figure"
    assert odd.reply is not None and odd.reply["content"][0]["text"] == "odd figures"
    assert fine.usage is not None and fine.cost is not None
    records = strict_records(odd.record)  # no NaN or Infinity in the file: every line is strict JSON
    response = records[1]
    assert response["type"] == "proxy_response" and response["cost"] is None
    usage = response["usage"]
    assert usage["input_tokens"] is None and usage["output_tokens"] is None
    if streamed:
        assert any("index" in problem for problem in response["problems"])
    else:
        assert usage["cache_read_input_tokens"] is None and usage["cache_creation_input_tokens"] is None
        assert usage["server_tool_use"] == {"web_search_requests": None} and usage["service_tier"] == "standard"
    assert any("usage.input_tokens" in problem and "recorded as unknown" in problem
               for problem in response["problems"])
    assert any("usage.output_tokens" in notice for notice in notices), notices
