"""A loopback stand-in for OpenAI's API: Chat Completions and Responses, JSON and streamed, and errors.

An aiohttp app on 127.0.0.1 in the test's own event loop. Shapes follow OpenAI's API reference, with
the installed `openai` SDK's types (`ChatCompletion`, `ChatCompletionChunk`, `Response` and the
`response.*` stream events) as the reference: the tests parse every reply with that SDK. Each
request's body bytes and headers are kept (`received`), and so is every byte of each reply as it was
written (`sent`), so a test can compare both ends of the proxy.

A reply is scripted (`script(...)`), else an `OpenAIText` echo. Usage is deterministic: the prompt is
a quarter of the request body's length in tokens, `cached` of it cached when the reply says so.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

JSONDict = dict[str, Any]
_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> JSONDict:
        value = json.loads(self.body)
        assert isinstance(value, dict)
        return value


@dataclass(frozen=True)
class OpenAIText:
    """An answer: text, optionally a tool call (`tool`: name and arguments), with `cached` prompt tokens
    reported as cached (None: the usage says nothing about the cache)."""

    text: str = "ok"
    tool: tuple[str, JSONDict] | None = None
    cached: int | None = 0
    reasoning: int = 0
    chunks: int = 3  # text deltas in a stream


@dataclass(frozen=True)
class OpenAIError:
    """An error reply: `{"error": {"message", "type", "param", "code"}}` with optional retry headers."""

    status: int = 429
    kind: str = "rate_limit_exceeded"
    message: str = "Rate limit reached"
    retry_after: str | None = "0"
    retry_after_ms: str | None = "10"


Scripted = OpenAIText | OpenAIError


def _split(text: str, parts: int) -> list[str]:
    parts = max(1, min(parts, len(text) or 1))
    size = -(-len(text) // parts) if text else 1
    return [text[index : index + size] for index in range(0, len(text), size)] or [""]


@dataclass
class FakeOpenAI:
    """The stand-in: `await start()`, `base_url` (ends in /v1, as OPENAI_BASE_URL), `await aclose()`."""

    received: list[Received] = field(default_factory=list)
    sent: list[bytes] = field(default_factory=list)
    scripted: list[Scripted] = field(default_factory=list)
    delay: float = 0.0  # seconds between stream events
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def script(self, *replies: Scripted) -> None:
        self.scripted.extend(replies)

    async def start(self) -> FakeOpenAI:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # --- handlers ---------------------------------------------------------------------------------

    async def _take(self, request: web.Request) -> tuple[JSONDict, Scripted, int]:
        body = await request.read()
        self.received.append(Received(request.path, dict(request.headers), body))
        reply = self.scripted.pop(0) if self.scripted else OpenAIText(f"echo {len(self.received)}")
        return json.loads(body), reply, max(1, len(body) // 4)

    async def _error(self, error: OpenAIError) -> web.Response:
        data = json.dumps(
            {"error": {"message": error.message, "type": error.kind, "param": None, "code": error.kind}}
        ).encode()
        headers = {"x-request-id": _id("req")}
        if error.retry_after is not None:
            headers["retry-after"] = error.retry_after
        if error.retry_after_ms is not None:
            headers["retry-after-ms"] = error.retry_after_ms
        self.sent.append(data)
        return web.Response(status=error.status, body=data, content_type="application/json", headers=headers)

    async def _json(self, payload: JSONDict) -> web.Response:
        data = json.dumps(payload).encode()
        self.sent.append(data)
        return web.Response(body=data, content_type="application/json", headers={"x-request-id": _id("req")})

    async def _stream(self, request: web.Request, frames: list[bytes]) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", "x-request-id": _id("req")}
        )
        await response.prepare(request)
        written: list[bytes] = []
        for frame in frames:
            if self.delay:
                await asyncio.sleep(self.delay)
            await response.write(frame)
            written.append(frame)
        await response.write_eof()
        self.sent.append(b"".join(written))
        return response

    # --- chat completions -------------------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, reply, prompt = await self._take(request)
        if isinstance(reply, OpenAIError):
            return await self._error(reply)
        model = str(body.get("model", "gpt-4o"))
        usage = _chat_usage(reply, prompt)
        completion_id = _id("chatcmpl")
        tool_calls = (
            [
                {
                    "id": _id("call"),
                    "type": "function",
                    "function": {"name": reply.tool[0], "arguments": json.dumps(reply.tool[1])},
                }
            ]
            if reply.tool is not None
            else None
        )
        finish = "tool_calls" if tool_calls else "stop"
        if body.get("stream") is not True:
            message: JSONDict = {"role": "assistant", "content": reply.text, "refusal": None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            return await self._json(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": 1_780_000_000,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                    "usage": usage,
                    "system_fingerprint": "fp_fake",
                }
            )

        def chunk(delta: JSONDict, finish_reason: str | None = None, with_usage: JSONDict | None = None) -> bytes:
            data: JSONDict = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": 1_780_000_000,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]
                if with_usage is None
                else [],
            }
            if with_usage is not None:
                data["usage"] = with_usage
            return b"data: " + json.dumps(data).encode() + b"\n\n"

        frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
        frames += [chunk({"content": piece}) for piece in _split(reply.text, reply.chunks)]
        if tool_calls:
            call = tool_calls[0]
            arguments = call["function"]["arguments"]
            half = len(arguments) // 2
            frames.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": arguments[:half]},
                            }
                        ]
                    }
                )
            )
            frames.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}))
        frames.append(chunk({}, finish))
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            frames.append(chunk({}, with_usage=usage))
        frames.append(b"data: [DONE]\n\n")
        return await self._stream(request, frames)

    # --- responses --------------------------------------------------------------------------------

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body, reply, prompt = await self._take(request)
        if isinstance(reply, OpenAIError):
            return await self._error(reply)
        model = str(body.get("model", "gpt-5"))
        message_item: JSONDict = {
            "id": _id("msg"),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
        }
        output: list[JSONDict] = []
        if reply.reasoning:
            output.append(
                {
                    "id": _id("rs"),
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "Thinking about it."}],
                    "encrypted_content": "gAAAA" + "x" * 64,
                }
            )
        output.append(message_item)
        if reply.tool is not None:
            output.append(
                {
                    "id": _id("fc"),
                    "type": "function_call",
                    "status": "completed",
                    "call_id": _id("call"),
                    "name": reply.tool[0],
                    "arguments": json.dumps(reply.tool[1]),
                }
            )
        response = _response(_id("resp"), model, body, "completed", output, _responses_usage(reply, prompt))
        if body.get("stream") is not True:
            return await self._json(response)
        sequence = itertools.count()

        def event(kind: str, **fields: Any) -> bytes:
            data = {"type": kind, "sequence_number": next(sequence), **fields}
            return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        frames = [event("response.created", response=pending), event("response.in_progress", response=pending)]
        for index, item in enumerate(output):
            if item["type"] != "message":
                frames.append(event("response.output_item.added", output_index=index, item=item))
                frames.append(event("response.output_item.done", output_index=index, item=item))
                continue
            empty = {**item, "status": "in_progress", "content": []}
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            frames.append(event("response.output_item.added", output_index=index, item=empty))
            frames.append(
                event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=part)
            )
            for piece in _split(reply.text, reply.chunks):
                frames.append(
                    event(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=piece,
                        logprobs=[],
                    )
                )
            frames.append(
                event(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    text=reply.text,
                    logprobs=[],
                )
            )
            frames.append(
                event(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=item["content"][0],
                )
            )
            frames.append(event("response.output_item.done", output_index=index, item=item))
        frames.append(event("response.completed", response=response))
        return await self._stream(request, frames)


def _chat_usage(reply: OpenAIText, prompt: int) -> JSONDict:
    output = max(1, len(reply.text) // 4) + reply.reasoning
    usage: JSONDict = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
    if reply.cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": min(reply.cached, prompt), "audio_tokens": 0}
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning, "audio_tokens": 0}
    return usage


def _responses_usage(reply: OpenAIText, prompt: int) -> JSONDict:
    output = max(1, len(reply.text) // 4) + reply.reasoning
    usage: JSONDict = {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}
    usage["output_tokens_details"] = {"reasoning_tokens": reply.reasoning}
    if reply.cached is not None:
        usage["input_tokens_details"] = {"cached_tokens": min(reply.cached, prompt)}
    return usage


def _response(
    response_id: str, model: str, body: Mapping[str, Any], status: str, output: list[JSONDict], usage: JSONDict
) -> JSONDict:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_780_000_000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }
