"""`ctxtui proxy`'s HTTP side: a loopback server that passes every `/v1/...` request to the upstream.

Built on aiohttp, server and client: one event loop, one HTTP stack. The request goes on with its
headers (hop-by-hop ones excepted) and its body bytes as received; the reply comes back with its
status, end-to-end headers and body bytes unchanged (neither side decompresses), a stream chunk by
chunk as it arrives (each chunk is written to the client before anything else is done with it). A
client that hangs up cancels its handler, which closes the upstream request; an upstream that
cannot be reached gets a 502 in the API's shape. For `POST /v1/messages`, `/v1/chat/completions` and
`/v1/responses` the request and a copy of the reply are handed to the `Watch` (core/proxy/watch.py),
which records and models them off this path.

OpenAI's paths (core/proxy/openai.py: `/v1/chat/...`, `/v1/responses...` and the like) go to
`openai_upstream` when one is given (the CLI's OPENAI_BASE_URL, else the OpenAI API, when no
--upstream was given), every other path to `upstream`; the proxy's own errors on those paths are in
OpenAI's shape (`{"error": {"message", "type", "code"}}`).

The proxy answers itself, with an Anthropic-shaped error and `x-should-retry: false`, what it will
not forward: a path that leaves `/v1` once resolved (404), a body over the request limit (413), a
request that already went through this proxy or through too many (508: proxies in a loop).
An error's shape follows the path: OpenAI's for its paths, the Messages API's for the others. The
copy of a reply is kept only up to the reply limit (core/proxy/limits.py); the client gets every
byte regardless.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from core.proxy.calls import Outcome, Timings
from core.proxy.http import (
    api_path,
    forwarded_headers,
    hops_of,
    host_header_is_loopback,
    is_loopback_host,
    normalize_upstream,
    secret_values,
    shown_upstream,
    upstream_secrets,
    with_hop,
)
from core.proxy.limits import MAX_HOPS, ProxyLimits
from core.proxy.openai import error_body as openai_error_body
from core.proxy.openai import is_openai_path, wire_of
from core.proxy.record import new_exchange_id
from core.proxy.redact import Redactor
from core.proxy.watch import ExchangeEnd, ExchangeStart, Watch

_NOT_AUTOMATIC = (
    "Accept",
    "Accept-Encoding",
    "User-Agent",
    "Content-Type",
)  # aiohttp adds none of these itself


class ProxyError(Exception):
    """The proxy cannot start (a non-loopback host, a port in use); the message is one line."""


def error_body(kind: str, message: str) -> bytes:
    """An error in the Messages API's shape, so every client reports it as it reports the API's."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


_OPENAI_KINDS = {
    "permission_error": "invalid_request_error",
    "not_found_error": "invalid_request_error",
    "request_too_large": "invalid_request_error",
}


def api_error_body(path: str, kind: str, message: str) -> bytes:
    """An error in the shape of the API `path` belongs to (OpenAI's or the Messages API's)."""
    if is_openai_path(path):
        return openai_error_body(_OPENAI_KINDS.get(kind, "server_error"), message, kind)
    return error_body(kind, message)


def _json_error(status: int, kind: str, message: str, path: str = "") -> web.Response:
    """An API-shaped error the proxy answers itself (never recorded: only forwarded exchanges are); the
    SDKs read `x-should-retry: false` and do not send the same request again."""
    return web.Response(
        status=status,
        body=api_error_body(path, kind, message),
        content_type="application/json",
        headers={"x-should-retry": "false"},
    )


