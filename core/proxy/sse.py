"""A Messages API reply rebuilt from the bytes the client got: a JSON body, or an SSE stream.

The proxy passes bytes through untouched and keeps a copy; this turns the copy into one Messages
API message (the reply as the client got it) after the exchange, off the forwarding path. Content
encodings (gzip, deflate) are undone first; a stream is parsed as Server-Sent Events and its events
folded into the message the way the API defines them (message_start, content_block_start/delta/stop,
message_delta, message_stop; an `error` event is kept as the error).
"""

from __future__ import annotations

import copy
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

JSONDict = dict[str, Any]


class UndecodableBody(ValueError):
    """The body uses a content encoding this module cannot undo."""


def decode_body(data: bytes, encoding: str | None) -> bytes:
    """`data` with its content encoding undone (identity, gzip, deflate); UndecodableBody otherwise."""
    codings = [part.strip().lower() for part in (encoding or "").split(",") if part.strip()]
    for coding in reversed(codings):  # applied in order, so undone from the last
        if coding == "identity":
            continue
        try:
            if coding in ("gzip", "x-gzip"):
                data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
            elif coding == "deflate":
                try:
                    data = zlib.decompress(data)
                except zlib.error:
                    data = zlib.decompress(data, -zlib.MAX_WBITS)  # raw deflate, as some servers send it
            else:
                raise UndecodableBody(f"content-encoding {coding} is not decoded")
        except zlib.error as error:
            raise UndecodableBody(f"content-encoding {coding}: {error}") from None
    return data


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str


def parse_sse(text: str) -> Iterator[ServerSentEvent]:
    """The events of an SSE stream (the WHATWG rules: blank line ends an event, `data:` lines join with
    newlines, `:` lines are comments, a missing `event:` means "message")."""
    event = ""
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
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


class _Assembler:
    """Folds stream events into one message, in the order the API sends them."""

    def __init__(self) -> None:
        self.reply = Reply()
        self._partial: dict[int, str] = {}

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
        self.reply.message = copy.deepcopy(message)

    def _on_content_block_start(self, data: JSONDict) -> None:
        index, block = int(data["index"]), dict(data["content_block"])
        content = self._content
        while len(content) <= index:
            content.append(None)
        content[index] = block
        if block.get("type") in _TOOL_BLOCKS:
            self._partial[index] = ""

    def _on_content_block_delta(self, data: JSONDict) -> None:
        index, delta = int(data["index"]), data["delta"]
        block = self._content[index]
        kind = delta.get("type")
        if kind == "input_json_delta":
            self._partial[index] = self._partial.get(index, "") + str(delta.get("partial_json", ""))
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
                if isinstance(value, str) and isinstance(block.get(key), str):
                    block[key] += value
                else:
                    block[key] = value

    def _on_content_block_stop(self, data: JSONDict) -> None:
        index = int(data["index"])
        if index in self._partial:
            raw = self._partial.pop(index)
            block = self._content[index]
            try:
                block["input"] = json.loads(raw) if raw else {}
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


def reassemble_stream(text: str) -> Reply:
    """The message an SSE stream of the Messages API adds up to."""
    assembler = _Assembler()
    for event in parse_sse(text):
        try:
            data = json.loads(event.data)
        except ValueError:
            assembler.reply.events += 1
            assembler.reply.problems.append(f"event {event.event}: data is not JSON")
            continue
        assembler.feed(event.event, data)
    return assembler.reply


def reply_from_body(text: str) -> Reply:
    """A non-streamed reply: a message, or an error body (`{"type": "error", "error": {...}}`)."""
    try:
        data = json.loads(text)
    except ValueError:
        return Reply(problems=["the body is not JSON"])
    if isinstance(data, dict) and data.get("type") == "error":
        error = data.get("error")
        return Reply(error=error if isinstance(error, dict) else data)
    if isinstance(data, dict):
        return Reply(message=data, complete=True)
    return Reply(problems=["the body is not a JSON object"])


def read_reply(body: bytes, content_type: str | None, content_encoding: str | None) -> Reply:
    """The reply in `body` as the client got it (a stream when the content type says so)."""
    try:
        raw = decode_body(body, content_encoding)
    except UndecodableBody as error:
        return Reply(problems=[str(error)])
    text = raw.decode("utf-8", errors="replace")
    if (content_type or "").split(";", 1)[0].strip().lower() == "text/event-stream":
        return reassemble_stream(text)
    if not text.strip():
        return Reply()
    return reply_from_body(text)
