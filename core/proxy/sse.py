"""A Messages API reply rebuilt from the bytes the client got: a JSON body, or an SSE stream.

The proxy passes bytes through untouched and keeps a copy; this turns the copy into one Messages
API message (the reply as the client got it) after the exchange, off the forwarding path. Content
encodings (gzip, deflate) are undone first; a stream is parsed as Server-Sent Events and its events
folded into the message the way the API defines them (message_start, content_block_start/delta/stop,
message_delta, message_stop; an `error` event is kept as the error).

Everything here is untrusted: inflating stops at a limit (a decompression bomb is stopped while it
inflates, not after), JSON numbers that are not finite (NaN, Infinity, 1e400) are kept as the text
the upstream sent instead of becoming floats nothing downstream can use, a block index must be a
small whole number, and the notes an exchange collects are capped.
"""

from __future__ import annotations

import copy
import json
import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from core.proxy.limits import MAX_BLOCKS, capped
from core.usage.figures import MAX_TOKENS, token_figure

JSONDict = dict[str, Any]
_INFLATE_STEP = 1024 * 1024  # bytes inflated per step (each step checks the limit)
_LONGEST_INTEGER = 100  # digits of a JSON integer taken as a number (a longer one is kept as its text)


class UndecodableBody(ValueError):
    """The body uses a content encoding this module cannot undo, or is not valid in it."""


class BodyTooLarge(UndecodableBody):
    """The body, inflated, would be larger than the limit it was decoded with (inflating stopped there)."""


def whole_events(text: str) -> str:
    """A stream's text cut anywhere, up to the end of its last whole event (its line ends made `\n`)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    end = text.rfind("\n\n")
    return text[: end + 2] if end >= 0 else ""


def decode_body(
    data: bytes, encoding: str | None, limit: int | None = None, *, partial: bool = False
) -> bytes:
    """`data` with its content encoding undone (identity, gzip, deflate); UndecodableBody otherwise.

    `limit`: the most bytes any layer may inflate to (BodyTooLarge past it, raised while inflating).
    `partial`: `data` is the first part of a body (the rest was not kept), so a stream that ends
    early is no error.
    """
    codings = [part.strip().lower() for part in (encoding or "").split(",") if part.strip()]
    for coding in reversed(codings):  # applied in order, so undone from the last
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip"):
            data = _inflate(data, 16 + zlib.MAX_WBITS, coding, limit, partial)
        elif coding == "deflate":
            try:
                data = _inflate(data, zlib.MAX_WBITS, coding, limit, partial)
            except BodyTooLarge:
                raise
            except UndecodableBody:
                data = _inflate(
                    data, -zlib.MAX_WBITS, coding, limit, partial
                )  # raw deflate, as some servers send it
        else:
            raise UndecodableBody(f"content-encoding {coding} is not decoded")
    if limit is not None and len(data) > limit:
        raise BodyTooLarge(f"the body is {len(data):,} bytes, over the limit of {limit:,}")
    return data


def _inflate(data: bytes, wbits: int, coding: str, limit: int | None, partial: bool) -> bytes:
    """One layer inflated step by step, never past `limit` bytes; gzip members one after another."""
    out = bytearray()
    pending = data
    while pending:
        inflater = zlib.decompressobj(wbits)
        try:
            while pending and not inflater.eof:
                room = _INFLATE_STEP if limit is None else min(_INFLATE_STEP, limit - len(out) + 1)
                out += inflater.decompress(pending, room)
                pending = inflater.unconsumed_tail
                if limit is not None and len(out) > limit:
                    raise BodyTooLarge(
                        f"content-encoding {coding}: the body inflates past the limit of {limit:,} bytes"
                        " (inflating stopped there)"
                    )
            if not inflater.eof:
                out += inflater.flush()
                if limit is not None and len(out) > limit:
                    raise BodyTooLarge(
                        f"content-encoding {coding}: the body inflates past the limit of {limit:,} bytes"
                    )
                if not partial:
                    raise UndecodableBody(f"content-encoding {coding}: the data ends before the stream does")
                break
        except zlib.error as error:
            raise UndecodableBody(f"content-encoding {coding}: {error}") from None
        pending = inflater.unused_data if wbits > zlib.MAX_WBITS else b""  # another gzip member may follow
    return bytes(out)


def loads(text: str) -> tuple[Any, int]:
    """JSON parsed, and how many of its numbers were kept as text: NaN, Infinity, a float too large for
    a float (1e400) or an integer of more than 100 digits is the string the upstream sent, so no
    `inf` or `nan` reaches a sum, a price or a record (whose JSON could not hold it). ValueError when
    `text` is not JSON."""
    odd = 0

    def number_text(token: str) -> str:
        nonlocal odd
        odd += 1
        return token

    def as_float(token: str) -> float | str:
        value = float(token)
        return value if math.isfinite(value) else number_text(token)

    def as_int(token: str) -> int | str:
        return int(token) if len(token.lstrip("-")) <= _LONGEST_INTEGER else number_text(token)

    try:
        value = json.loads(text, parse_constant=number_text, parse_float=as_float, parse_int=as_int)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return value, odd


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str


def parse_sse(text: str) -> Iterator[ServerSentEvent]:
    """The events of an SSE stream (the WHATWG rules: blank line ends an event, `data:` lines join with
    newlines, `:` lines are comments, a missing `event:` means "message")."""
    event = ""
    data: list[str] = []
    for line in _lines(text):
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:  # a stream cut before its last blank line: the event as far as it came
        yield ServerSentEvent(event or "message", "\n".join(data))


def _lines(text: str) -> Iterator[str]:
    """`text` split at CRLF, CR or LF, one line at a time (a reply of many megabytes is never a list of lines)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


