"""Other clients' markers are recognised by their exact shape; anything else stays plain text."""

from __future__ import annotations

from core.client_markers import (
    CC_CLEARED_RESULT,
    CC_SUMMARY_PREFIX,
    block_marker,
    client_marker,
    find_client_markers,
    is_compaction_summary,
)


def test_claude_code_shapes() -> None:
    summary = client_marker(f"{CC_SUMMARY_PREFIX} The summary below covers the earlier portion.\n\nSummary: x")
    assert summary is not None and summary.kind == "compaction_summary" and summary.client == "claude-code"
    assert summary.summary is not None and summary.summary.endswith("Summary: x")
    cleared = block_marker({"type": "tool_result", "tool_use_id": "t", "content": CC_CLEARED_RESULT})
    assert cleared is not None and cleared.kind == "cleared_tool_result"
    listed = block_marker({"type": "tool_result", "tool_use_id": "t",
                           "content": [{"type": "text", "text": CC_CLEARED_RESULT}]})
    assert listed == cleared
    interrupted = client_marker("[Request interrupted by user for tool use]")
    assert interrupted is not None and interrupted.kind == "interrupted"
    server = block_marker({"type": "compaction", "content": "what happened so far"})
    assert server is not None and server.client == "api" and server.summary == "what happened so far"


def test_near_misses_are_plain_text() -> None:
    for text in (f"Note: {CC_SUMMARY_PREFIX}", CC_SUMMARY_PREFIX.lower(), f"{CC_CLEARED_RESULT} and more",
                 "[Request interrupted]", "", None, 42):
        assert client_marker(text) is None, text
    # A text block that reads like a cleared result is the model's or the user's words, not a clearing.
    assert block_marker({"type": "text", "text": CC_CLEARED_RESULT}) is None
    assert block_marker({"type": "tool_result", "content": [{"type": "text", "text": CC_CLEARED_RESULT},
                                                           {"type": "text", "text": "more"}]}) is None


def test_markers_are_found_where_they_are() -> None:
    messages = [
        {"role": "user", "content": f"{CC_SUMMARY_PREFIX} summary"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": CC_CLEARED_RESULT}]},
    ]
    assert [(found.where, found.marker.kind) for found in find_client_markers(messages)] == [
        ("messages.0", "compaction_summary"), ("messages.2.content.0", "cleared_tool_result")]
    assert is_compaction_summary(messages[0]) and not is_compaction_summary(messages[2])
