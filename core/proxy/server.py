"""`ctxtui proxy`'s HTTP side: a loopback server that passes every `/v1/...` request to the upstream.

Built on aiohttp, server and client: one event loop, one HTTP stack. The request goes on with its
headers (hop-by-hop ones excepted) and its body bytes as received; the reply comes back with its
status, end-to-end headers and body bytes unchanged (neither side decompresses), a stream chunk by
chunk as it arrives (each chunk is written to the client before anything else is done with it). A
client that hangs up cancels its handler, which closes the upstream request; an upstream that
cannot be reached gets an Anthropic-shaped 502. For `POST /v1/messages` the request and a copy of
the reply are handed to the `Watch` (core/proxy/watch.py), which records and models them off this
path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from core.proxy.calls import Outcome, Timings
from core.proxy.http import (
    forwarded_headers,
    host_header_is_loopback,
    is_loopback_host,
    normalize_upstream,
    secret_values,
    shown_upstream,
)
from core.proxy.record import new_exchange_id
from core.proxy.watch import ExchangeEnd, ExchangeStart, Watch

MAX_REQUEST_BYTES = 256 * 1024 * 1024  # the API refuses far smaller requests; the proxy passes them on to say so
_NOT_AUTOMATIC = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")  # aiohttp adds none of these itself


class ProxyError(Exception):
    """The proxy cannot start (a non-loopback host, a port in use); the message is one line."""


def error_body(kind: str, message: str) -> bytes:
    """An error in the Messages API's shape, so every client reports it as it reports the API's."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def _json_error(status: int, kind: str, message: str) -> web.Response:
    """An API-shaped error the proxy answers itself (never recorded: only forwarded exchanges are)."""
    return web.Response(status=status, body=error_body(kind, message), content_type="application/json")