class ProxyServer:
    """The proxy: `await start()` binds 127.0.0.1 (port 0 picks a free one), `await aclose()` stops it."""

    def __init__(
        self,
        upstream: str,
        watch: Watch | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        shutdown_timeout: float = 2.0,
        limits: ProxyLimits | None = None,
        openai_upstream: str | None = None,
    ) -> None:
        if not is_loopback_host(host):
            raise ProxyError(f"--host {host}: the proxy listens on loopback only (127.0.0.1, ::1, localhost)")
        self.upstream = normalize_upstream(upstream)
        self.openai_upstream = normalize_upstream(openai_upstream) if openai_upstream else self.upstream
        self.watch = watch
        self.limits = limits or (watch.limits if watch is not None else ProxyLimits())
        self.id = secrets.token_hex(8)  # this proxy's mark in the hops header of what it forwards
        self._upstream_secrets = upstream_secrets(self.upstream) | upstream_secrets(self.openai_upstream)
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
        hosts = {URL(self.upstream).host or "", URL(self.openai_upstream).host or ""}
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),  # one client's cookies never reach another
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            trust_env=not all(
                map(is_loopback_host, hosts)
            ),  # HTTPS_PROXY and the like, as the SDK honours them
        )
        server = web.Server(
            self._handle,
            request_factory=self._request,
            handler_cancellation=True,
            access_log=None,
            auto_decompress=False,
        )
        runner = self._runner = web.ServerRunner(
            server, handle_signals=False, shutdown_timeout=self._shutdown_timeout
        )
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

    def _request(
        self, message: Any, payload: Any, protocol: Any, writer: Any, task: asyncio.Task[None]
    ) -> web.BaseRequest:
        """aiohttp's request, allowed a body of up to the request limit (its default is 1 MiB: too small)."""
        return web.BaseRequest(
            message,
            payload,
            protocol,
            writer,
            task,
            task.get_loop(),
            client_max_size=self.limits.request_bytes,
        )

    def upstream_for(self, path: str) -> str:
        """The upstream a (checked) path goes to: OpenAI's paths to `openai_upstream`, others to `upstream`."""
        return self.openai_upstream if is_openai_path(path) else self.upstream

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = request.raw_path.partition("?")[0]
        if not host_header_is_loopback(request.headers.get("Host")):
            return _json_error(
                403, "permission_error", "ctxtui proxy: requests must be addressed to a loopback host", raw
            )
        target = api_path(request.raw_path)
        if target is None:
            return _json_error(
                404,
                "not_found_error",
                "ctxtui proxy forwards /v1/... requests only (a path that "
                "stays under /v1 once its escapes and dot segments are resolved)",
                raw,
            )
        path = target.partition("?")[0]
        upstream = self.upstream_for(path)
        headers_in = list(request.headers.items())
        hops = hops_of(headers_in)
        if self.id in hops or len(hops) >= MAX_HOPS:
            why = (
                "it already went through this proxy"
                if self.id in hops
                else f"it went through {len(hops)} ctxtui proxies already"
            )
            return _json_error(
                508,
                "api_error",
                f"ctxtui proxy: loop detected: {why}; is the upstream "
                f"{shown_upstream(upstream)} (or its own upstream) pointed back at a proxy?",
                path,
            )
        too_large = _json_error(
            413,
            "request_too_large",
            "ctxtui proxy: the request body is over "
            f"{self.limits.request_bytes:,} bytes (proxy_request_limit)",
            path,
        )
        if (request.content_length or 0) > self.limits.request_bytes:
            return too_large
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return too_large
        started, clock = time.time(), time.perf_counter()
        watched = self.watch is not None and wire_of(request.method, path) is not None
        exchange_id = new_exchange_id(started) if watched else ""
        if watched and self.watch is not None:
            self.exchanges += 1
            self.watch.started(
                ExchangeStart(
                    exchange_id,
                    started,
                    request.method,
                    path,
                    headers_in,
                    body,
                    secret_values(headers_in) | self._upstream_secrets,
                    shown_upstream(upstream),
                )
            )
        forwarded = with_hop(forwarded_headers(headers_in), hops, self.id)
        return await self._forward(request, target, body, forwarded, clock, exchange_id if watched else None)

    async def _forward(
        self,
        request: web.BaseRequest,
        target: str,
        body: bytes,
        headers: list[tuple[str, str]],
        clock: float,
        exchange_id: str | None,
    ) -> web.StreamResponse:
        seen = _Seen(clock, [] if exchange_id is not None else None, self.limits.reply_bytes)
        try:
            return await self._relay(request, target, body, headers, seen)
        except asyncio.CancelledError:
            seen.outcome = "stopped" if self._stopping else "client_gone"
            raise
        finally:
            if exchange_id is not None and self.watch is not None:
                self.watch.finished(seen.end(exchange_id))

    async def _relay(
        self, request: web.BaseRequest, target: str, body: bytes, headers: list[tuple[str, str]], seen: _Seen
    ) -> web.StreamResponse:
        """Send the request on (to `target`, the checked path) and the reply back; what happened is noted in
        `seen` for the watch."""
        assert self._session is not None
        upstream_url = self.upstream_for(target.partition("?")[0])
        url = URL(upstream_url + target, encoded=True)
        try:
            upstream = await self._session.request(
                request.method,
                url,
                headers=headers,
                data=body or None,
                skip_auto_headers=_NOT_AUTOMATIC,
                allow_redirects=False,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            seen.outcome, seen.status = "unreachable", 502
            seen.note = Redactor(self._upstream_secrets).text(
                f"ctxtui proxy: the upstream {shown_upstream(upstream_url)} cannot be reached: {_reason(error)}"
            )
            seen.headers = [("Content-Type", "application/json")]
            data = api_error_body(target, "api_error", seen.note)
            seen.keep(data)
            return web.Response(status=502, body=data, content_type="application/json")
        with contextlib.closing(upstream):
            seen.headers_at = time.perf_counter() - seen.clock
            seen.status, seen.headers = upstream.status, list(upstream.headers.items())
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in forwarded_headers(seen.headers):
                response.headers.add(name, value)
            if (
                upstream.content_length is not None
                and "chunked" not in upstream.headers.get("Transfer-Encoding", "").lower()
            ):
                response.content_length = upstream.content_length
            try:
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    if seen.first_at is None:
                        seen.first_at = time.perf_counter() - seen.clock
                    await response.write(chunk)  # before anything else is done with it
                    seen.keep(chunk)
                await response.write_eof()
            except (
                ConnectionResetError,
                TimeoutError,
                aiohttp.ClientPayloadError,
                aiohttp.ClientConnectionError,
            ) as error:
                if _client_gone(request):
                    seen.outcome = "client_gone"  # aiohttp's own end of the response then fails quietly
                else:
                    # The upstream broke off: so must the client's reply (not a clean end it would trust).
                    seen.outcome, seen.note = (
                        "upstream_cut",
                        f"the upstream broke off the reply: {_reason(error)}",
                    )
                    if request.transport is not None:
                        request.transport.close()
            return response


@dataclass
class _Seen:
    """What the proxy saw of one exchange, for the watch: the reply's bytes kept up to `limit`, and how many."""

    clock: float
    capture: list[bytes] | None
    limit: int
    status: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    headers_at: float | None = None
    first_at: float | None = None
    outcome: Outcome = "complete"
    note: str | None = None
    size: int = 0  # every byte of the reply
    kept: int = 0  # the bytes in `capture`

    def keep(self, chunk: bytes) -> None:
        self.size += len(chunk)
        room = self.limit - self.kept
        if self.capture is not None and room > 0:
            piece = chunk[:room]
            self.capture.append(piece)
            self.kept += len(piece)

    def end(self, exchange_id: str) -> ExchangeEnd:
        timings = Timings(self.headers_at, self.first_at, time.perf_counter() - self.clock)
        body = b"".join(self.capture or ())
        self.capture = None  # the pieces go as soon as they are one
        return ExchangeEnd(
            exchange_id,
            self.status,
            self.headers,
            body,
            timings,
            self.outcome,
            self.note,
            self.size if self.size > self.kept else None,
        )


def _client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    if isinstance(error, aiohttp.ClientConnectorError) and error.os_error is not None:
        text = error.os_error.strerror or str(error.os_error)
    return text or type(error).__name__
