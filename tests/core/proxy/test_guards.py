"""What `ctxtui proxy` refuses to forward or to show (issue 30, items 3, 4 and 5): proxies in a loop, paths
that leave `/v1` once resolved, and credentials anywhere in what it prints, shows or writes."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from core.proxy.calls import describe_call
from core.proxy.http import HOPS_HEADER, api_path
from core.proxy.limits import MAX_HOPS
from core.proxy.record import Recorder
from core.proxy.redact import Redactor
from core.proxy.server import ProxyServer
from core.proxy.watch import Watch
from tests.support.fakeapi import FakeAnthropicServer, error_reply, text_reply
from tests.support.proxy import TEST_KEY, read_record, running_proxy, sdk_client

MODEL = "claude-sonnet-5-5"
HI: list[Any] = [{"role": "user", "content": "hi"}]
BODY = json.dumps({"model": MODEL, "max_tokens": 20, "messages": HI}).encode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def raw_request(port: int, method: str, target: str, body: bytes = b"",
                      headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request with the target exactly as given (HTTP clients resolve dot segments themselves)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close",
             f"Content-Length: {len(body)}", "Content-Type: application/json", f"x-api-key: {TEST_KEY}",
             *(f"{name}: {value}" for name, value in (headers or {}).items())]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    found = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), found, rest


# --- 3. proxies in a loop ----------------------------------------------------------------------------


async def test_two_proxies_that_are_each_other_s_upstream_refuse_the_loop_at_once(tmp_path: Path) -> None:
    port_b = free_port()
    async with running_proxy(f"http://127.0.0.1:{port_b}", tmp_path / "a") as a:
        (tmp_path / "b").mkdir()
        watch_b = Watch(Recorder(tmp_path / "b"))
        b = ProxyServer(a.url, watch_b, port=port_b)
        await b.start()
        try:
            async with httpx2.AsyncClient(timeout=20) as client:
                looped = await client.post(f"{a.url}/v1/messages", content=BODY,
                                           headers={"content-type": "application/json", "x-api-key": TEST_KEY})
            await a.finished(1)
        finally:
            await b.aclose()
            await watch_b.aclose()
    assert looped.status_code == 508 and looped.headers["x-should-retry"] == "false"
    error = looped.json()["error"]
    assert error["type"] == "api_error" and "loop detected: it already went through this proxy" in error["message"]
    assert a.server.exchanges == 1 and b.exchanges == 1, "one exchange each, not hundreds"
    assert len(list((tmp_path / "a" / ".ctxtui" / "proxy").glob("*.jsonl"))) == 1
    assert len(list((tmp_path / "b" / ".ctxtui" / "proxy").glob("*.jsonl"))) == 1


async def test_a_chain_of_proxies_passes_and_too_many_hops_are_refused(fake_api: FakeAnthropicServer) -> None:
    async with running_proxy(fake_api.base_url) as inner, running_proxy(inner.url) as outer, \
            sdk_client(outer.url) as client:
        reply = await client.messages.create(model=MODEL, max_tokens=20, messages=HI)
        hops = fake_api.requests[0].headers[HOPS_HEADER.lower()].split(", ")
        ids = [f"{number:016x}" for number in range(MAX_HOPS)]
        status, headers, data = await raw_request(inner.server.port, "POST", "/v1/messages", BODY,
                                                  {HOPS_HEADER: ", ".join(ids)})
    assert reply.content[0].text == "ok"  # type: ignore[union-attr]
    assert hops == [outer.server.id, inner.server.id], "each proxy adds its own id"
    assert status == 508 and headers["x-should-retry"] == "false"
    assert f"it went through {MAX_HOPS} ctxtui proxies already" in json.loads(data)["error"]["message"]
    assert len(fake_api.requests) == 1


# --- 4. paths that leave /v1 ---------------------------------------------------------------------------

ESCAPING = ["/v1/../admin", "/v1/%2e%2e/admin", "/v1/%2E%2E/admin", "/v1/.%2e/admin", "/v1/..%2fadmin",
            "/v1/%2e%2e%2fadmin", "/v1/%252e%252e/admin", "/v1/..\\admin", "/v1%5c..%5cadmin", "/v1/./../admin",
            "/v1/messages/../../admin", "/v1/..", "/v1%2f..%2fadmin", "/v1%2F../admin", "/%76%31/../admin",
            "http://127.0.0.1/v1/messages", "*", "//v1/messages"]


@pytest.mark.parametrize("target", ESCAPING)
def test_a_path_that_leaves_v1_once_resolved_is_refused(target: str) -> None:
    assert api_path(target) is None


@pytest.mark.parametrize(("target", "forwarded"), [
    ("/v1/messages", "/v1/messages"),
    ("/v1/messages?beta=true", "/v1/messages?beta=true"),
    ("/v1/models/claude-sonnet-5-5", "/v1/models/claude-sonnet-5-5"),
    ("/v1/x/../messages", "/v1/messages"),
    ("/v1/./messages", "/v1/messages"),
    ("/%76%31/messages", "/v1/messages"),
    ("/v1/files/a%20b", "/v1/files/a%20b"),
    ("/v1", "/v1"),
])
def test_a_path_under_v1_is_forwarded_as_resolved(target: str, forwarded: str) -> None:
    assert api_path(target) == forwarded


async def test_dot_segments_never_reach_the_upstream(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    async with running_proxy(fake_api.base_url, tmp_path) as proxy:
        for target in ESCAPING[:6]:
            got, _, data = await raw_request(proxy.server.port, "GET", target)
            assert got == 404 and json.loads(data)["error"]["type"] == "not_found_error", target
        status, _, _ = await raw_request(proxy.server.port, "POST", "/v1/x/../messages", BODY)
        assert status == 200
        (call,) = await proxy.finished(1)
    assert [request.path for request in fake_api.requests] == ["/v1/messages"], "only the resolved path went on"
    assert read_record(Path(call.record or ""))[0]["path"] == "/v1/messages", "and it was watched as such"


# --- 5. no secret in any output ------------------------------------------------------------------------

OTHER_KEY = "sk-ant-api03-someone-elses-key-4242424242"


def recorded(path: str | None) -> bytes:
    return Path(path or "").read_bytes()


async def test_a_token_the_upstream_echoes_reaches_no_output(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(error_reply(401, "authentication_error", f"invalid bearer token Bearer {TEST_KEY}"),
                    text_reply(f"the other key was {OTHER_KEY}"))
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, sdk_client(proxy.url) as client:
        with pytest.raises(anthropic.AuthenticationError) as refused:
            await client.messages.create(model=MODEL, max_tokens=20, messages=HI)
        await client.messages.create(model=MODEL, max_tokens=20,
                                     messages=[{"role": "user", "content": f"my key is {TEST_KEY}, {OTHER_KEY}"}])
        calls = await proxy.finished(2)
    assert TEST_KEY in str(refused.value.body), "the client gets its reply unchanged"
    lines = [describe_call(call) for call in calls]
    assert "[redacted]" in lines[0] and "invalid bearer token" in lines[0]
    for call, line in zip(calls, lines, strict=True):
        shown = repr(call) + line  # every field the live view reads, and the --headless line
        for secret in (TEST_KEY, OTHER_KEY):
            assert secret not in shown, secret
            assert secret.encode() not in recorded(call.record)
    assert calls[1].messages[0]["content"] == "my key is [redacted], [redacted]"
    assert calls[1].reply is not None and calls[1].reply["content"][0]["text"] == "the other key was [redacted]"


def test_the_redactor_reaches_escaped_and_nested_secrets() -> None:
    redactor = Redactor([TEST_KEY, "quoted\"secret-value"])
    value = {"a": [TEST_KEY, {"b": f"x {TEST_KEY} y"}], "quoted\"secret-value": 1, "clean": ["text"]}
    assert redactor.value(value) == {"a": ["[redacted]", {"b": "x [redacted] y"}], "[redacted]": 1, "clean": ["text"]}
    assert redactor.text(json.dumps({"k": "quoted\"secret-value"})) == '{"k": "[redacted]"}'
    clean = {"messages": [{"role": "user", "content": "hi"}]}
    assert redactor.value(clean) is clean, "a clean value is not copied"
    assert redactor.text("authorization: BEARER abc.def-ghi_jkl") == "authorization: BEARER [redacted]"
