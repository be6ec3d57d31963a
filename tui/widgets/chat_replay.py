"""The chat blocks of a resumed history: what `ChatPane.replay` shows, built oldest first.

Each message becomes specs (user text, assistant text, a tool call with its result attached, a
compaction marker as a notice); only the newest are turned into widgets, so a 5,000-message session
costs one pass over plain data and a bounded number of widgets.
"""

from __future__ import annotations

from typing import Any

from textual.widget import Widget

from core.history.messages import result_text
from core.markers import parse_marker
from core.text import plural, visible
from tui.widgets.chat_blocks import NoticeLine, UserBlock
from tui.widgets.thinking_block import ThinkingBlock
from tui.widgets.tool_block import ToolBlock


class ReplaySpec:
    """One block of a replayed history, built into a widget only if it is among the newest."""

    def __init__(
        self, kind: str, text: str = "", tool: tuple[str, str, dict[str, Any]] | None = None
    ) -> None:
        self.kind = kind
        self.text = text
        self.tool = tool
        self.result: tuple[str, bool] | None = None
        self.block: dict[str, Any] | None = None
        """A thinking block (kind "thinking"), shown collapsed."""

    def widget(self) -> Widget:
        if self.kind == "user":
            return UserBlock(self.text)
        if self.kind == "assistant":
            from tui.widgets.assistant_block import AssistantBlock

            return AssistantBlock(visible(self.text))
        if self.kind == "marker":
            return NoticeLine(self.text, icon="Σ")
        if self.kind == "thinking":
            return ThinkingBlock(self.block or {})
        assert self.tool is not None
        block = ToolBlock(*self.tool)
        output, is_error = self.result or ("[no result in the history]", True)
        block.finish(output, len(output), None, is_error)
        return block


_MARKER_NOTICES = {
    "snip": "snip_compact: {count} archived at {path}",
    "compacted": "compact_history: the conversation before this was summarised; transcript at {path}",
    "reactive": "reactive_compact: the conversation before this was summarised; transcript at {path}",
}


def replay_specs(messages: list[dict[str, Any]]) -> list[ReplaySpec]:
    """The chat blocks of a history, oldest first (tool results attach to their calls)."""
    specs: list[ReplaySpec] = []
    calls: dict[str, ReplaySpec] = {}
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            marker = parse_marker(content)
            if marker is not None and marker.kind in _MARKER_NOTICES:
                specs.append(
                    ReplaySpec(
                        "marker",
                        _MARKER_NOTICES[marker.kind].format(
                            count=plural(marker.count or 0, "message"), path=marker.path
                        ),
                    )
                )
            elif content.strip():
                specs.append(ReplaySpec("user" if role == "user" else "assistant", content))
            continue
        if not isinstance(content, list):
            continue
        texts: list[str] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and role == "user":
                specs.append(ReplaySpec("user", str(block.get("text", ""))))
            elif kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind in ("thinking", "redacted_thinking") and role == "assistant":
                spec = ReplaySpec("thinking")
                spec.block = block
                specs.append(spec)
            elif kind == "tool_use":
                if texts:
                    specs.append(ReplaySpec("assistant", "\n\n".join(texts)))
                    texts = []
                tool_input = block.get("input")
                spec = ReplaySpec(
                    "tool",
                    tool=(
                        str(block.get("id", "")),
                        str(block.get("name", "?")),
                        tool_input if isinstance(tool_input, dict) else {},
                    ),
                )
                calls[str(block.get("id", ""))] = spec
                specs.append(spec)
            elif kind == "tool_result":
                call = calls.get(str(block.get("tool_use_id", "")))
                if call is not None:
                    call.result = (result_text(block.get("content")), bool(block.get("is_error")))
        if texts:
            specs.append(ReplaySpec("assistant", "\n\n".join(texts)))
    return specs
