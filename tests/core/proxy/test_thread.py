"""The proxy on a loop of its own (`ProxyThread`), read from the caller's loop: what `ctxtui proxy`'s
live view runs, so that the view's work on its loop never holds up a reply."""

from __future__ import annotations

import asyncio
import socket
import threading
from contextlib import aclosing
from pathlib import Path

import anthropic
import pytest

from core.proxy.calls import CallFinished, CallStarted, ProxyEvent
from core.proxy.record import Recorder
from core.proxy.server import ProxyError
from core.proxy.thread import ProxyThread
from tests.support.fakeapi import FakeAnthropicServer, text_reply
from tests.support.proxy import TEST_KEY, sdk_client

MODEL = "claude-sonnet-5-5"


async def collect(proxy: ProxyThread, seen: list[ProxyEvent]) -> None:
    async with aclosing(proxy.events()) as events:
        async for event in events:
            seen.append(event)


async def until(condition: object, what: str) -> None:
    for _ in range(1_000):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_events_reach_the_callers_loop_and_stop_ends_them(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(text_reply("one"), text_reply("two"))
    proxy = ProxyThread(fake_api.base_url, Recorder(tmp_path))
    proxy.start()
    seen: list[ProxyEvent] = []
    reader = asyncio.create_task(collect(proxy, seen))
    try:
        async with sdk_client(proxy.url) as client:
            await client.messages.create(model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
            await client.messages.create(model=MODEL, max_tokens=20, messages=[
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": "one"},
                {"role": "user", "content": "more"}])
        await until(lambda: len(seen) == 4, "four events")
        late: list[ProxyEvent] = []
        late_reader = asyncio.create_task(collect(proxy, late))
        await until(lambda: len(late) == 4, "the calls so far, replayed to a later reader")
    finally:
        await asyncio.to_thread(proxy.stop)
    await asyncio.wait_for(asyncio.gather(reader, late_reader), 10)  # stop() ended both streams
    assert [type(event) for event in seen] == [CallStarted, CallFinished, CallStarted, CallFinished]
    assert [type(event) for event in late] == [type(event) for event in seen]
    finished = [event.call for event in seen if isinstance(event, CallFinished)]
    assert [call.turn for call in finished] == [1, 2] and all(call.usage is not None for call in finished)
    assert proxy.calls == 2 and len(list((tmp_path / ".ctxtui" / "proxy").glob("*.jsonl"))) == 2
    assert [event async for event in proxy.events()] == [], "a stopped proxy has no more events"


async def test_the_proxy_answers_while_the_callers_loop_is_blocked(fake_api: FakeAnthropicServer) -> None:
    """A client call completes while this loop does nothing but wait for it: the proxy does not run here."""
    fake_api.script(text_reply("answered"))
    proxy = ProxyThread(fake_api.base_url)
    proxy.start()
    answered = threading.Event()
    replies: list[str] = []

    def client_call() -> None:
        client = anthropic.Anthropic(base_url=proxy.url, api_key=TEST_KEY, max_retries=0)
        message = client.messages.create(model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
        replies.append(message.content[0].text)  # type: ignore[union-attr]
        client.close()
        answered.set()

    try:
        caller = threading.Thread(target=client_call)
        caller.start()
        blocked_until_answered = answered.wait(30)  # blocks this event loop: nothing else runs on it meanwhile
        caller.join(10)
    finally:
        proxy.stop()
    assert blocked_until_answered and replies == ["answered"]


def test_an_address_in_use_is_a_proxy_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proxy = ProxyThread("http://127.0.0.1:9", port=port)
        with pytest.raises(ProxyError, match=f"cannot listen on 127.0.0.1:{port}"):
            proxy.start()
        proxy.stop()
