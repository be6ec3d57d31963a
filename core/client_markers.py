"""Markers other clients leave in the requests they send, recognised where they follow a known shape.

ctxtui's own markers are in core/markers.py. These are what other agents put in a history when
they shorten it, as seen in the requests that pass through `ctxtui proxy` (or in their session
files). Anything not of a known shape is plain text: a text that only resembles a marker is never
taken for one, and none of these carries a path to open.

Known shapes:
- Claude Code's compaction summary: a user message whose text starts with "This session is being
  continued from a previous conversation that ran out of context." (the summary follows);
- Claude Code's cleared tool result: a tool_result whose whole content is "[Old tool result content
  cleared]" (its time-based micro-compaction);
- Claude Code's interruption notes: "[Request interrupted by user]" and "[Request interrupted by
  user for tool use]";
- the API's own compaction block (`{"type": "compaction", ...}`, server-side compaction), which a
  client sends back verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

ClientMarkerKind = Literal["compaction_summary", "cleared_tool_result", "interrupted", "server_compaction"]

CLAUDE_CODE = "claude-code"
API = "api"

CC_SUMMARY_PREFIX = "This session is being continued from a previous conversation that ran out of context."
CC_CLEARED_RESULT = "[Old tool result content cleared]"
CC_INTERRUPTED = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")


@dataclass(frozen=True)
class ClientMarker:
    """A marker another client left: its kind, which client, and the summary text when it holds one."""

    kind: ClientMarkerKind
    client: str
    summary: str | None = None

    def describe(self) -> str:
        names = {
            "compaction_summary": "compaction summary",
            "cleared_tool_result": "cleared tool result",
            "interrupted": "interruption note",
            "server_compaction": "server-side compaction block",
        }
        return f"{self.client} {names[self.kind]}"


@dataclass(frozen=True)
class FoundMarker:
    """A client marker at a place in a request: `where` is "messages.K" or "messages.K.content.J"."""

    where: str
    marker: ClientMarker


def client_marker(text: Any, *, in_tool_result: bool = False) -> ClientMarker | None:
    """The client marker a text is, or None (plain text). A cleared result is one only inside a tool_result."""
    if not isinstance(text, str):
        return None
    if text.startswith(CC_SUMMARY_PREFIX):
        return ClientMarker("compaction_summary", CLAUDE_CODE, summary=text[len(CC_SUMMARY_PREFIX) :].strip())
    stripped = text.strip()
    if stripped == CC_CLEARED_RESULT:
        return ClientMarker("cleared_tool_result", CLAUDE_CODE) if in_tool_result else None
    if stripped in CC_INTERRUPTED:
        return ClientMarker("interrupted", CLAUDE_CODE)
    return None


def block_marker(block: Any) -> ClientMarker | None:
    """The client marker one content block is (a text block, a tool_result, a compaction block), or None."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        return client_marker(block.get("text"))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
            content = content[0].get("text") if content[0].get("type") == "text" else None
        marker = client_marker(content, in_tool_result=True)
        return marker if marker is not None and marker.kind == "cleared_tool_result" else None
    if kind == "compaction":
        content = block.get("content")
        return ClientMarker("server_compaction", API, summary=content if isinstance(content, str) else None)
    return None


def find_client_markers(messages: Sequence[Any]) -> Iterator[FoundMarker]:
    """Every client marker in `messages`, in order."""
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            marker = client_marker(content)
            if marker is not None:
                yield FoundMarker(f"messages.{index}", marker)
        elif isinstance(content, list):
            for position, block in enumerate(content):
                marker = block_marker(block)
                if marker is not None:
                    yield FoundMarker(f"messages.{index}.content.{position}", marker)


def is_compaction_summary(message: Any) -> bool:
    """A message that opens a history a client compacted (its first text is a compaction summary)."""
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    if isinstance(content, str):
        first: Any = content
    elif isinstance(content, list) and content:
        first = content[0]
        if isinstance(first, dict) and first.get("type") == "compaction":
            return True
        first = first.get("text") if isinstance(first, dict) and first.get("type") == "text" else None
    else:
        return False
    marker = client_marker(first)
    return marker is not None and marker.kind == "compaction_summary"
