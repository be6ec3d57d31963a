"""The proxy on an event loop of its own, in a thread, for a caller whose loop is busy with other work.

`ctxtui proxy`'s live view paints on the main thread's event loop; a repaint there must never hold
up a streamed reply. So the server and its watch run on a second loop in a daemon thread, and the
view reads the watch's events through `events()`, an async iterator on the caller's loop that a
pump on the proxy's loop feeds (`call_soon_threadsafe`). Everything that touches the watch or the
server runs on the proxy's loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from typing import Any

from core.proxy.calls import ProxyEvent
from core.proxy.limits import ProxyLimits
from core.proxy.record import Recorder
from core.proxy.server import ProxyError, ProxyServer
from core.proxy.watch import Watch

_END = object()
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class ProxyThread:
    """A proxy started with `start()` (blocking until it listens), read with `events()`, ended with `stop()`."""

    def __init__(
        self,
        upstream: str,
        recorder: Recorder | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: ProxyLimits | None = None,
        openai_upstream: str | None = None,
    ) -> None:
        self.recorder = recorder
        self.watch = Watch(recorder, limits)
        self.server = ProxyServer(
            upstream,
            self.watch,
            host=host,
            port=port,
            limits=self.watch.limits,
            openai_upstream=openai_upstream,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def calls(self) -> int:
        """Calls seen so far (read it after `stop()` for the final figure)."""
        return len(self.watch.calls)

    def start(self) -> None:
        """Listen on the proxy's own loop; ProxyError (one line) when the address cannot be had."""
        self._thread = threading.Thread(target=self._run, name="ctxtui-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise ProxyError("the proxy did not start in time")
        if self._error is not None:
            self._thread.join(STOP_TIMEOUT)
            raise self._error if isinstance(self._error, ProxyError) else ProxyError(str(self._error))

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as error:  # told to the starting thread, which raises it
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.server.aclose()
            await self.watch.aclose()

    def stop(self) -> None:
        """Stop listening, finish what the watch was handed (records included), end every `events()` stream."""
        loop, stop, thread = self._loop, self._stop, self._thread
        if loop is not None and stop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(stop.set)
        if thread is not None:
            thread.join(STOP_TIMEOUT)

    async def events(self) -> AsyncGenerator[ProxyEvent, None]:
        """The watch's events (every call so far, then each new one) on the caller's loop, until `stop()`."""
        proxy_loop, thread = self._loop, self._thread
        if proxy_loop is None or thread is None or not thread.is_alive() or self._error is not None:
            return
        here = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def hand(item: Any) -> None:
            try:
                here.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the caller's loop is closed: nobody is reading any more
                pass

        async def pump() -> None:
            try:
                async for event in self.watch.events():
                    hand(event)
            finally:
                hand(_END)

        try:
            pumping = asyncio.run_coroutine_threadsafe(pump(), proxy_loop)
        except RuntimeError:  # the proxy's loop closed meanwhile: it has stopped
            return
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    return
                yield item
        finally:
            pumping.cancel()
