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
import json
import time

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
        server = web.Server(self._handle, handler_cancellation=True, access_log=None, auto_decompress=False)
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
        assert self._session is not None
        url = URL(self.upstream + request.raw_path, encoded=True)
        capture: list[bytes] | None = [] if exchange_id is not None else None
        status: int | None = None
        headers_out: list[tuple[str, str]] = []
        headers_at = first_at = None
        outcome: Outcome = "complete"
        note: str | None = None
        try:
            try:
                upstream = await self._session.request(
                    request.method, url, headers=forwarded_headers(headers_in), data=body or None,
                    skip_auto_headers=_NOT_AUTOMATIC, allow_redirects=False)
            except (TimeoutError, aiohttp.ClientError, OSError) as error:
                outcome, status = "unreachable", 502
                note = (f"ctxtui proxy: the upstream {shown_upstream(self.upstream)} cannot be reached: "
                        f"{_reason(error)}")
                reply = _json_error(502, "api_error", note)
                if capture is not None:
                    capture.append(reply.body if isinstance(reply.body, bytes) else b"")
                    headers_out = [("Content-Type", "application/json")]
                return reply
            headers_at = time.perf_counter() - clock
            status = upstream.status
            headers_out = list(upstream.headers.items())
            try:
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for name, value in forwarded_headers(headers_out):
                    response.headers.add(name, value)
                if upstream.content_length is not None and "chunked" not in upstream.headers.get(
                        "Transfer-Encoding", "").lower():
                    response.content_length = upstream.content_length
                await response.prepare(request)
                try:
                    async for chunk in upstream.content.iter_any():
                        await response.write(chunk)
                        if first_at is None:
                            first_at = time.perf_counter() - clock
                        if capture is not None:
                            capture.append(chunk)
                except (TimeoutError, aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as error:
                    if isinstance(error, ConnectionResetError) or _client_gone(request):
                        raise
                    # The upstream broke off: so must the client's reply (not a clean end it would trust).
                    outcome, note = "upstream_cut", f"the upstream broke off the reply: {_reason(error)}"
                    if request.transport is not None:
                        request.transport.close()
                    return response
                await response.write_eof()
                return response
            finally:
                upstream.close()
        except asyncio.CancelledError:
            outcome = "stopped" if self._stopping else "client_gone"
            raise
        except ConnectionResetError:
            outcome = "client_gone"
            raise
        finally:
            if exchange_id is not None and self.watch is not None:
                timings = Timings(headers_at, first_at, time.perf_counter() - clock)
                self.watch.finished(ExchangeEnd(exchange_id, status, headers_out, b"".join(capture or ()),
                                                timings, outcome, note))


def _client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    if isinstance(error, aiohttp.ClientConnectorError) and error.os_error is not None:
        text = error.os_error.strerror or str(error.os_error)
    return text or type(error).__name__
