"""What `ctxtui proxy` adds to a call: latency per small call, first-event delay and per-event delay on a stream.

The upstream is the loopback fake Messages API (tests/support/fakeapi.py) in this process; the proxy
runs as `ctxtui proxy --port 0 --headless` in its own process, as a person runs it, once recording
(the default) and once with `--no-record`. The client is httpx2 (the SDK's HTTP client) so that
client-side parsing is not in the figures. Calls alternate: direct, through each proxy, direct, ...
so that load on the machine hits all of them alike.

1. Small calls: N non-streamed `/v1/messages` calls (a short reply); median and p95 of the time to
   the whole reply, direct and through the proxy, and what the proxy adds (median of the
   per-round differences).
2. Streams: each event carries its number; the fake notes the time it sends it, the client the time
   its bytes arrive (one clock: both run here). First-event delay = request sent -> first event
   received; per-event lag = event sent -> event received. The proxy's share of each is the
   difference with the direct figure.

Goals (issue 22): under 5 ms median added per call, under 1 ms added per streamed event.

3. The same for OpenAI's formats (issue 33): `/v1/chat/completions` (chunks with `choices[].delta`,
   then `data: [DONE]`) and `/v1/responses` (`response.output_text.delta` events, then
   `response.completed` with usage), against a loopback stand-in for OpenAI's API run here on a
   thread of its own (aiohttp), through two more proxies whose `--upstream` it is. Same goals.

Run: python bench/bench_proxy.py [CALLS] [STREAMS] [WIRES]   (WIRES: messages,chat,responses; default all)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2
from aiohttp import web

from tests.support.fakeapi import Exchange, FakeAnthropicServer, Response, text_reply

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
STREAMS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
WIRES = sys.argv[3].split(",") if len(sys.argv) > 3 else ["messages", "chat", "responses"]
EVENTS = 40  # per stream
EVENT_GAP = 0.004  # seconds between two events of a stream: each arrives on its own
WARMUP = 20
ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"x-api-key": "sk-ant-bench-not-a-key", "anthropic-version": "2023-06-01", "content-type": "application/json"}


class TimedStream(Response):
    """A stream of numbered events; the time each is sent is kept in `sent[(stream, n)]`."""

    sent: ClassVar[dict[tuple[str, int], float]] = {}
    lock: ClassVar[threading.Lock] = threading.Lock()

    def respond(self, exchange: Exchange) -> None:
        stream = str(exchange.body.get("metadata", {}).get("user_id"))
        exchange.start_stream()
        for number in range(EVENTS):
            if number:
                exchange.sleep(EVENT_GAP)
            with self.lock:
                self.sent[(stream, number)] = time.perf_counter()
            exchange.send_event("content_block_delta", {"type": "content_block_delta", "index": 0, "n": number,
                                                        "delta": {"type": "text_delta", "text": "x"}})
        exchange.send_event("message_stop", {"type": "message_stop"})
        exchange.end_stream()


@contextmanager
def proxy_process(upstream: str, *flags: str) -> Iterator[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANTHROPIC_", "CTXTUI_"))}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen([sys.executable, "-m", "tui.cli", "proxy", "--port", "0", "--headless",
                                "--upstream", upstream, *flags], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    match = re.match(r"listening on (http://127\.0\.0\.1:\d+)", process.stdout.readline())
    if match is None:
        process.kill()
        raise SystemExit("ctxtui proxy did not start")
    drain = threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True)  # type: ignore[union-attr]
    drain.start()
    try:
        yield match[1]
    finally:
        process.terminate()
        process.wait(20)


def body(stream: bool, tag: str = "", wire: str = "messages") -> bytes:
    if wire == "chat":
        return json.dumps({"model": "gpt-4o", "stream": stream, "user": tag,
                           "messages": [{"role": "user", "content": "ping"}]}).encode()
    if wire == "responses":
        return json.dumps({"model": "gpt-5", "stream": stream, "metadata": {"tag": tag}, "input": "ping"}).encode()
    return json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 16, "stream": stream, "metadata": {"user_id": tag},
                       "messages": [{"role": "user", "content": "ping"}]}).encode()


PATHS = {"messages": "/v1/messages", "chat": "/v1/chat/completions", "responses": "/v1/responses"}
OPENAI_HEADERS = {"authorization": "Bearer sk-proj-bench-not-a-key-0123456789", "content-type": "application/json"}


def headers_for(wire: str) -> dict[str, str]:
    return HEADERS if wire == "messages" else OPENAI_HEADERS


class OpenAIUpstream:
    """A loopback stand-in for OpenAI's two endpoints on a thread and event loop of its own: a short JSON
    answer, or a stream of EVENTS numbered events (their send times kept in TimedStream.sent)."""

    def __init__(self) -> None:
        self.port = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> OpenAIUpstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = int(runner.addresses[0][1])
        self._ready.set()
        self._loop.run_forever()

    async def _stream(self, request: web.Request, tag: str, frame: Callable[[int], bytes], last: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for number in range(EVENTS):
            if number:
                await asyncio.sleep(EVENT_GAP)
            with TimedStream.lock:
                TimedStream.sent[(tag, number)] = time.perf_counter()
            await response.write(frame(number))
        await response.write(last)
        await response.write_eof()
        return response

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        sent = await request.json()
        usage = {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9,
                 "prompt_tokens_details": {"cached_tokens": 0}}
        if not sent.get("stream"):
            return web.json_response({"id": "chatcmpl_1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": "pong"}}],
                                      "usage": usage})

        def frame(number: int) -> bytes:
            chunk = {"id": "chatcmpl_1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                     "n": number, "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
            return b"data: " + json.dumps(chunk).encode() + b"\n\n"

        return await self._stream(request, str(sent.get("user")), frame, b"data: [DONE]\n\n")

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        sent = await request.json()
        usage = {"input_tokens": 8, "output_tokens": 1, "total_tokens": 9, "input_tokens_details": {"cached_tokens": 0}}
        done = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5", "usage": usage,
                "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "pong", "annotations": []}]}]}
        if not sent.get("stream"):
            return web.json_response(done)

        def frame(number: int) -> bytes:
            event = {"type": "response.output_text.delta", "n": number, "item_id": "msg_1", "output_index": 0,
                     "content_index": 0, "delta": "x", "sequence_number": number}
            return b"event: response.output_text.delta\ndata: " + json.dumps(event).encode() + b"\n\n"

        last = {"type": "response.completed", "response": done, "sequence_number": EVENTS}
        tag = str((sent.get("metadata") or {}).get("tag"))
        return await self._stream(request, tag, frame, b"event: response.completed\ndata: " + json.dumps(last).encode()
                                  + b"\n\n")


async def small_call(client: httpx2.AsyncClient, base: str, wire: str = "messages") -> float:
    start = time.perf_counter()
    response = await client.post(f"{base}{PATHS[wire]}", content=body(False, wire=wire), headers=headers_for(wire))
    await response.aread()
    assert response.status_code == 200, response.text
    return time.perf_counter() - start


async def timed_stream(client: httpx2.AsyncClient, base: str, tag: str, wire: str = "messages") -> tuple[float, list[float]]:
    """(request -> first event, [event sent -> event received] per event)."""
    received: dict[int, float] = {}
    start = time.perf_counter()
    buffer = b""
    async with client.stream("POST", f"{base}{PATHS[wire]}", content=body(True, tag, wire),
                             headers=headers_for(wire)) as response:
        async for chunk in response.aiter_raw():
            now = time.perf_counter()
            buffer += chunk
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                data = frame.partition(b"data: ")[2]
                if data and data != b"[DONE]":
                    number = json.loads(data).get("n")
                    if number is not None:
                        received[number] = now
    first = min(received.values()) - start
    with TimedStream.lock:
        lags = [received[n] - TimedStream.sent[(tag, n)] for n in sorted(received)]
    return first, lags


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def ms(value: float) -> str:
    return f"{value * 1000:7.3f} ms"


async def measure(targets: dict[str, str], wire: str = "messages") -> None:
    limits = httpx2.Limits(max_keepalive_connections=10)
    async with httpx2.AsyncClient(limits=limits, timeout=30) as client:
        for _ in range(WARMUP):
            for base in targets.values():
                await small_call(client, base, wire)
        times: dict[str, list[float]] = {name: [] for name in targets}
        for _ in range(CALLS):
            for name, base in targets.items():
                times[name].append(await small_call(client, base, wire))
        direct = times["direct"]
        print(f"[{PATHS[wire]}] small calls: {CALLS} per target, alternating (time to the whole reply)")
        print(f"  {'target':<22} {'median':>10} {'p95':>10} {'added (median of pairs)':>26} {'ratio':>7}")
        for name, values in times.items():
            added = statistics.median(value - base for value, base in zip(values, direct, strict=True))
            ratio = statistics.median(values) / statistics.median(direct)
            print(f"  {name:<22} {ms(statistics.median(values))} {ms(p95(values))} {ms(added):>26} {ratio:6.2f}x")

        firsts: dict[str, list[float]] = {name: [] for name in targets}
        lags: dict[str, list[float]] = {name: [] for name in targets}
        for round_ in range(STREAMS):
            for name, base in targets.items():
                first, lag = await timed_stream(client, base, f"{wire}-{name}-{round_}", wire)
                firsts[name].append(first)
                lags[name].extend(lag)
        print(f"\n[{PATHS[wire]}] streams: {STREAMS} per target, {EVENTS} events each, {EVENT_GAP * 1000:.0f} ms apart")
        print(f"  {'target':<22} {'first event':>12} {'added':>11} {'event lag':>11} {'added/event':>12} "
              f"{'lag p95':>10}")
        for name in targets:
            first = statistics.median(firsts[name])
            lag = statistics.median(lags[name])
            print(f"  {name:<22} {ms(first):>12} {ms(first - statistics.median(firsts['direct'])):>11} "
                  f"{ms(lag):>11} {ms(lag - statistics.median(lags['direct'])):>12} {ms(p95(lags[name])):>10}")
    print("\ngoals: < 5 ms median added per call; < 1 ms added per streamed event\n")


def main() -> None:
    with FakeAnthropicServer(default=text_reply("pong")) as fake, OpenAIUpstream() as openai, \
            tempfile.TemporaryDirectory() as workdir, tempfile.TemporaryDirectory() as openai_workdir:
        fake.default = lambda request: TimedStream() if request.get("stream") else text_reply("pong")
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(f"ctxtui proxy vs direct, loopback fake upstreams; python {sys.version.split()[0]}, "
              f"{os.cpu_count()} cores, load average {load} (other work on the machine shows in every row)\n")
        if "messages" in WIRES:
            with proxy_process(fake.base_url, "--workdir", workdir) as recording, \
                    proxy_process(fake.base_url, "--no-record") as plain:
                targets = {"direct": fake.base_url, "proxy (recording)": recording, "proxy (--no-record)": plain}
                asyncio.run(measure(targets))
        openai_wires = [wire for wire in WIRES if wire in ("chat", "responses")]
        if openai_wires:
            with proxy_process(openai.base_url, "--workdir", openai_workdir) as recording, \
                    proxy_process(openai.base_url, "--no-record") as plain:
                targets = {"direct": openai.base_url, "proxy (recording)": recording, "proxy (--no-record)": plain}
                for wire in openai_wires:
                    asyncio.run(measure(targets, wire))
        for folder in (workdir, openai_workdir):
            records = len(list((Path(folder) / ".ctxtui" / "proxy").glob("*.jsonl")))
            print(f"(a recording proxy wrote {records} record files)")


if __name__ == "__main__":
    main()
