"""`ctxtui proxy` with OpenAI-format clients: the real `openai` SDK through the proxy to a loopback stand-in.

Chat Completions and Responses, JSON and streamed: bytes equal both ways, the recording readable by
`ctxtui inspect`, no credential on disk, the view's copy converted (tool calls, outputs, reasoning,
opaque items with their size), usage read as reported (cached tokens only where the reply says).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from core.proxy.calls import ProxyCall, call_sample, describe_call
from core.proxy.openai import OPAQUE, opaque, request_view, window_of
from core.proxy.record import Recorder
from core.proxy.server import ProxyServer
from core.proxy.watch import Watch
from tests.support.cli import ctxtui
from tests.support.fakeopenai import FakeOpenAI, OpenAIError, OpenAIText
from tests.support.proxy import RunningProxy

KEY = "sk-proj-openai-test-key-0123456789abcdefABCDEF"


@dataclass
class Wire:
    fake: FakeOpenAI
    proxy: RunningProxy
    sent: list[bytes]  # each request body as the client sent it

    def client(self, **options: Any) -> openai.AsyncOpenAI:
        """The real SDK pointed at the proxy (`OPENAI_BASE_URL=http://127.0.0.1:P/v1`), no retries unless asked."""

        async def keep(request: Any) -> None:  # the SDK's HTTP library's Request (httpx, or httpx2 from 3.x)
            self.sent.append(request.content)

        options.setdefault("max_retries", 0)
        http = openai.DefaultAsyncHttpxClient(event_hooks={"request": [keep]})
        return openai.AsyncOpenAI(base_url=f"{self.proxy.url}/v1", api_key=KEY, http_client=http, **options)


@asynccontextmanager
async def wire(workdir: Path | None) -> AsyncIterator[Wire]:
    """The stand-in and a proxy whose OpenAI upstream it is (the Anthropic upstream is elsewhere)."""
    async with FakeOpenAI() as fake:
        watch = Watch(Recorder(workdir) if workdir is not None else None)
        server = ProxyServer("http://127.0.0.1:9", watch, openai_upstream=fake.root)
        await server.start()
        try:
            yield Wire(fake, RunningProxy(server, watch), [])
        finally:
            await server.aclose()
            await watch.aclose()


CHAT_HISTORY: list[Any] = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "README.md\nsetup.py"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 400}},
        ],
    },
]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
RESPONSES_INPUT: list[Any] = [
    {"role": "developer", "content": "Answer briefly."},
    {"role": "user", "content": [{"type": "input_text", "text": "What is in main.py?"}]},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "I should read the file."}],
        "encrypted_content": "gAAAAB" + "z" * 300,
    },
    {"type": "function_call", "call_id": "call_9", "name": "read_file", "arguments": '{"path": "main.py"}'},
    {"type": "function_call_output", "call_id": "call_9", "output": "print('hi')"},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "E" * 1000},
    {"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64," + "B" * 200}]},
]


def recorded(call: ProxyCall) -> list[dict[str, Any]]:
    assert call.record is not None
    return [json.loads(line) for line in Path(call.record).read_text().splitlines()]


def blocks(call: ProxyCall, kind: str) -> list[dict[str, Any]]:
    """The call's blocks of one type ("opaque": the placeholders, as their facts)."""
    found = [
        block
        for message in call.messages
        for block in (message["content"] if isinstance(message["content"], list) else [])
    ]
    if kind == "opaque":
        return [block[OPAQUE] for block in found if OPAQUE in block]
    return [block for block in found if block.get("type") == kind]


