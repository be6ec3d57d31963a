"""Running `ctxtui proxy`'s server in the test's event loop, and real SDK clients pointed at it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic

from core.proxy.calls import CallFinished, ProxyCall
from core.proxy.record import Recorder
from core.proxy.server import ProxyServer
from core.proxy.watch import Watch

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
