"""Running `ctxtui proxy`'s server in the test's event loop, and real SDK clients pointed at it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic

from core.proxy.calls import CallFinished, ProxyCall, Timings
from core.proxy.record import Recorder
from core.proxy.server import ProxyServer
from core.proxy.watch import ExchangeEnd, ExchangeStart, Watch
from tests.support.fakeapi import MessageReply

TEST_KEY = "sk-ant-api03-proxy-test-key-0123456789abcdef"


@dataclass
class RunningProxy:
    server: ProxyServer
    watch: Watch

    @property
    def url(self) -> str:
        return self.server.url

    async def finished(self, count: int) -> list[ProxyCall]:
        """Wait until `count` calls have ended (events replay what already happened, so no race)."""
        done: list[ProxyCall] = []
        if count == 0:
            return done
        async with aclosing(self.watch.events()) as events:
            async for event in events:
                if isinstance(event, CallFinished):
                    done.append(event.call)
                    if len(done) >= count:
                        break
        return done


@asynccontextmanager
async def running_proxy(upstream: str, workdir: Path | None = None) -> AsyncIterator[RunningProxy]:
    """The proxy on 127.0.0.1 (a free port), recording under `workdir` (nothing on disk when None)."""
    watch = Watch(Recorder(workdir) if workdir is not None else None)
    server = ProxyServer(upstream, watch)
    await server.start()
    try:
        yield RunningProxy(server, watch)
    finally:
        await server.aclose()
        await watch.aclose()


def sdk_client(base_url: str, *, api_key: str = TEST_KEY, **options: Any) -> anthropic.AsyncAnthropic:
    """The real SDK, no retries unless asked."""
    options.setdefault("max_retries", 0)
    return anthropic.AsyncAnthropic(base_url=base_url, api_key=api_key, **options)


def read_record(path: Path) -> list[dict[str, Any]]:
    """The records of a recording file (lines end at "\n" only: U+2028 may sit raw inside a record)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def view_app(proxy: RunningProxy, workdir: Path, *, about: Any = None, limit: int = 50_000) -> Any:
    """`ctxtui proxy`'s live view on this proxy's events (the real app; the proxy runs in the test's loop)."""
    from tui.proxy_app import ProxyApp
    from tui.widgets.proxy_status import ProxyAbout

    about = about or ProxyAbout(proxy.url, proxy.server.upstream, None)
    return ProxyApp(proxy.watch.events, about, workdir, limit=limit)


# --- a Watch fed by hand, as the server would feed it -------------------------------------------------

SYSTEM = [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}]
HEADERS = [("User-Agent", "claude-cli/2.1.0"), ("Content-Type", "application/json"), ("x-api-key", "sk-ant-secret-1")]


class Driver:
    """Hands exchanges to a Watch as the server would, with replies from the fake's builders."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.count = 0

    def call(self, body: dict[str, Any] | bytes, reply: str = "ok", *, usage: dict[str, int] | None = None,
             status: int = 200) -> str:
        self.count += 1
        exchange_id = f"x{self.count:03d}"
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.watch.started(ExchangeStart(exchange_id, 1_000.0 + self.count, "POST", "/v1/messages", HEADERS, raw,
                                         frozenset({"sk-ant-secret-1"})))
        parsed = json.loads(raw) if not isinstance(body, bytes) else {}
        message = MessageReply([{"type": "text", "text": reply}], message_id=f"msg_{self.count}",
                               input_tokens=(usage or {}).get("input", 100),
                               output_tokens=(usage or {}).get("output", 10),
                               cache_read_tokens=(usage or {}).get("read", 0),
                               cache_creation_tokens=(usage or {}).get("write", 0)).message_body(parsed)
        self.watch.finished(ExchangeEnd(exchange_id, status, [("content-type", "application/json")],
                                        json.dumps(message).encode(), Timings(0.01, 0.02, 0.03), "complete"))
        return exchange_id


async def until_finished(watch: Watch, count: int) -> None:
    done = 0
    async with aclosing(watch.events()) as events:
        async for event in events:
            done += isinstance(event, CallFinished)
            if done == count:
                return


def body(messages: list[Any], system: Any = SYSTEM, model: str = "claude-sonnet-5-5") -> dict[str, Any]:
    return {"model": model, "max_tokens": 100, "system": system, "messages": messages}


def turn(*texts: str) -> list[Any]:
    """user, assistant, user, ... with the given texts."""
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": text} for n, text in enumerate(texts)]
