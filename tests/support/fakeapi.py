"""A loopback fake of the Anthropic Messages API for tests.

The real ``anthropic`` SDK talks to it over HTTP on 127.0.0.1, so tests exercise the
SDK's own request building, SSE parsing, error mapping and retry logic without ever
touching the network.

Typical use::

    server.script(text_reply("hello"), tool_reply([("toolu_1", "read_file", {"path": "a.txt"})]))
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="x", max_retries=0)
    ...
    assert server.message_requests()[0]["model"] == "claude-test"

Every scripted response works for both a streaming request (``"stream": true``, answered
with Server-Sent Events) and a non-streaming one (answered with one JSON body).
Requests are served first-in first-out from the script; when it runs dry the server
answers with ``server.default`` (a plain ``"ok"`` text reply unless changed).

Besides ``POST /v1/messages`` it serves ``POST /v1/messages/count_tokens`` (``estimate_tokens`` of
the body unless scripted with ``server.script_count``: a number, an error such as
``rate_limited()``, any JSON body with ``json_reply(...)``, or a callable) and ``GET /v1/models/{id}`` for the ids in ``server.models``
(id -> max_input_tokens; ``server.thinking`` id -> the thinking types the model accepts, which
the Models API's ``capabilities`` then say). A request that carries ``cache_control`` (top level or
on a block) gets prompt-cache figures in its usage from a deterministic cache with TTLs on a clock
the test can control (``server.use_clock(FakeClock())``); one that carries ``diagnostics`` gets the
API's ``diagnostics.cache_miss_reason``; thinking blocks in scripted replies are signed for the
request's model and sent only when the request asks for thinking, and a request whose thinking
blocks were changed is refused as the API refuses it (tests/support/fake_cache.py). With
``server.enforce_window``, a request over its model's max_input_tokens is refused as too long.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.compaction import CompactionSettings
from core.config import Settings
from tests.support.fake_cache import (
    CacheDiagnostics,
    CacheUse,
    FakeClock,
    PromptCache,
    ThinkingError,
    ThinkingSigner,
    estimate_tokens,
    has_cache_control,
    model_capabilities,
    thinking_on,
)
from tests.support.fake_context import ContextError, ServerContext

__all__ = [
    "CacheUse",
    "CountReply",
    "ErrorEventMidStream",
    "ErrorReply",
    "Exchange",
    "FakeAnthropicServer",
    "FakeClock",
    "Hang",
    "JSONReply",
    "MessageReply",
    "PromptCache",
    "RecordedRequest",
    "ResetMidStream",
    "Response",
    "ScriptItem",
    "error_event_mid_stream",
    "error_reply",
    "estimate_tokens",
    "hang",
    "json_reply",
    "overloaded",
    "prompt_too_long",
    "rate_limited",
    "reset_mid_stream",
    "server_error",
    "split_evenly",
    "text_reply",
    "tool_reply",
]

JSONDict = dict[str, Any]


# --------------------------------------------------------------------------- helpers


def split_evenly(text: str, parts: int) -> list[str]:
    """Split ``text`` into at most ``parts`` consecutive, non-empty pieces of near-equal size.

    An empty string gives no pieces. Joining the result always gives back ``text``.
    """
    if not text:
        return []
    parts = max(1, min(parts, len(text)))
    size, extra = divmod(len(text), parts)
    pieces: list[str] = []
    start = 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _json_bytes(payload: Any) -> bytes:
    """JSON as the API writes it: UTF-8, or with escapes for text that has no UTF-8 form (a lone
    surrogate, which JSON can carry as ``\\udcff`` and a client decodes back to one)."""
    try:
        return json.dumps(payload, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True).encode()


def _sse_frame(event: str, data: Mapping[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + _json_bytes(data) + b"\n\n"


# --------------------------------------------------------------------------- recorded requests


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or the raw text when the body was not JSON (None when empty)
    raw: bytes = b""  # the body's bytes exactly as they arrived

    @property
    def api_key(self) -> str | None:
        """The key the client sent, from ``x-api-key`` or an ``authorization: Bearer`` header.

        (anthropic 2.x sends ``api_key`` as ``authorization: Bearer KEY``; older SDKs used ``x-api-key``.)
        """
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None


# --------------------------------------------------------------------------- the exchange


class _ClientGone(Exception):
    """The client went away (or the server is stopping) while a response was being written."""


class Exchange:
    """What a scripted :class:`Response` uses to answer one request.

    It hides the HTTP details: JSON bodies with a Content-Length, SSE streams with chunked
    transfer-encoding, aborting the connection, and interruptible sleeps.
    """

    def __init__(self, handler: _Handler, request: RecordedRequest, stopping: threading.Event) -> None:
        self._handler = handler
        self.request = request
        self._stopping = stopping

    @property
    def body(self) -> JSONDict:
        """The request body as a dict (empty when the body was not a JSON object)."""
        return self.request.body if isinstance(self.request.body, dict) else {}

    @property
    def wants_stream(self) -> bool:
        return bool(self.body.get("stream", False))

    @property
    def server(self) -> FakeAnthropicServer:
        return self._handler.server.fake

    def prompt_cache(self) -> tuple[int, int]:
        """(cache read, cache creation) tokens for this request from the server's PromptCache."""
        return self.server.prompt_cache.use(self.body)

    def cache_use(self) -> CacheUse:
        """What this request reads and writes in the server's PromptCache, per TTL."""
        return self.server.prompt_cache.account(self.body)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; raise :class:`_ClientGone` early if the server is stopping."""
        if seconds > 0 and self._stopping.wait(seconds):
            raise _ClientGone("server stopping")

    def _write(self, data: bytes) -> None:
        try:
            self._handler.wfile.write(data)
            self._handler.wfile.flush()
        except OSError as exc:  # BrokenPipe, ConnectionReset, ...
            raise _ClientGone(str(exc)) from exc

    def send_headers(self, status: int, headers: Mapping[str, str]) -> None:
        """Send the status line and headers (plus a ``request-id`` like the real API's)."""
        self._handler.send_response(status)
        self._handler.send_header("request-id", _new_id("req_fake_"))
        for name, value in headers.items():
            self._handler.send_header(name, value)
        try:
            self._handler.end_headers()
        except OSError as exc:
            raise _ClientGone(str(exc)) from exc

    def send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        """Send a complete JSON response with a Content-Length."""
        self.send_json_bytes(status, _json_bytes(payload), headers)

    def send_json_bytes(
        self,
        status: int,
        data: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        truncate_to: int | None = None,
    ) -> None:
        """Send JSON bytes; with ``truncate_to`` only that many body bytes go out (the caller then aborts)."""
        all_headers = {
            "content-type": "application/json",
            "content-length": str(len(data)),
            **(headers or {}),
        }
        self.send_headers(status, all_headers)
        self._write(data if truncate_to is None else data[:truncate_to])

    def start_stream(self, headers: Mapping[str, str] | None = None) -> None:
        """Send 200 headers for an SSE stream (chunked transfer-encoding)."""
        all_headers = {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
            **(headers or {}),
        }
        self.send_headers(200, all_headers)

    def send_event(self, event: str, data: Mapping[str, Any]) -> None:
        """Send one SSE frame ``event: NAME\\ndata: JSON\\n\\n`` as one HTTP chunk."""
        frame = _sse_frame(event, data)
        self._write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")

    def send_raw_event(self, event: str, data: bytes) -> None:
        """Send one SSE frame whose data is ``data`` as it is: JSON text no encoder writes (``1e400``)."""
        frame = b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"
        self._write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")

    def end_stream(self) -> None:
        """Finish the chunked body cleanly."""
        self._write(b"0\r\n\r\n")

    def abort(self) -> None:
        """Drop the connection at once, without finishing the response."""
        self._handler.close_connection = True
        try:
            self._handler.wfile.flush()
        except OSError:
            pass
        try:
            self._handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# --------------------------------------------------------------------------- responses


class Response:
    """Base class of everything that can be scripted."""

    def respond(self, exchange: Exchange) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


ScriptItem = Response | Callable[[JSONDict], Response]
"""A scripted item: a response, or a function from the request body to a response."""


@dataclass
class MessageReply(Response):
    """An assistant message made of text and tool_use blocks.

    Streamed like the real API when the request asks for a stream, otherwise sent as one
    JSON message. ``blocks`` hold final-form content blocks:
    ``{"type": "text", "text": ...}`` or ``{"type": "tool_use", "id": ..., "name": ..., "input": {...}}``.
    """

    blocks: list[JSONDict]
    stop_reason: str = "end_turn"
    chunks: int = 3  # text_delta events per text block
    json_chunks: int = 3  # input_json_delta fragments per tool_use block (after a leading empty one)
    delay: float = 0.0  # seconds between SSE events
    model: str | None = None  # defaults to the request's model
    input_tokens: int | None = None  # defaults to estimate_tokens(request body), less the cached part
    output_tokens: int | None = None  # defaults to a length-based estimate
    message_id: str | None = None
    cache_read_tokens: int | None = None  # defaults to what the server's PromptCache says
    cache_creation_tokens: int | None = None
    usage_extra: dict[str, Any] = field(default_factory=dict)  # nested usage fields (cache_creation, ...)
    diagnostics: tuple[bool, Any] = (False, None)  # (the reply carries the field, its value)
    context_management: JSONDict | None = None  # the response's context_management (applied_edits)

    # ----- building blocks shared by the stream and the JSON body

    def _model(self, body: Mapping[str, Any]) -> str:
        return self.model or str(body.get("model") or "claude-fake")

    def _usage(self, body: Mapping[str, Any], cache: tuple[int, int] = (0, 0)) -> tuple[int, int, int, int]:
        """(input, output, cache read, cache creation); `cache` is the PromptCache's (read, creation)."""
        read = self.cache_read_tokens if self.cache_read_tokens is not None else cache[0]
        creation = self.cache_creation_tokens if self.cache_creation_tokens is not None else cache[1]
        if self.input_tokens is not None:
            input_tokens = self.input_tokens
        else:
            input_tokens = max(estimate_tokens(body) - read - creation, 0)
        if self.output_tokens is not None:
            output_tokens = self.output_tokens
        else:
            size = sum(len(b.get("text", "")) + len(b.get("thinking", "")) + len(json.dumps(b.get("input", {})))
                       for b in self.blocks)
            output_tokens = max(1, size // 4)
        return input_tokens, output_tokens, read, creation

    def _usage_dict(self, body: Mapping[str, Any], cache: tuple[int, int], output: int | None = None) -> JSONDict:
        input_tokens, output_tokens, read, creation = self._usage(body, cache)
        usage = {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
            "output_tokens": output_tokens if output is None else output,
        }
        return {**usage, **self.usage_extra}

    def _message_extra(self) -> JSONDict:
        extra: JSONDict = {"diagnostics": self.diagnostics[1]} if self.diagnostics[0] else {}
        if self.context_management is not None:
            extra["context_management"] = self.context_management
        return extra

    def message_body(self, body: Mapping[str, Any], cache: tuple[int, int] = (0, 0)) -> JSONDict:
        """The complete, non-streaming message."""
        return {
            "id": self.message_id or _new_id("msg_fake_"),
            "type": "message",
            "role": "assistant",
            "model": self._model(body),
            "content": [dict(block) for block in self.blocks],
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self._usage_dict(body, cache),
            **self._message_extra(),
        }

    def stream_events(self, body: Mapping[str, Any], cache: tuple[int, int] = (0, 0)) -> list[tuple[str, JSONDict]]:
        """The full SSE event sequence, in the order the real API sends it."""
        output_tokens = self._usage(body, cache)[1]
        events: list[tuple[str, JSONDict]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": self.message_id or _new_id("msg_fake_"),
                        "type": "message",
                        "role": "assistant",
                        "model": self._model(body),
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": self._usage_dict(body, cache, output=1),
                        **self._message_extra(),
                    },
                },
            )
        ]
        for index, block in enumerate(self.blocks):
            events.extend(self._block_events(index, block))
            if index == 0:
                events.insert(
                    2, ("ping", {"type": "ping"})
                )  # the API pings right after the first block starts
        if not self.blocks:
            events.append(("ping", {"type": "ping"}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens, **{key: value for key, value in self.usage_extra.items()
                                                                 if key in ("output_tokens_details", "iterations")}},
                    **({"context_management": self.context_management}
                       if self.context_management is not None else {}),
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def _block_events(self, index: int, block: Mapping[str, Any]) -> list[tuple[str, JSONDict]]:
        kind = block.get("type")
        events: list[tuple[str, JSONDict]] = []
        if kind == "text":
            start: JSONDict = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": piece}
                for piece in split_evenly(str(block["text"]), self.chunks)
            ]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece}
                      for piece in split_evenly(str(block.get("thinking", "")), self.chunks)]
            deltas.append({"type": "signature_delta", "signature": str(block.get("signature", ""))})
        elif kind == "redacted_thinking":
            start, deltas = dict(block), []
        elif kind == "compaction":  # the signature comes with the start, the summary in one delta
            start = {"type": "compaction", "content": None, "encrypted_content": None,
                     "signature": block.get("signature")}
            deltas = [{"type": "compaction_delta", "content": block.get("content"),
                       "encrypted_content": block.get("encrypted_content")}]
        elif kind == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = _json_bytes(block.get("input", {})).decode()  # the JSON text, escaped where it must be
            # The real API opens with an empty fragment, then streams the JSON text in pieces.
            deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in split_evenly(raw, self.json_chunks)
            ]
        else:
            raise ValueError(f"fakeapi cannot stream a {kind!r} block")
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        for delta in deltas:
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        return events

    def as_sent(self, exchange: Exchange) -> tuple[MessageReply, tuple[int, int]] | ErrorReply:
        """This reply as the API would send it for this request: its thinking blocks signed for the
        request's model (or left out without thinking), the cache's figures split by TTL, the
        diagnostics; or the API's refusal (a changed thinking block, a request over the window)."""
        server, body = exchange.server, exchange.body
        try:
            server.signer.check(body)
            managed = server.context.manage(body, exchange.request.headers.get("anthropic-beta", ""))
        except (ThinkingError, ContextError) as error:
            return error_reply(400, "invalid_request_error", str(error))
        window = server.models.get(str(body.get("model")))
        if server.enforce_window and window and estimate_tokens(body) > window:
            return prompt_too_long(estimate_tokens(body), window)
        model = self._model(body)
        thinking = thinking_on(body)
        blocks = [server.signer.sign(model, block) if block.get("type") in ("thinking", "redacted_thinking")
                  else dict(block) for block in self.blocks
                  if thinking or block.get("type") not in ("thinking", "redacted_thinking")]
        extra: JSONDict = dict(self.usage_extra)
        use = exchange.cache_use()
        if has_cache_control(body):
            extra.setdefault("cache_creation", {"ephemeral_5m_input_tokens": use.written_5m,
                                                "ephemeral_1h_input_tokens": use.written_1h})
        thought = [block for block in blocks if block.get("type") in ("thinking", "redacted_thinking")]
        if thought:
            tokens = sum(len(str(block.get("thinking", ""))) // 4 + 8 for block in thought)
            extra.setdefault("output_tokens_details", {"thinking_tokens": tokens})
        message_id = self.message_id or _new_id("msg_fake_")
        answered = server.cache_diagnostics.answer(body, message_id)
        diagnostics = self.diagnostics if self.diagnostics[0] else answered  # a scripted diagnosis wins
        sent = dataclasses.replace(self, blocks=blocks, message_id=message_id, usage_extra=extra,
                                   diagnostics=diagnostics)
        if "context_management" in body:  # the model read the edited request: its usage says so
            seen = self.input_tokens if self.input_tokens is not None \
                else max(estimate_tokens(managed.body) - use.read - use.creation, 0)
            if managed.iterations:
                extra["iterations"] = [*managed.iterations, {
                    "type": "message", "input_tokens": seen, "output_tokens": sent._usage(body)[1],
                    "cache_read_input_tokens": use.read, "cache_creation_input_tokens": use.creation}]
            sent = dataclasses.replace(
                sent, blocks=[managed.compaction, *blocks] if managed.compaction else blocks,
                context_management=managed.response(), input_tokens=seen)
        return sent, (use.read, use.creation)

    def respond(self, exchange: Exchange) -> None:
        prepared = self.as_sent(exchange)
        if isinstance(prepared, ErrorReply):
            prepared.respond(exchange)
            return
        reply, cache = prepared
        if not exchange.wants_stream:
            exchange.send_json(200, reply.message_body(exchange.body, cache))
            return
        events = reply.stream_events(exchange.body, cache)  # built first, so a bad block fails before any headers
        exchange.start_stream()
        for number, (name, data) in enumerate(events):
            if number:
                exchange.sleep(self.delay)
            exchange.send_event(name, data)
        exchange.end_stream()


@dataclass
class ErrorReply(Response):
    """An HTTP error with the API's JSON error body."""

    status: int
    err_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)

    def payload(self) -> JSONDict:
        return {"type": "error", "error": {"type": self.err_type, "message": self.message}}

    def respond(self, exchange: Exchange) -> None:
        exchange.send_json(self.status, self.payload(), self.headers)