@dataclass
class Reply:
    """The reply as the client got it: the message (None when none began), whether it ended with
    message_stop, the error the API sent (an error body or an `error` event), and how many events."""

    message: JSONDict | None = None
    complete: bool = False
    error: JSONDict | None = None
    events: int = 0
    problems: list[str] = field(default_factory=list)  # events that could not be folded in

    @property
    def usage(self) -> JSONDict | None:
        usage = self.message.get("usage") if self.message is not None else None
        return usage if isinstance(usage, dict) else None


_TOOL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
MOST_TOKENS = MAX_TOKENS  # a usage figure above this is no count any model could report
_COUNT_SUFFIXES = ("_tokens", "_requests")  # keys whose values must be counts, whatever their type


def checked_usage(usage: JSONDict, where: str = "usage") -> tuple[JSONDict, list[str]]:
    """`usage` with every figure that is not a whole number from 0 to MOST_TOKENS replaced by None
    (unknown), and a note for each: NaN, Infinity, 1e400, -3, 2.5 or "12" never reach a price.
    Numbers under other keys are checked alike; other strings (service_tier) and nested objects
    (cache_creation) are kept, the latter checked in turn."""
    checked: JSONDict = {}
    notes: list[str] = []
    for key, value in usage.items():
        name = f"{where}.{key}"
        if isinstance(value, dict):
            checked[key], inner = checked_usage(value, name)
            notes.extend(inner)
            continue
        counted = key.endswith(_COUNT_SUFFIXES) or (
            isinstance(value, int | float) and not isinstance(value, bool)
        )
        if counted and value is not None and not _is_count(value):
            checked[key] = None
            notes.append(f"{name[:80]} {str(value)[:40]!r} is not a token count: recorded as unknown")
        else:
            checked[key] = value
    return checked, notes


def _is_count(value: Any) -> bool:
    return token_figure(value) is not None  # the one check every usage figure passes (core/usage/figures.py)


