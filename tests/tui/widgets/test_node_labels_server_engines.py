"""The tree's labels under a server engine: a result the API cleared says so (the history keeps it
whole), and a compaction block the server could not write (null content) is shown as failed."""

from __future__ import annotations

from rich.style import Style

from tui.widgets.node_labels import NodeLabels


def test_a_result_the_api_cleared_is_labelled_and_others_are_not() -> None:
    labels = NodeLabels(lambda name: Style(), lambda path: None)
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "abc"},
                                           {"type": "tool_result", "tool_use_id": "toolu_2", "content": "def"}]}
    parent = labels.message(0, message)
    labels.cleared = frozenset({"toolu_1"})
    first, _ = labels.block(parent, 0, message["content"][0])
    second, _ = labels.block(parent, 1, message["content"][1])
    assert "cleared by the API" in first.plain and '"abc"' in first.plain
    assert "cleared" not in second.plain


def test_a_failed_compaction_block_is_shown_as_failed() -> None:
    labels = NodeLabels(lambda name: Style(), lambda path: None)
    block = {"type": "compaction", "content": None, "signature": "s"}
    message = {"role": "assistant", "content": [block]}
    label, info = labels.block(labels.message(0, message), 0, block)
    assert "failed (null content)" in label.plain and "None" not in label.plain and info.client is not None
    good = {"type": "compaction", "content": "summary", "signature": "s"}
    label, _ = labels.block(labels.message(0, {"role": "assistant", "content": [good]}), 0, good)
    assert "failed" not in label.plain and "7 chars" in label.plain