class ProxyServer:
    """The proxy: `await start()` binds 127.0.0.1 (port 0 picks a free one), `await aclose()` stops it."""

    def __init__(self, upstream: str, watch: Watch | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 shutdown_timeout: float = 2.0) -> None:
        if not is_loopback_host(host):
            raise ProxyError(f"--host {host}: the proxy listens on loopback only (127.0.0.1, ::1, localhost)")
        self.upstream = normalize_upstream(upstream)
        self.watch = watch
        self.host = host
        self.port = port
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.ServerRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._stopping = False
        self.exchanges = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> int:
        """Listen; returns the port. ProxyError (one line) when the address cannot be had."""
        upstream_host = URL(self.upstream).host or ""
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),  # one client's cookies never reach another
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            trust_env=not is_loopback_host(upstream_host),  # HTTPS_PROXY and the like, as the SDK honours them
        )
        server = web.Server(self._handle, request_factory=_large_requests, handler_cancellation=True, access_log=None,
                            auto_decompress=False)
        runner = self._runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=self._shutdown_timeout)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as error:
            await self.aclose()
            raise ProxyError(f"cannot listen on {self.host}:{self.port}: {error.strerror or error}") from None
        sockets = runner.addresses
        self.port = int(sockets[0][1]) if sockets else self.port
        return self.port

    async def aclose(self) -> None:
        self._stopping = True
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- one request ------------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if not host_header_is_loopback(request.headers.get("Host")):
            return _json_error(403, "permission_error", "ctxtui proxy: requests must be addressed to a loopback host")
        if not (request.path == "/v1" or request.path.startswith("/v1/")):
            return _json_error(404, "not_found_error", "ctxtui proxy forwards /v1/... requests only")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _json_error(413, "request_too_large", "ctxtui proxy: the request body is too large")
        started, clock = time.time(), time.perf_counter()
        headers_in = list(request.headers.items())
        watched = self.watch is not None and request.method == "POST" and request.path == "/v1/messages"
        exchange_id = new_exchange_id(started) if watched else ""
        if watched and self.watch is not None:
            self.exchanges += 1
            self.watch.started(ExchangeStart(
                exchange_id, started, request.method, request.path, headers_in, body, secret_values(headers_in),
                shown_upstream(self.upstream)))
        return await self._forward(request, body, headers_in, clock, exchange_id if watched else None)

    async def _forward(self, request: web.BaseRequest, body: bytes, headers_in: list[tuple[str, str]],
                       clock: float, exchange_id: str | None) -> web.StreamResponse:
        seen = _Seen(clock, [] if exchange_id is not None else None)
        try:
            return await self._relay(request, body, headers_in, seen)
        except asyncio.CancelledError:
            seen.outcome = "stopped" if self._stopping else "client_gone"
            raise
        finally:
            if exchange_id is not None and self.watch is not None:
                self.watch.finished(seen.end(exchange_id))

    async def _relay(self, request: web.BaseRequest, body: bytes, headers_in: list[tuple[str, str]],
                     seen: _Seen) -> web.StreamResponse:
        """Send the request on and the reply back; what happened is noted in `seen` for the watch."""
        assert self._session is not None
        url = URL(self.upstream + request.raw_path, encoded=True)
        try:
            upstream = await self._session.request(
                request.method, url, headers=forwarded_headers(headers_in), data=body or None,
                skip_auto_headers=_NOT_AUTOMATIC, allow_redirects=False)
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            seen.outcome, seen.status = "unreachable", 502
            seen.note = f"ctxtui proxy: the upstream {shown_upstream(self.upstream)} cannot be reached: {_reason(error)}"
            seen.headers = [("Content-Type", "application/json")]
            data = error_body("api_error", seen.note)
            seen.keep(data)
            return web.Response(status=502, body=data, content_type="application/json")
        with contextlib.closing(upstream):
            seen.headers_at = time.perf_counter() - seen.clock
            seen.status, seen.headers = upstream.status, list(upstream.headers.items())
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in forwarded_headers(seen.headers):
                response.headers.add(name, value)
            if upstream.content_length is not None and "chunked" not in upstream.headers.get(
                    "Transfer-Encoding", "").lower():
                response.content_length = upstream.content_length
            try:
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    if seen.first_at is None:
                        seen.first_at = time.perf_counter() - seen.clock
                    await response.write(chunk)  # before anything else is done with it
                    seen.keep(chunk)
                await response.write_eof()
            except (ConnectionResetError, TimeoutError, aiohttp.ClientPayloadError,
                    aiohttp.ClientConnectionError) as error:
                if _client_gone(request):
                    seen.outcome = "client_gone"  # aiohttp's own end of the response then fails quietly
                else:
                    # The upstream broke off: so must the client's reply (not a clean end it would trust).
                    seen.outcome, seen.note = "upstream_cut", f"the upstream broke off the reply: {_reason(error)}"
                    if request.transport is not None:
                        request.transport.close()
            return response


@dataclass
class _Seen:
    """What the proxy saw of one exchange, for the watch."""

    clock: float
    capture: list[bytes] | None
    status: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    headers_at: float | None = None
    first_at: float | None = None
    outcome: Outcome = "complete"
    note: str | None = None

    def keep(self, chunk: bytes) -> None:
        if self.capture is not None:
            self.capture.append(chunk)

    def end(self, exchange_id: str) -> ExchangeEnd:
        timings = Timings(self.headers_at, self.first_at, time.perf_counter() - self.clock)
        return ExchangeEnd(exchange_id, self.status, self.headers, b"".join(self.capture or ()), timings,
                           self.outcome, self.note)


def _large_requests(message: Any, payload: Any, protocol: Any, writer: Any, task: asyncio.Task[None]) -> web.BaseRequest:
    """aiohttp's request, allowed a body of up to MAX_REQUEST_BYTES (its default is 1 MiB: too small for an agent)."""
    return web.BaseRequest(message, payload, protocol, writer, task, task.get_loop(), client_max_size=MAX_REQUEST_BYTES)


def _client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    if isinstance(error, aiohttp.ClientConnectorError) and error.os_error is not None:
        text = error.os_error.strerror or str(error.os_error)
    return text or type(error).__name__