class _Assembler:
    """Folds stream events into one message, in the order the API sends them."""

    def __init__(self) -> None:
        self.reply = Reply()
        self._partial: dict[int, list[str]] = {}  # a tool block's input JSON, in pieces until its stop
        # String fields being extended, in pieces joined once (at the block's stop or the end): adding each
        # delta to the string would copy it every time, quadratic in a long reply.
        self._parts: dict[tuple[int, str], tuple[JSONDict, list[str]]] = {}

    def finish(self) -> Reply:
        """The reply, every extended string joined."""
        for (_, name), (block, parts) in self._parts.items():
            block[name] = "".join(parts)
        self._parts.clear()
        return self.reply

    def _join(self, block: Any, key: str | None = None) -> None:
        """Join the pending pieces of `block` (of one field, or all of them)."""
        for (owner, name), (target, parts) in list(self._parts.items()):
            if owner == id(block) and key in (None, name):
                target[name] = "".join(parts)
                del self._parts[(owner, name)]

    def feed(self, name: str, data: Any) -> None:
        self.reply.events += 1
        if not isinstance(data, dict):
            self.reply.problems.append(f"event {name}: not a JSON object")
            return
        kind = data.get("type", name)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            if kind != "ping":
                self.reply.problems.append(f"event {kind}: not known")
            return
        try:
            handler(data)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
            self.reply.problems.append(f"event {kind}: {error}")

    @property
    def _content(self) -> list[Any]:
        if self.reply.message is None:
            raise ValueError("before message_start")
        content = self.reply.message.setdefault("content", [])
        if not isinstance(content, list):
            raise TypeError("content is not a list")
        return content

    def _on_message_start(self, data: JSONDict) -> None:
        message = data["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
        self.finish()
        self.reply.message = copy.deepcopy(message)

    def _on_content_block_start(self, data: JSONDict) -> None:
        index, block = _index(data), dict(data["content_block"])
        content = self._content
        while len(content) <= index:
            content.append(None)
        content[index] = block
        if block.get("type") in _TOOL_BLOCKS:
            self._partial[index] = []

    def _on_content_block_delta(self, data: JSONDict) -> None:
        index, delta = _index(data), data["delta"]
        block = self._content[index]
        kind = delta.get("type")
        if kind == "input_json_delta":
            self._partial.setdefault(index, []).append(str(delta.get("partial_json", "")))
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature", "")
        elif kind == "citations_delta":
            if not isinstance(block.get("citations"), list):
                block["citations"] = []  # a text block may start with "citations": null
            block["citations"].append(delta.get("citation"))
        else:  # text_delta, thinking_delta and the like: each string field extends the block's own
            for key, value in delta.items():
                if key == "type":
                    continue
                pending = self._parts.get((id(block), key))
                if pending is not None and isinstance(value, str):
                    pending[1].append(value)
                elif isinstance(value, str) and isinstance(block.get(key), str):
                    self._parts[(id(block), key)] = (block, [block[key], value])
                else:
                    self._join(block, key)
                    block[key] = value

    def _on_content_block_stop(self, data: JSONDict) -> None:
        index = _index(data)
        self._join(self._content[index])
        if index in self._partial:
            raw = "".join(self._partial.pop(index))
            block = self._content[index]
            try:
                block["input"] = loads(raw)[0] if raw else {}
            except ValueError:
                block["input"] = raw
                self.reply.problems.append(f"block {index}: tool input is not JSON")

    def _on_message_delta(self, data: JSONDict) -> None:
        message = self.reply.message
        if message is None:
            raise ValueError("before message_start")
        delta = data.get("delta")
        if isinstance(delta, dict):
            message.update(delta)
        usage = data.get("usage")
        if isinstance(usage, dict):
            current = message.get("usage")
            merged: JSONDict = current if isinstance(current, dict) else {}
            merged.update({key: value for key, value in usage.items() if value is not None})
            message["usage"] = merged
        for key, value in data.items():
            if key not in ("type", "delta", "usage"):
                message[key] = value  # e.g. context_management: the edits the server applied

    def _on_message_stop(self, data: JSONDict) -> None:
        self.reply.complete = True

    def _on_error(self, data: JSONDict) -> None:
        self.reply.error = data.get("error") if isinstance(data.get("error"), dict) else data


def _index(data: JSONDict) -> int:
    """A block's index: a whole number below MAX_BLOCKS (ValueError otherwise, noted as the event's problem)."""
    index = data["index"]
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < MAX_BLOCKS:
        raise ValueError(
            f"index {str(index)[:20]!r} is not a block index (a whole number below {MAX_BLOCKS:,})"
        )
    return index


def reassemble_stream(text: str) -> Reply:
    """The message an SSE stream of the Messages API adds up to."""
    assembler = _Assembler()
    odd = 0
    for event in parse_sse(text):
        try:
            data, odd_here = loads(event.data)
        except ValueError:
            assembler.reply.events += 1
            assembler.reply.problems.append(f"event {event.event[:40]}: data is not JSON")
            continue
        odd += odd_here
        assembler.feed(event.event, data)
    reply = assembler.finish()
    if odd:
        reply.problems.append(_odd_numbers(odd))
    reply.problems = capped(reply.problems)
    return reply


def _odd_numbers(count: int) -> str:
    return (
        f"{count:,} number(s) were not finite (NaN, Infinity, or too large): kept as the text that was sent"
    )


def reply_from_body(text: str) -> Reply:
    """A non-streamed reply: a message, or an error body (`{"type": "error", "error": {...}}`)."""
    try:
        data, odd = loads(text)
    except ValueError:
        return Reply(problems=["the body is not JSON"])
    problems = [_odd_numbers(odd)] if odd else []
    if isinstance(data, dict) and data.get("type") == "error":
        error = data.get("error")
        return Reply(error=error if isinstance(error, dict) else data, problems=problems)
    if isinstance(data, dict):
        return Reply(message=data, complete=True, problems=problems)
    return Reply(problems=["the body is not a JSON object"])


def read_reply(
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
    *,
    limit: int | None = None,
    cut: bool = False,
) -> Reply:
    """The reply in `body` as the client got it (a stream when the content type says so).

    `limit`: the most bytes the body may inflate to. `cut`: `body` is only the reply's first part (the
    rest passed to the client unkept), so a stream's last, unfinished event is left out.
    """
    try:
        raw = decode_body(body, content_encoding, limit, partial=cut)
    except UndecodableBody as error:
        return Reply(problems=[str(error)])
    text = raw.decode("utf-8", errors="replace")
    if (content_type or "").split(";", 1)[0].strip().lower() == "text/event-stream":
        return reassemble_stream(whole_events(text) if cut else text)
    if not text.strip():
        return Reply()
    return reply_from_body(text)
