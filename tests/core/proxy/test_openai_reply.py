"""OpenAI replies read for the view: both stream formats, cut streams, errors, bounds, usage as reported."""

from __future__ import annotations

import json
from typing import Any

from core.proxy.openai import read_openai_reply, request_view, usage_of

SSE = "text/event-stream"


def chat_frames(*chunks: dict[str, Any], done: bool = True) -> bytes:
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def delta(**fields: Any) -> dict[str, Any]:
    return {"id": "c1", "model": "gpt-4o", "choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def test_chat_stream_adds_up_text_reasoning_and_tool_calls_by_index() -> None:
    body = chat_frames(
        delta(role="assistant", content=""),
        delta(reasoning_content="think "),
        delta(content="Hel"),
        delta(content="lo"),
        delta(tool_calls=[{"index": 1, "id": "call_b", "function": {"name": "b", "arguments": '{"x"'}}]),
        delta(tool_calls=[{"index": 0, "id": "call_a", "function": {"name": "a", "arguments": "{}"}}]),
        delta(tool_calls=[{"index": 1, "function": {"arguments": ": 1}"}}]),
        delta(tool_calls=[{"index": 10**9, "function": {"arguments": "ignored"}}]),
        {"id": "c1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3}},
    )
    reply = read_openai_reply(body, SSE, None, "chat")
    assert reply.complete and reply.message is not None
    assert reply.message["content"] == [
        {"type": "thinking", "thinking": "think "},
        {"type": "text", "text": "Hello"},
        {"type": "tool_use", "id": "call_a", "name": "a", "input": {}},
        {"type": "tool_use", "id": "call_b", "name": "b", "input": {"x": 1}},
    ]
    usage, checked, notes = usage_of(reply.usage)
    assert usage is not None and usage.input_tokens == 10 and usage.figure("cache_read_tokens") is None
    assert checked == {"prompt_tokens": 10, "completion_tokens": 3} and notes == []


def test_a_cut_chat_stream_is_read_up_to_its_last_whole_event_and_is_not_complete() -> None:
    body = chat_frames(delta(content="part one "), delta(content="two"), done=False) + b'data: {"choi'
    reply = read_openai_reply(body, SSE, None, "chat", cut=True)
    assert not reply.complete and reply.message is not None
    assert reply.message["content"] == [{"type": "text", "text": "part one two"}]


def test_responses_stream_without_completed_keeps_the_items_and_deltas_seen() -> None:
    events = [
        {"type": "response.created", "response": {"id": "r1", "model": "gpt-5", "output": []}},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "reasoning", "summary": [], "encrypted_content": "abc"}},
        {"type": "response.output_text.delta", "output_index": 1, "delta": "Hi "},
        {"type": "response.output_text.delta", "output_index": 1, "delta": "there"},
        {"type": "error", "code": "server_error", "message": "boom"},
    ]
    body = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events).encode()
    reply = read_openai_reply(body, SSE, None, "responses")
    assert not reply.complete and reply.error == {"code": "server_error", "message": "boom"}
    assert reply.message is not None and reply.message["model"] == "gpt-5"
    assert [block["text"] for block in reply.message["content"]] == [
        "[opaque reasoning (encrypted): 3 bytes, not readable by ctxtui]",
        "Hi there",
    ]


def test_a_failed_response_and_an_error_body_are_errors() -> None:
    failed = {"type": "response.failed", "response": {"id": "r", "status": "failed", "output": [],
                                                     "error": {"code": "server_error", "message": "no"}}}
    body = f"event: response.failed\ndata: {json.dumps(failed)}\n\n".encode()
    reply = read_openai_reply(body, SSE, None, "responses")
    assert reply.error == {"code": "server_error", "message": "no"} and reply.message is not None
    error = json.dumps({"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}})
    assert read_openai_reply(error.encode(), "application/json", None, "chat").error == {
        "message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}


def test_usage_figures_that_are_no_count_are_unknown() -> None:
    usage, checked, notes = usage_of({"input_tokens": -3, "output_tokens": 2,
                                      "input_tokens_details": {"cached_tokens": 1e400}})
    assert usage is not None and usage.figure("input_tokens") is None and usage.figure("cache_read_tokens") is None
    assert checked is not None and checked["input_tokens"] is None and len(notes) == 2


def test_instructions_as_items_are_the_system_prompt() -> None:
    view = request_view({"instructions": [{"type": "message", "role": "developer", "content": "Be brief."}],
                         "input": "hi"}, "responses")
    assert view["system"] == [{"type": "text", "text": "Be brief."}]
    assert view["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