@dataclass
class ResetMidStream(Response):
    """Start a streamed text reply, send ``events`` SSE events, then drop the connection.

    A non-streaming request gets its headers and half of its JSON body before the drop.
    """

    text: str = "partial"
    events: int = 4  # message_start, content_block_start, ping, first text_delta
    chunks: int = 3

    def respond(self, exchange: Exchange) -> None:
        reply = MessageReply([{"type": "text", "text": self.text}], chunks=self.chunks)
        if exchange.wants_stream:
            exchange.start_stream()
            for name, data in reply.stream_events(exchange.body)[: self.events]:
                exchange.send_event(name, data)
        else:
            raw = json.dumps(reply.message_body(exchange.body)).encode()
            exchange.send_json_bytes(200, raw, truncate_to=len(raw) // 2)
        exchange.abort()


@dataclass
class CutStream(Response):
    """A 200 SSE stream that sends the first ``events`` events of a reply and then closes cleanly:
    no ``message_stop`` (and, when cut early enough, no ``message_delta`` with the stop reason)."""

    content: list[JSONDict] = field(default_factory=lambda: [{"type": "text", "text": "partial"}])
    events: int = 4
    keep_delta: bool = False  # send every event but message_stop (the stop reason arrives)

    def respond(self, exchange: Exchange) -> None:
        reply = MessageReply(self.content)
        events = reply.stream_events(exchange.body)
        sent = events[:-1] if self.keep_delta else events[: self.events]
        exchange.start_stream()
        for name, data in sent:
            exchange.send_event(name, data)
        exchange.end_stream()


@dataclass
class ErrorEventMidStream(Response):
    """HTTP 200 SSE stream that starts normally, then sends an ``error`` event and ends.

    A non-streaming request gets the equivalent HTTP error (529 for ``overloaded_error``,
    500 otherwise), as the real API does when it fails before answering.
    """

    err_type: str = "overloaded_error"
    message: str = "Overloaded"
    text: str = "partial"
    events: int = 4  # normal events sent before the error

    def payload(self) -> JSONDict:
        return {"type": "error", "error": {"type": self.err_type, "message": self.message}}

    def respond(self, exchange: Exchange) -> None:
        if not exchange.wants_stream:
            status = 529 if self.err_type == "overloaded_error" else 500
            exchange.send_json(status, self.payload())
            return
        reply = MessageReply([{"type": "text", "text": self.text}])
        exchange.start_stream()
        for name, data in reply.stream_events(exchange.body)[: self.events]:
            exchange.send_event(name, data)
        exchange.send_event("error", self.payload())
        exchange.end_stream()


@dataclass
class Hang(Response):
    """Accept the request, send nothing for ``seconds``, then drop the connection."""

    seconds: float = 30.0

    def respond(self, exchange: Exchange) -> None:
        try:
            exchange.sleep(self.seconds)
        finally:
            exchange.abort()


# --------------------------------------------------------------------------- builders


def text_reply(
    text: str,
    chunks: int = 3,
    *,
    delay: float = 0.0,
    stop_reason: str = "end_turn",
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> MessageReply:
    """An assistant message with one text block (streamed as ``chunks`` text_delta events)."""
    return MessageReply(
        blocks=[{"type": "text", "text": text}],
        stop_reason=stop_reason,
        chunks=chunks,
        delay=delay,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def tool_reply(
    calls: Iterable[tuple[str, str, Mapping[str, Any]]],
    text: str | None = None,
    *,
    chunks: int = 3,
    json_chunks: int = 3,
    delay: float = 0.0,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> MessageReply:
    """An assistant message: optional leading text, then one tool_use block per ``(id, name, input)``.

    Tool inputs are streamed as several input_json_delta fragments; stop_reason is "tool_use".
    """
    blocks: list[JSONDict] = []
    if text:
        blocks.append({"type": "text", "text": text})
    for tool_id, name, tool_input in calls:
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": dict(tool_input)})
    return MessageReply(
        blocks=blocks,
        stop_reason="tool_use",
        chunks=chunks,
        json_chunks=json_chunks,
        delay=delay,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def error_reply(
    status: int, err_type: str, message: str, headers: Mapping[str, str] | None = None
) -> ErrorReply:
    """An HTTP error ``status`` with body ``{"type": "error", "error": {"type": err_type, "message": message}}``."""
    return ErrorReply(status, err_type, message, dict(headers or {}))


def prompt_too_long(actual: int = 210000, maximum: int = 200000) -> ErrorReply:
    """400 invalid_request_error "prompt is too long: 210000 tokens > 200000 maximum"."""
    return error_reply(
        400, "invalid_request_error", f"prompt is too long: {actual} tokens > {maximum} maximum"
    )


def _retry_headers(retry_after_ms: int | None, should_retry: bool | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
        headers["retry-after"] = str(max(1, -(-retry_after_ms // 1000)))
    if should_retry is not None:
        headers["x-should-retry"] = "true" if should_retry else "false"
    return headers


def rate_limited(retry_after_ms: int | None = 10, *, should_retry: bool | None = None) -> ErrorReply:
    """429 rate_limit_error with ``retry-after-ms`` (and a whole-second ``retry-after``)."""
    return error_reply(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
        _retry_headers(retry_after_ms, should_retry),
    )


def overloaded(retry_after_ms: int | None = 10, *, should_retry: bool | None = None) -> ErrorReply:
    """529 overloaded_error."""
    return error_reply(529, "overloaded_error", "Overloaded", _retry_headers(retry_after_ms, should_retry))


def server_error(message: str = "Internal server error", *, should_retry: bool | None = None) -> ErrorReply:
    """500 api_error."""
    return error_reply(500, "api_error", message, _retry_headers(None, should_retry))


def reset_mid_stream(text: str = "partial", events: int = 4) -> ResetMidStream:
    """Send headers and the first ``events`` SSE events of a text reply, then drop the connection."""
    return ResetMidStream(text=text, events=events)


def error_event_mid_stream(
    err_type: str = "overloaded_error", message: str = "Overloaded", *, text: str = "partial", events: int = 4
) -> ErrorEventMidStream:
    """A 200 SSE stream that starts normally, then carries ``event: error``."""
    return ErrorEventMidStream(err_type=err_type, message=message, text=text, events=events)


def cut_stream(
    content: list[JSONDict] | None = None, *, events: int = 4, keep_delta: bool = False
) -> CutStream:
    """A stream that closes cleanly before ``message_stop``: half a message, taken for whole before."""
    return CutStream(content=content or [{"type": "text", "text": "partial"}], events=events, keep_delta=keep_delta)


def hang(seconds: float = 30.0) -> Hang:
    """Send nothing for ``seconds`` (released early by ``stop()``), then drop the connection."""
    return Hang(seconds)


# --------------------------------------------------------------------------- HTTP plumbing


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: FakeAnthropicServer, port: int = 0) -> None:
        self.fake = fake
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients dropping connections (timeouts, cancelled streams) are normal in tests.
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeapi/1.0"
    sys_version = ""
    timeout = 30  # idle keep-alive connections are closed after this many seconds
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Headers, body and SSE frames go out in separate writes; without this, Nagle's algorithm
        # and delayed ACKs add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> tuple[Any, bytes]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None, raw
        text = raw.decode("utf-8", errors="replace")
        try:
            return json.loads(text), raw
        except ValueError:
            return text, raw

    def _record(self) -> RecordedRequest:
        body, raw = self._read_body()
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            raw=raw,
        )
        self.server.fake._record(request)
        return request

    def do_POST(self) -> None:
        fake = self.server.fake
        request = self._record()
        exchange = Exchange(self, request, fake._stopping)
        path = self.path.split("?", 1)[0]
        outcome = "complete"
        try:
            if path == "/v1/messages":
                fake._next_response(exchange.body).respond(exchange)
            elif path == "/v1/messages/count_tokens":
                fake._count_response(exchange.body).respond(exchange)
            else:
                ErrorReply(404, "not_found_error", f"fakeapi does not serve {self.command} {path}").respond(
                    exchange
                )
        except _ClientGone:
            outcome = "stopped" if fake._stopping.is_set() else "client gone"
            self.close_connection = True
        except Exception as exc:  # a bug in a scripted callable or response: make it visible to the test
            outcome = "error"
            fake._record_error(exc)
            self.close_connection = True
            try:
                server_error(f"fakeapi: {type(exc).__name__}: {exc}", should_retry=False).respond(exchange)
            except Exception:
                exchange.abort()
        fake._record_outcome(outcome)

    def do_GET(self) -> None:
        request = self._record()
        exchange = Exchange(self, request, self.server.fake._stopping)
        path = self.path.split("?", 1)[0]
        model_id = path.removeprefix("/v1/models/") if path.startswith("/v1/models/") else None
        try:
            fake = self.server.fake
            if model_id is not None and model_id in fake.models:
                exchange.send_json(200, _model_info(model_id, fake.models[model_id], fake.thinking.get(model_id)))
            else:
                ErrorReply(404, "not_found_error", f"fakeapi does not serve GET {self.path}").respond(exchange)
        except _ClientGone:
            self.close_connection = True


def _model_info(model_id: str, max_input_tokens: int | None, thinking: tuple[str, ...] | None = None) -> JSONDict:
    """A Models API object for ``GET /v1/models/{id}`` (with ``capabilities`` when ``thinking`` is given)."""
    extra = {"capabilities": model_capabilities(thinking)} if thinking is not None else {}
    return {
        **extra,
        "type": "model",
        "id": model_id,
        "display_name": model_id,
        "created_at": "2026-01-01T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": max_input_tokens,
        "max_tokens": 128_000,
    }


@dataclass
class CountReply(Response):
    """``{"input_tokens": N}`` for ``POST /v1/messages/count_tokens``."""

    input_tokens: int

    def respond(self, exchange: Exchange) -> None:
        exchange.send_json(200, {"input_tokens": self.input_tokens})


@dataclass
class JSONReply(Response):
    """Any JSON value as the body, with any status: e.g. ``{"input_tokens": null}`` for count_tokens."""

    payload: Any
    status: int = 200

    def respond(self, exchange: Exchange) -> None:
        exchange.send_json(self.status, self.payload)


def json_reply(payload: Any, status: int = 200) -> JSONReply:
    """A response whose body is ``payload`` as it is (whatever JSON a test wants the server to say)."""
    return JSONReply(payload, status)


CountItem = int | Response | Callable[[JSONDict], "int | Response"]
"""A scripted count_tokens answer: a number, a response (e.g. ``rate_limited()``), or a function of the body."""


# --------------------------------------------------------------------------- the server


class FakeAnthropicServer:
    """A scripted Anthropic Messages API on 127.0.0.1, served from a background thread."""

    def __init__(self, default: ScriptItem | None = None, *, port: int = 0) -> None:
        """`port` 0 picks a free port; another binds that one (a test that brings a server back where it was)."""
        self.default: ScriptItem = default if default is not None else text_reply("ok")
        self._port = port
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: deque[ScriptItem] = deque()
        self._count_queue: deque[CountItem] = deque()
        self.prompt_cache = PromptCache()
        self.cache_diagnostics = CacheDiagnostics()
        self.signer = ThinkingSigner()
        self.context = ServerContext()
        """Server-side context management: edits, compaction blocks and their signatures (fake_context.py)."""
        self.models: dict[str, int | None] = {}
        """Model ids ``GET /v1/models/{id}`` knows, with their max_input_tokens (others are 404)."""
        self.thinking: dict[str, tuple[str, ...]] = {}
        """Model ids whose Models API object has ``capabilities``: the thinking types each accepts."""
        self.enforce_window = False
        """Refuse a request over its model's max_input_tokens (``models``) as too long."""
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._outcomes: list[str] = []
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----- lifecycle

    def start(self) -> FakeAnthropicServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(self, self._port)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fakeapi", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving. Hanging or delayed handlers are released and open connections dropped."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeAnthropicServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def use_clock(self, clock: FakeClock) -> FakeClock:
        """The prompt cache's TTLs run on ``clock`` (the test moves it); returns it."""
        self.prompt_cache.clock = clock
        return clock

    # ----- scripting

    def script(self, *responses: ScriptItem) -> FakeAnthropicServer:
        """Queue responses; each request to /v1/messages takes the next one."""
        with self._lock:
            self._queue.extend(responses)
        return self

    def script_count(self, *answers: CountItem) -> FakeAnthropicServer:
        """Queue count_tokens answers; when they run out the answer is ``estimate_tokens(body)``."""
        with self._lock:
            self._count_queue.extend(answers)
        return self

    def _count_response(self, body: JSONDict) -> Response:
        with self._lock:
            item: CountItem = self._count_queue.popleft() if self._count_queue else estimate_tokens
        answer = item(body) if callable(item) else item
        return answer if isinstance(answer, Response) else CountReply(int(answer))

    def pending(self) -> int:
        """How many scripted responses have not been used yet."""
        with self._lock:
            return len(self._queue)

    def _next_response(self, body: JSONDict) -> Response:
        with self._lock:
            item = self._queue.popleft() if self._queue else self.default
        response = item if isinstance(item, Response) else item(body)
        if not isinstance(response, Response):
            raise TypeError(f"scripted callable returned {response!r}, not a fakeapi Response")
        return response

    # ----- recording

    def _record(self, request: RecordedRequest) -> None:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``count`` requests arrived (from async code: ``await asyncio.to_thread(...)``).

        Raises TimeoutError if they do not arrive within ``timeout`` seconds.
        """
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._requests) >= count, timeout):
                raise TimeoutError(f"fakeapi got {len(self._requests)} requests, expected {count}")
            return list(self._requests)

    def _record_outcome(self, outcome: str) -> None:
        with self._changed:
            self._outcomes.append(outcome)
            self._changed.notify_all()

    def wait_for_outcomes(self, count: int, timeout: float = 5.0) -> list[str]:
        """Block until at least ``count`` POST responses have ended; how each ended, in that order.

        "complete" (the scripted response ran to its end, including one that drops the connection
        on purpose), "client gone" (the client hung up before it was all written: a cancelled
        stream), "stopped" (``stop()`` cut it short) or "error" (building it raised). Raises TimeoutError if they have not ended within ``timeout`` seconds.
        """
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._outcomes) >= count, timeout):
                raise TimeoutError(f"fakeapi ended {len(self._outcomes)} responses, expected {count}")
            return list(self._outcomes)

    def _record_error(self, exc: BaseException) -> None:
        with self._lock:
            self._errors.append(exc)

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised while building responses (e.g. by a scripted callable)."""
        with self._lock:
            return list(self._errors)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def message_requests(self) -> list[JSONDict]:
        """The JSON bodies of the POST /v1/messages requests, oldest first."""
        return [
            r.body
            for r in self.requests
            if r.method == "POST" and r.path.split("?", 1)[0] == "/v1/messages" and isinstance(r.body, dict)
        ]

    def count_requests(self) -> list[JSONDict]:
        """The JSON bodies of the POST /v1/messages/count_tokens requests, oldest first."""
        return [
            r.body
            for r in self.requests
            if r.method == "POST"
            and r.path.split("?", 1)[0] == "/v1/messages/count_tokens"
            and isinstance(r.body, dict)
        ]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()


def settings_for(workdir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "workdir": workdir,
        "model": "claude-test",
        "max_retries": 0,
        "retry_after_cap": 0.2,
        "request_timeout": 5.0,
        "compaction": CompactionSettings(),
    }
    values.update(overrides)
    return Settings(**values)
