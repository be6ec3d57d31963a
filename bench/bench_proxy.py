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

Run: python bench/bench_proxy.py [CALLS] [STREAMS]
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2

from tests.support.fakeapi import Exchange, FakeAnthropicServer, Response, text_reply

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
STREAMS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
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


def body(stream: bool, tag: str = "") -> bytes:
    return json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 16, "stream": stream, "metadata": {"user_id": tag},
                       "messages": [{"role": "user", "content": "ping"}]}).encode()


async def small_call(client: httpx2.AsyncClient, base: str) -> float:
    start = time.perf_counter()
    response = await client.post(f"{base}/v1/messages", content=body(False), headers=HEADERS)
    await response.aread()
    assert response.status_code == 200, response.text
    return time.perf_counter() - start


async def timed_stream(client: httpx2.AsyncClient, base: str, tag: str) -> tuple[float, list[float]]:
    """(request -> first event, [event sent -> event received] per event)."""
    received: dict[int, float] = {}
    start = time.perf_counter()
    buffer = b""
    async with client.stream("POST", f"{base}/v1/messages", content=body(True, tag), headers=HEADERS) as response:
        async for chunk in response.aiter_raw():
            now = time.perf_counter()
            buffer += chunk
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                data = frame.partition(b"data: ")[2]
                if data:
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


async def measure(targets: dict[str, str]) -> None:
    limits = httpx2.Limits(max_keepalive_connections=10)
    async with httpx2.AsyncClient(limits=limits, timeout=30) as client:
        for _ in range(WARMUP):
            for base in targets.values():
                await small_call(client, base)
        times: dict[str, list[float]] = {name: [] for name in targets}
        for _ in range(CALLS):
            for name, base in targets.items():
                times[name].append(await small_call(client, base))
        direct = times["direct"]
        print(f"small calls: {CALLS} per target, alternating (time to the whole reply)")
        print(f"  {'target':<22} {'median':>10} {'p95':>10} {'added (median of pairs)':>26} {'ratio':>7}")
        for name, values in times.items():
            added = statistics.median(value - base for value, base in zip(values, direct, strict=True))
            ratio = statistics.median(values) / statistics.median(direct)
            print(f"  {name:<22} {ms(statistics.median(values))} {ms(p95(values))} {ms(added):>26} {ratio:6.2f}x")

        firsts: dict[str, list[float]] = {name: [] for name in targets}
        lags: dict[str, list[float]] = {name: [] for name in targets}
        for round_ in range(STREAMS):
            for name, base in targets.items():
                first, lag = await timed_stream(client, base, f"{name}-{round_}")
                firsts[name].append(first)
                lags[name].extend(lag)
        print(f"\nstreams: {STREAMS} per target, {EVENTS} events each, {EVENT_GAP * 1000:.0f} ms apart")
        print(f"  {'target':<22} {'first event':>12} {'added':>11} {'event lag':>11} {'added/event':>12} "
              f"{'lag p95':>10}")
        for name in targets:
            first = statistics.median(firsts[name])
            lag = statistics.median(lags[name])
            print(f"  {name:<22} {ms(first):>12} {ms(first - statistics.median(firsts['direct'])):>11} "
                  f"{ms(lag):>11} {ms(lag - statistics.median(lags['direct'])):>12} {ms(p95(lags[name])):>10}")
    print("\ngoals: < 5 ms median added per call; < 1 ms added per streamed event")


def main() -> None:
    with FakeAnthropicServer(default=text_reply("pong")) as fake, tempfile.TemporaryDirectory() as workdir:
        fake.default = lambda request: TimedStream() if request.get("stream") else text_reply("pong")
        with proxy_process(fake.base_url, "--workdir", workdir) as recording, \
                proxy_process(fake.base_url, "--no-record") as plain:
            targets = {"direct": fake.base_url, "proxy (recording)": recording, "proxy (--no-record)": plain}
            load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
            print(f"ctxtui proxy vs direct, loopback fake upstream; python {sys.version.split()[0]}, "
                  f"{os.cpu_count()} cores, load average {load} (other work on the machine shows in every row)\n")
            asyncio.run(measure(targets))
            records = len(list((Path(workdir) / ".ctxtui" / "proxy").glob("*.jsonl")))
            print(f"(the recording proxy wrote {records} record files)")


if __name__ == "__main__":
    main()