async def test_chat_completions_json_bytes_unchanged_recorded_and_converted(tmp_path: Path) -> None:
    async with wire(tmp_path) as w:
        w.fake.script(OpenAIText("Two files.", tool=("bash", {"command": "cat README.md"}), cached=64))
        async with w.client() as client:
            raw = await client.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=CHAT_HISTORY, tools=TOOLS
            )
            completion = raw.parse()
        [call] = await w.proxy.finished(1)
    assert completion.choices[0].message.content == "Two files."
    assert completion.choices[0].message.tool_calls is not None
    assert w.fake.received[0].body == w.sent[0], "the upstream got the body as the client sent it"
    assert raw.http_response.content == w.fake.sent[0], "the client got the reply as the upstream sent it"
    assert w.fake.received[0].headers["Authorization"] == f"Bearer {KEY}"
    assert call.wire == "chat" and call.model == "gpt-4o" and call.status == 200
    assert call.system == [{"type": "text", "text": "You are a careful coding agent."}]
    assert [message["role"] for message in call.messages] == ["user", "assistant", "user"]
    assert blocks(call, "tool_use") == [{"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}]
    assert blocks(call, "tool_result")[0]["content"] == "README.md\nsetup.py"
    [image] = blocks(call, "opaque")
    assert image["item"] == "image_url" and image["bytes"] > 400
    assert call.tools is not None and call.tools[0]["name"] == "bash" and "input_schema" in call.tools[0]
    assert call.reply is not None and call.reply["content"][-1]["name"] == "bash"
    assert call.usage is not None and call.usage.cache_read_tokens == 64
    assert call.usage.input_tokens + 64 == raw.parse().usage.prompt_tokens  # type: ignore[union-attr]
    assert call.usage.figure("cache_creation_tokens") is None, "OpenAI reports no cache writes: unknown"
    assert " cache r 64 w ? out " in describe_call(call), "the --headless line says unknown, not 0"
    assert call_sample(call).cache_creation_tokens is None and call_sample(call).cache_read_tokens == 64
    request, response = recorded(call)
    assert request["path"] == "/v1/chat/completions" and request["body"] == json.loads(w.sent[0])
    assert response["usage"]["prompt_tokens_details"]["cached_tokens"] == 64
    text = json.dumps([request, response])
    assert KEY not in text and "Bearer" not in text


async def test_chat_completions_streamed_event_by_event(tmp_path: Path) -> None:
    async with wire(tmp_path) as w:
        w.fake.script(OpenAIText("streamed answer here", cached=None, chunks=4), OpenAIText("again", chunks=2))
        async with w.client() as client:
            stream = await client.chat.completions.create(
                model="gpt-4.1", messages=CHAT_HISTORY[:2], stream=True, stream_options={"include_usage": True}
            )
            texts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
            async with client.chat.completions.with_streaming_response.create(
                model="gpt-4.1", messages=CHAT_HISTORY[:2], stream=True
            ) as response:
                got = b"".join([piece async for piece in response.iter_bytes()])
        first, second = await w.proxy.finished(2)
    assert "".join(texts) == "streamed answer here"
    assert got == w.fake.sent[1] and w.fake.received[1].body == w.sent[1]
    assert first.stream and first.complete and first.reply is not None
    assert first.reply["content"] == [{"type": "text", "text": "streamed answer here"}]
    assert first.usage is not None and first.usage.figure("cache_read_tokens") is None, "not reported: unknown"
    assert second.usage is None, "no usage chunk asked for: none invented"
    assert second.conversation == first.conversation and second.turn == 2
    assert recorded(first)[1]["streamed"] is True


async def test_responses_json_and_streamed_with_opaque_items(tmp_path: Path) -> None:
    async with wire(tmp_path) as w:
        w.fake.script(OpenAIText("It prints hi.", reasoning=12, cached=100), OpenAIText("Streamed.", chunks=3))
        async with w.client() as client:
            raw = await client.responses.with_raw_response.create(
                model="gpt-5", instructions="Be exact.", input=RESPONSES_INPUT
            )
            response = raw.parse()
            stream = await client.responses.create(model="gpt-5", input="hello there", stream=True)
            deltas = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        first, second = await w.proxy.finished(2)
    assert response.output_text == "It prints hi." and "".join(deltas) == "Streamed."
    assert raw.http_response.content == w.fake.sent[0] and w.fake.received[0].body == w.sent[0]
    assert first.wire == "responses"
    assert first.system == [{"type": "text", "text": "Be exact."}, {"type": "text", "text": "Answer briefly."}]
    assert blocks(first, "thinking") == [{"type": "thinking", "thinking": "I should read the file."}]
    assert blocks(first, "tool_use")[0]["input"] == {"path": "main.py"}
    assert blocks(first, "tool_result")[0] == {"type": "tool_result", "tool_use_id": "call_9", "content": "print('hi')"}
    opaques = {block["item"]: block["bytes"] for block in blocks(first, "opaque")}
    assert opaques["reasoning (encrypted)"] == 306 and opaques["compaction"] > 1000 and opaques["input_image"] > 200
    assert first.reply is not None and [block["type"] for block in first.reply["content"]] == ["thinking", "text", "text"]
    assert first.reply["content"][1]["text"] == "[opaque reasoning (encrypted): 69 bytes, not readable by ctxtui]"
    assert first.usage is not None and first.usage.cache_read_tokens == 100 and first.usage.thinking_tokens == 12
    assert second.reply is not None and second.reply["content"] == [{"type": "text", "text": "Streamed."}]
    assert second.complete and second.usage is not None and second.usage.output_tokens >= 1
    assert window_of(first.model) is not None


async def test_an_error_with_retry_after_is_passed_on_and_the_sdk_retries(tmp_path: Path) -> None:
    async with wire(tmp_path) as w:
        w.fake.script(OpenAIError(429, retry_after="0", retry_after_ms="5"), OpenAIText("after the wait"))
        async with w.client(max_retries=2) as client:
            completion = await client.chat.completions.create(model="gpt-4o", messages=CHAT_HISTORY[:2])
        failed, answered = await w.proxy.finished(2)
    assert completion.choices[0].message.content == "after the wait"
    assert len(w.fake.received) == 2 and w.fake.received[0].body == w.fake.received[1].body
    assert failed.status == 429 and failed.error is not None and failed.error["type"] == "rate_limit_exceeded"
    assert recorded(failed)[1]["headers"]["retry-after"] == "0"
    assert answered.status == 200


async def test_two_clients_at_once(tmp_path: Path) -> None:
    async with wire(tmp_path) as w:
        w.fake.delay = 0.01
        async with w.client() as one, w.client() as two:

            async def ask(client: openai.AsyncOpenAI, question: str) -> str:
                stream = await client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": question}], stream=True
                )
                return "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])

            answers = await asyncio.gather(ask(one, "first question"), ask(two, "second question"))
        calls = await w.proxy.finished(2)
    assert sorted(answers) == ["echo 1", "echo 2"]
    assert sorted(call.conversation for call in calls) == [1, 2]
    assert len(os.listdir(tmp_path / ".ctxtui" / "proxy")) == 2


async def test_the_proxys_own_errors_are_openai_shaped() -> None:
    watch = Watch()
    server = ProxyServer("http://127.0.0.1:9", watch, openai_upstream="http://127.0.0.1:9")
    await server.start()
    try:
        async with openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0) as client:
            with pytest.raises(openai.APIStatusError) as caught:
                await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    finally:
        await server.aclose()
        await watch.aclose()
    assert caught.value.status_code == 502
    body = caught.value.body
    assert isinstance(body, dict) and set(body) == {"message", "type", "code"}, "the SDK reads body['error']"
    assert "cannot be reached" in body["message"]


