"""The reply as the client got it, rebuilt from the bytes: streams of every block kind, errors, encodings."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.proxy.sse import read_reply, reassemble_stream
from tests.support.fakeapi import MessageReply

BODY = {"model": "claude-sonnet-5-5", "messages": [{"role": "user", "content": "hi"}]}


def sse(events: list[tuple[str, Any]], newline: str = "\n") -> str:
    return "".join(f"event: {name}{newline}data: {json.dumps(data)}{newline}{newline}" for name, data in events)


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
blocks = st.lists(st.one_of(
    st.builds(lambda value: {"type": "text", "text": value}, text.filter(bool)),
    st.builds(lambda n, value: {"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"path": value}},
              st.integers(0, 99), text),
), min_size=1, max_size=4)


@settings(max_examples=100, deadline=None)
@given(blocks, st.integers(1, 5), st.sampled_from(["\n", "\r\n"]))
def test_a_stream_adds_up_to_the_message_the_api_would_send_whole(content: list[Any], chunks: int,
                                                                  newline: str) -> None:
    reply = MessageReply(content, chunks=chunks, json_chunks=chunks, message_id="msg_1", input_tokens=9,
                         output_tokens=4)
    rebuilt = reassemble_stream(sse(reply.stream_events(BODY), newline))
    assert rebuilt.complete and rebuilt.error is None and not rebuilt.problems
    assert rebuilt.message == reply.message_body(BODY)


def test_thinking_citations_and_server_edits_are_folded_in() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                                 "model": "x", "content": [], "usage": {
                                                                     "input_tokens": 5, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "let me "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "think"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "signature_delta", "signature": "sig=="}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": "", "citations": None}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "citations_delta", "citation": {"cited_text": "x"}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta", "text": "answer"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 12, "cache_read_input_tokens": None},
                           "context_management": {"applied_edits": [{"type": "clear_tool_uses_20250919"}]}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    reply = reassemble_stream(sse(events))
    assert reply.complete and not reply.problems
    assert reply.message is not None
    assert reply.message["content"] == [
        {"type": "thinking", "thinking": "let me think", "signature": "sig=="},
        {"type": "text", "text": "answer", "citations": [{"cited_text": "x"}]},
    ]
    assert reply.message["stop_reason"] == "end_turn"
    assert reply.message["usage"] == {"input_tokens": 5, "output_tokens": 12}
    assert reply.message["context_management"]["applied_edits"][0]["type"] == "clear_tool_uses_20250919"


def test_an_error_event_and_a_cut_stream_say_so() -> None:
    reply = MessageReply([{"type": "text", "text": "partial answer"}])
    events = reply.stream_events(BODY)[:4]
    errored = reassemble_stream(sse([*events, ("error", {"type": "error", "error": {"type": "overloaded_error",
                                                                                    "message": "Overloaded"}})]))
    assert errored.error == {"type": "overloaded_error", "message": "Overloaded"} and not errored.complete
    cut = reassemble_stream(sse(events)[:-7])  # the last event's data cut short
    assert not cut.complete and cut.message is not None and cut.problems


def test_bodies_are_read_through_their_content_encoding() -> None:
    body = json.dumps(MessageReply([{"type": "text", "text": "zipped"}]).message_body(BODY)).encode()
    for data, encoding in ((gzip.compress(body), "gzip"), (zlib.compress(body), "deflate"), (body, None)):
        reply = read_reply(data, "application/json", encoding)
        assert reply.message is not None and reply.message["content"][0]["text"] == "zipped"
    unknown = read_reply(b"\x00\x01", "application/json", "br")
    assert unknown.message is None and unknown.problems == ["content-encoding br is not decoded"]
    broken = read_reply(b"not gzip", "application/json", "gzip")
    assert broken.message is None and broken.problems


def test_an_error_body_is_the_error() -> None:
    body = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}).encode()
    reply = read_reply(body, "application/json", None)
    assert reply.error == {"type": "rate_limit_error", "message": "slow"} and reply.message is None
