"""What `ctxtui proxy` keeps on disk: one private file per exchange, never a credential, readable by inspect."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from core.proxy.calls import ProxyCall
from tests.support.claude_code import CLAUDE_CODE_SYSTEM, CLAUDE_CODE_TOOLS, claude_code_messages
from tests.support.cli import ctxtui
from tests.support.fakeapi import FakeAnthropicServer, error_reply, text_reply
from tests.support.proxy import TEST_KEY, read_record, running_proxy, sdk_client

MODEL = "claude-sonnet-5-5"
X_API_KEY = "sk-ant-api03-the-x-api-key-header-value-987654"
COOKIE_VALUE = "cookie-secret-value-314159"
PROXY_AUTH = "Basic cHJveHk6cGFzc3dvcmQxMjM0NQ=="


def every_file(root: Path) -> list[Path]:
    return [Path(folder) / name for folder, _, names in os.walk(root) for name in names]


async def test_no_secret_reaches_the_disk(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    # The upstream echoes the key in an error, and the prompt quotes it: both are scrubbed from the record.
    fake_api.script(text_reply("fine"), error_reply(401, "authentication_error", f"invalid x-api-key {X_API_KEY}"))
    headers = {"x-api-key": X_API_KEY, "Cookie": f"session={COOKIE_VALUE}", "Proxy-Authorization": PROXY_AUTH}
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, \
            sdk_client(proxy.url, default_headers=headers) as client:
        await client.messages.create(model=MODEL, max_tokens=20,
                                     messages=[{"role": "user", "content": f"my key is {TEST_KEY}"}])
        with pytest.raises(Exception, match="authentication_error"):
            await client.messages.create(model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "again"}])
        await proxy.finished(2)
    upstream = fake_api.requests[0].headers
    assert upstream["authorization"] == f"Bearer {TEST_KEY}" and upstream["x-api-key"] == X_API_KEY
    assert upstream["cookie"] == f"session={COOKIE_VALUE}"
    assert "proxy-authorization" not in upstream, "a hop-by-hop header stops at the proxy"
    files = every_file(tmp_path)
    assert len([path for path in files if path.suffix == ".jsonl"]) == 2
    for path in files:
        data = path.read_bytes()
        for secret in (TEST_KEY, X_API_KEY, COOKIE_VALUE, PROXY_AUTH, PROXY_AUTH.split()[1]):
            assert secret.encode() not in data, f"{secret[:12]}... in {path}"
        assert b"authorization" not in data.lower() and b"x-api-key\"" not in data.lower()
    records = [record for path in files if path.suffix == ".jsonl" for record in read_record(path)]
    assert any("[redacted]" in json.dumps(record) for record in records)


async def test_recordings_are_private_and_kept_out_of_git(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, sdk_client(proxy.url) as client:
        await client.messages.create(model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
        (call,) = await proxy.finished(1)
    check_private_record(tmp_path, call, fake_api)


def check_private_record(tmp_path: Path, call: ProxyCall, fake_api: FakeAnthropicServer) -> None:
    state = tmp_path / ".ctxtui"
    assert (state / ".gitignore").read_text() == "*\n"
    for folder in (state, state / "proxy"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    record = Path(call.record or "")
    assert record.parent == state / "proxy" and record.name == f"{call.id}.jsonl"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    request, response = read_record(record)
    assert request["type"] == "proxy_request" and request["body"] == fake_api.message_requests()[0]
    assert request["user_agent"].startswith("AsyncAnthropic/Python")
    assert response["type"] == "proxy_response" and response["status"] == 200
    assert response["reply"]["content"] == [{"type": "text", "text": "ok"}]
    assert response["usage"]["output_tokens"] >= 1
    timings = response["timings"]
    assert 0 <= timings["headers"] <= timings["first_byte"] <= timings["total"]


async def test_no_record_keeps_nothing_on_disk(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    async with running_proxy(fake_api.base_url, None) as proxy, sdk_client(proxy.url) as client:
        async with client.messages.stream(model=MODEL, max_tokens=20,
                                          messages=[{"role": "user", "content": "hi"}]) as stream:
            await stream.get_final_message()
        (call,) = await proxy.finished(1)
    assert call.record is None and call.usage is not None
    assert_empty(tmp_path)


def assert_empty(folder: Path) -> None:
    assert list(folder.iterdir()) == []


# --- a request in Claude Code's shape --------------------------------------------------------------

async def test_a_claude_code_request_is_recorded_inspected_and_its_markers_recognised(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    context_management = {"edits": [{"type": "clear_tool_uses_20250919",
                                     "trigger": {"type": "input_tokens", "value": 30000}}]}
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, \
            sdk_client(proxy.url, default_headers={"User-Agent": "claude-cli/2.1.0 (external, cli)",
                                                   "anthropic-beta": "context-management-2025-06-27",
                                                   "x-api-key": X_API_KEY}) as client:
        async with client.messages.stream(
                model=MODEL, max_tokens=2048, system=CLAUDE_CODE_SYSTEM, tools=CLAUDE_CODE_TOOLS,  # type: ignore[arg-type]
                thinking={"type": "enabled", "budget_tokens": 1024}, messages=claude_code_messages(),  # type: ignore[arg-type]
                extra_body={"context_management": context_management}) as stream:
            await stream.get_final_message()
        (call,) = await proxy.finished(1)
    assert {(found.where, found.marker.kind) for found in call.markers} == {
        ("messages.0.content.0", "compaction_summary"), ("messages.2.content.0", "cleared_tool_result"),
        ("messages.4.content.0", "interrupted")}
    assert call.params["context_management"] == context_management and call.params["thinking"]["type"] == "enabled"
    assert call.usage is not None and call.usage.cache_creation_tokens > 0  # the fake caches the marked prefix

    result = ctxtui("inspect", call.record or "", "--report", "--output-format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["kind"] == "proxy" and data["messages"] == 6
    assert data["breakdown"]["system"] > 0 and data["breakdown"]["tools"] > 0 and data["breakdown"]["markers"] > 0
    assert sum(data["breakdown"].values()) == data["chars"]
    assert [(item["where"], item["kind"], item["client"]) for item in data["client_markers"]] == [
        ("messages.0.content.0", "compaction_summary", "claude-code"),
        ("messages.2.content.0", "cleared_tool_result", "claude-code"),
        ("messages.4.content.0", "interrupted", "claude-code")]
    proxy_info = data["proxy"]
    assert proxy_info["user_agent"] == "claude-cli/2.1.0 (external, cli)" and proxy_info["status"] == 200
    assert {"context_management", "thinking"} <= set(proxy_info["params"])
    text = ctxtui("inspect", call.record or "", "--report")
    assert text.returncode == 0 and "claude-code compaction_summary" in text.stdout
    assert "context_management" in text.stdout


def test_inspect_still_reads_the_other_kinds(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps(messages))
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"messages": messages, "system": "be brief"}))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(message) + "\n" for message in messages))
    kinds = []
    for path in (listing, body, transcript):
        result = ctxtui("inspect", str(path), "--report", "--output-format", "json")
        assert result.returncode == 0, result.stderr
        kinds.append(json.loads(result.stdout)["kind"])
    assert kinds == ["messages", "request", "transcript"]


def test_a_recording_without_a_request_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps({"type": "proxy_response", "id": "x", "status": 200}) + "\n")
    result = ctxtui("inspect", str(path), "--report")
    assert result.returncode == 2
    assert "a proxy recording without a request that has messages" in result.stderr


def _marked(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]}


def _plain(role: str, text: str) -> dict[str, object]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


async def test_a_watched_conversation_s_cache_misses_are_named(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    """Each call's miss against the conversation's last cached prefix: the first call, none while the
    client only appends and moves its breakpoint, a changed message where the client edited one."""
    from core.proxy.calls import call_sample

    system = [{"type": "text", "text": "You are a careful coding agent. " * 300, "cache_control": {"type": "ephemeral"}}]
    first = "fix the failing test in app/test_x.py"
    requests = [
        [_marked(first)],
        [_plain("user", first), _plain("assistant", "Looking."), _marked("go on")],
        [_plain("user", first), _plain("assistant", "Looking (edited)."), _plain("user", "go on"),
         _plain("assistant", "Done."), _marked("and now?")],
    ]
    fake_api.script(*(text_reply(f"reply {number}") for number in range(len(requests))))
    async with running_proxy(fake_api.base_url, tmp_path) as proxy, sdk_client(proxy.url) as client:
        for messages in requests:
            await client.messages.create(model=MODEL, max_tokens=100, system=system,  # type: ignore[arg-type]
                                         messages=messages)  # type: ignore[arg-type]
        calls = await proxy.finished(len(requests))
    assert [call.conversation for call in calls] == [1, 1, 1]
    misses = [call.cache_miss for call in calls]
    assert misses[0] is not None and misses[0].cause == "first_call"
    assert misses[1] is None, misses[1]  # appended, breakpoint moved: the whole cached prefix is read
    assert calls[1].usage is not None and calls[1].usage.cache_read_tokens > 0
    assert misses[2] is not None and misses[2].cause == "messages_changed" and misses[2].path == "messages.1.content.0"
    assert misses[2].tokens and misses[2].by is None  # nothing of ours: the client edited its history
    assert call_sample(calls[2]).cache_miss == misses[2]  # the timeline marks it