def test_paths_pick_their_upstream() -> None:
    server = ProxyServer("https://anthropic.example", openai_upstream="https://openai.example")
    assert server.upstream_for("/v1/messages") == "https://anthropic.example"
    assert server.upstream_for("/v1/chat/completions") == "https://openai.example"
    assert server.upstream_for("/v1/responses/resp_1/cancel") == "https://openai.example"
    one = ProxyServer("https://only.example")
    assert one.upstream_for("/v1/responses") == "https://only.example", "--upstream serves every path"


def test_the_cli_reads_openai_base_url() -> None:
    import argparse

    from tui.cli.proxy import proxy_options

    def options(upstream: str | None, environ: dict[str, str]) -> Any:
        args = argparse.Namespace(
            proxy_host="127.0.0.1", proxy_port="0", upstream=upstream, workdir=None, no_record=True, headless=True
        )
        return proxy_options(args, environ)

    assert options(None, {}).openai_upstream == "https://api.openai.com"
    assert options(None, {"OPENAI_BASE_URL": "http://127.0.0.1:4000/v1/"}).openai_upstream == "http://127.0.0.1:4000"
    assert options("http://127.0.0.1:5000", {"OPENAI_BASE_URL": "http://x.example/v1"}).openai_upstream is None


def test_unreadable_parts_are_opaque_with_their_size_never_dropped() -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "UklGR" * 50, "format": "wav"}}
    view = request_view({"model": "gpt-4o", "messages": [{"role": "user", "content": [audio]}]}, "chat")
    assert view["messages"] == [{"role": "user", "content": [opaque("input_audio", audio)]}]
    assert view["messages"][0]["content"][0][OPAQUE]["bytes"] == len(json.dumps(audio).encode())
    reference = request_view({"input": [{"type": "item_reference", "id": "msg_1"}]}, "responses")
    assert reference["messages"][0]["content"][0][OPAQUE]["item"] == "item_reference"


async def test_recordings_are_readable_by_inspect(tmp_path: Path) -> None:
    async with wire(tmp_path) as w:
        async with w.client() as client:
            await client.chat.completions.create(model="gpt-4o", messages=CHAT_HISTORY, tools=TOOLS)
            await client.responses.create(model="gpt-5", input=RESPONSES_INPUT)
        chat, responses = await w.proxy.finished(2)
    for call, messages in ((chat, 3), (responses, 5)):
        result = ctxtui("inspect", str(call.record), "--report", "--output-format", "json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["messages"] == messages
        assert report["proxy"]["status"] == 200 and report["proxy"]["model"] == call.model


def test_an_openai_base_url_that_is_the_proxy_itself_is_refused(tmp_path: Path) -> None:
    import socket

    from tests.support.cli import env_without_key

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    env = env_without_key(OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    result = ctxtui("proxy", "--port", str(port), "--workdir", str(tmp_path), "--no-record", env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"ctxtui proxy: error: the upstream http://127.0.0.1:{port} is this proxy "
                                          "(unset OPENAI_BASE_URL or pass --upstream)"]
