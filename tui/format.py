"""Small text helpers shared by the widgets: numbers, sizes, one-line excerpts, transcript text.

Everything here returns plain strings; callers wrap them in `Text`/`Content` (never markup).
Excerpts and transcripts show untrusted text: control and hiding characters come out as visible
escapes (`core.text.visible`), so they are safe to show wherever they end up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.history.messages import result_text
from core.text import article as article  # the widgets' one place for these helpers
from core.text import one_line, visible
from core.text import plural as plural


def display_line(text: str, limit: int = 80) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis (`core.text.one_line`), its
    control characters shown as escapes (they count after the cut, so an escape is never split)."""
    return visible(one_line(text, limit))


def count(value: int) -> str:
    """1234567 -> '1,234,567'."""
    return f"{value:,}"


def short_count(value: int) -> str:
    """11234 -> '11.2k', 1_200_000 -> '1.2M'."""
    if value < 1_000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1_000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


def pin_cost_line(invalidated: int | None, break_even: float | None) -> str:
    """What a pin or unpin changes in the cost of the next call's compaction to the prompt cache
    (`invalidated`: the difference in cached tokens it re-writes); empty when unknown (offline)."""
    if invalidated is None:
        return ""
    if invalidated == 0:
        return "the next call's compaction re-writes as many cached tokens as before"
    more = "more" if invalidated > 0 else "fewer"
    text = f"the next call's compaction re-writes {short_count(abs(invalidated))} {more} cached tokens"
    if invalidated > 0 and break_even is not None:
        text += f" (pays back after {plural(round(break_even), 'call')})"
    return text


def size_bytes(value: int) -> str:
    """A byte count for humans: '812 B', '12.3 kB', '1.4 MB'."""
    if value < 1_000:
        return f"{value} B"
    if value < 1_000_000:
        return f"{value / 1_000:.1f} kB"
    return f"{value / 1_000_000:.1f} MB"


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def tool_input_summary(name: str, tool_input: dict[str, Any], limit: int = 80) -> str:
    """The one argument that says what a tool call does (command, path, pattern), else compact JSON."""
    for key in ("command", "path", "pattern", "focus"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return display_line(value, limit)
    if not tool_input:
        return ""
    return display_line(json.dumps(tool_input, ensure_ascii=False, default=str), limit)


def transcript_text(messages: Sequence[Any]) -> str:
    """A transcript (list of API-shaped messages) as readable plain text, one section per message,
    with control characters shown as escapes."""
    return visible(_transcript(messages))


def _transcript(messages: Sequence[Any]) -> str:
    parts: list[str] = []
    for index, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            parts.append(_heading(f"#{index} (not a message)"))
            parts.append(json.dumps(message, ensure_ascii=False, default=str))
            continue
        role = str(message.get("role", "?"))
        content = message.get("content")
        if isinstance(content, str):
            parts.append(_heading(f"#{index} {role}"))
            parts.append(content)
            continue
        if not isinstance(content, list):
            parts.append(_heading(f"#{index} {role}"))
            parts.append(json.dumps(content, ensure_ascii=False, default=str))
            continue
        kinds = sorted({str(block.get("type")) for block in content if isinstance(block, dict)})
        parts.append(_heading(f"#{index} {role} · {', '.join(kinds) or 'empty'}"))
        for block in content:
            parts.append(_block_text(block))
    return "\n".join(parts) + "\n"


def _heading(title: str, width: int = 78) -> str:
    line = f"━━ {title} "
    return "\n" + line + "━" * max(width - len(line), 3)


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return json.dumps(block, ensure_ascii=False, default=str)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        tool_input = json.dumps(block.get("input", {}), ensure_ascii=False, default=str, indent=2)
        return f"→ tool_use {block.get('name')}  (id {block.get('id')})\n{tool_input}"
    if kind == "tool_result":
        text = result_text(block.get("content"))
        error = " · error" if block.get("is_error") else ""
        return f"← tool_result for {block.get('tool_use_id')}{error} · {len(text):,} chars\n{text}"
    return json.dumps(block, ensure_ascii=False, default=str, indent=2)
