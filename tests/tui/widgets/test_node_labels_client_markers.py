"""The tree's labels for other clients' markers (core/client_markers.py): styled where a text has the
exact shape a client writes, plain text otherwise, and never markup."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.style import Style

from core.client_markers import CC_CLEARED_RESULT, CC_INTERRUPTED, CC_SUMMARY_PREFIX
from tui.widgets.node_labels import NodeInfo, NodeLabels

LABELS = NodeLabels(lambda name: Style(), lambda path: None)
SUMMARY = CC_SUMMARY_PREFIX + " The conversation is summarized below:\n[bold]kept[/bold] as written."


def block_label(block: dict[str, Any], role: str = "user") -> tuple[str, NodeInfo]:
    message = {"role": role, "content": [block]}
    parent = LABELS.message(0, message)
    label, info = LABELS.block(parent, 0, block)
    return label.plain, info


def test_claude_codes_markers_are_recognised_in_their_exact_shape() -> None:
    label, info = block_label({"type": "text", "text": SUMMARY})
    assert label.startswith("Σ claude-code compaction summary · ") and info.client is not None
    assert "[bold]kept[/bold]" in label, "the summary's text is data, never markup"
    label, info = block_label({"type": "tool_result", "tool_use_id": "t", "content": CC_CLEARED_RESULT})
    assert label == "⌫ claude-code cleared tool result · 33 chars" and info.client is not None
    label, _ = block_label({"type": "tool_result", "tool_use_id": "t",
                            "content": [{"type": "text", "text": CC_CLEARED_RESULT}]})
    assert label.startswith("⌫ claude-code cleared tool result")
    label, _ = block_label({"type": "compaction", "content": "what happened so far"}, role="assistant")
    assert label.startswith("Σ api server-side compaction block · 20 chars")
    whole = LABELS.message(3, {"role": "user", "content": CC_INTERRUPTED[0]})
    assert whole.body is not None and whole.body.plain == "user · ⏹ claude-code interruption note · 60 chars"
    assert whole.client is not None and whole.marker is None


def test_the_message_label_counts_the_markers_it_holds() -> None:
    message = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": CC_CLEARED_RESULT},
        {"type": "tool_result", "tool_use_id": "b", "content": CC_CLEARED_RESULT},
        {"type": "tool_result", "tool_use_id": "c", "content": "real output"},
    ]}
    body = LABELS.message(0, message).body
    assert body is not None and body.plain.endswith("· ⌫ cleared result ×2")


def test_look_alikes_stay_plain_text() -> None:
    for block in (
        {"type": "text", "text": CC_CLEARED_RESULT},  # the cleared marker only counts inside a tool_result
        {"type": "text", "text": "Note: " + SUMMARY},  # the summary only counts at the start
        {"type": "tool_result", "tool_use_id": "t", "content": CC_CLEARED_RESULT + " and more"},
        {"type": "text", "text": CC_INTERRUPTED[0] + " twice"},
    ):
        label, info = block_label(block)
        assert info.client is None, block
        assert "claude-code" not in label


@given(st.text(max_size=200))
def test_no_other_text_is_taken_for_a_marker(text: str) -> None:
    known = text.startswith(CC_SUMMARY_PREFIX) or text.strip() in (CC_CLEARED_RESULT, *CC_INTERRUPTED)
    _, info = block_label({"type": "tool_result", "tool_use_id": "t", "content": text})
    assert (info.client is not None) == (text.strip() == CC_CLEARED_RESULT)
    _, info = block_label({"type": "text", "text": text})
    assert (info.client is not None) == (known and text.strip() != CC_CLEARED_RESULT)
