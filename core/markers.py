"""The exact marker strings compaction leaves in the history, and how to recognise them again."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from core.events import MarkerKind

PERSISTED_OPEN = "<persisted-output>"
PERSISTED_CLOSE = "</persisted-output>"
CURRENT_REQUEST_HEADING = "Current user request:\n"
SUMMARY_HEADING = "Conversation summary (reference only):\n"


def persisted_output(path: str, preview: str) -> str:
    return f"{PERSISTED_OPEN}\nFull output: {path}\nPreview:\n{preview}\n{PERSISTED_CLOSE}"


def placeholder(path: str) -> str:
    return f"[Earlier tool result saved at {path}]"


def snip_marker(count: int, path: str) -> str:
    return f"[{count} messages archived at {path}]"


def omission_marker(omitted: int, where: str) -> str:
    """The line between head and tail of a summarizer input that was cut in the middle."""
    return f"[... {omitted:,} chars of the conversation omitted here; {where} ...]"


OMISSION_RE = re.compile(r"\n\[\.\.\. (?P<omitted>[\d,]+) chars of the conversation omitted here; (?P<where>[^\n]*) \.\.\.\]\n")


def summary_message(title: str, request: str, summary: str, path: str) -> str:
    """The body of a [Compacted] or [Reactive compact] message."""
    return (
        f"[{title}]\n\n{CURRENT_REQUEST_HEADING}{request}\n\n"
        f"{SUMMARY_HEADING}{json.dumps(summary, ensure_ascii=False)}\n\nFull transcript: {path}"
    )


RESTORED_HEADING = "[Restored from the archive: {path}]"
UNANSWERED_MARK = "[An earlier request that got no answer: the turn ended before a reply. The current request follows.]"
KEPT_HEADING = "[Kept by you, from earlier in this conversation]"


def restored_message(path: str, text: str) -> str:
    """A restored result that has no marker left to put it back in place, appended as a user message."""
    return f"{RESTORED_HEADING.format(path=path)}\n{text}"


def unanswered(request: str) -> str:
    """A request whose turn ended before a reply, marked so the model does not take it for the current one."""
    return f"{UNANSWERED_MARK}\n{request}"


def is_note(text: str) -> bool:
    """Text ctxtui put into a user message that is not the person's request: a restored result, an
    unanswered request or a kept constraint."""
    return text.startswith((RESTORED_HEADING.split("{")[0], UNANSWERED_MARK, KEPT_HEADING))


def request_marker(request: str) -> str:
    """What prepare looks for to know the current request is still visible in a summary."""
    return f"{CURRENT_REQUEST_HEADING}{request}\n\n{SUMMARY_HEADING.rstrip(chr(10))}"


_PERSISTED_RE = re.compile(
    r"\A<persisted-output>\nFull output: (?P<path>[^\n]+)\nPreview:\n(?P<preview>.*)\n</persisted-output>\Z",
    re.DOTALL,
)
_PLACEHOLDER_RE = re.compile(r"\A\[Earlier tool result saved at (?P<path>[^\n\]]+)\]\Z")
_SNIP_RE = re.compile(r"\A\[(?P<count>\d+) messages archived at (?P<path>[^\n\]]+)\]\Z")
_SUMMARY_RE = re.compile(
    r"\A\[(?P<title>Compacted|Reactive compact)\]\n\nCurrent user request:\n(?P<request>.*)\n\n"
    r"Conversation summary \(reference only\):\n(?P<summary>.*)\n\nFull transcript: (?P<path>[^\n]+)\Z",
    re.DOTALL,
)


@dataclass(frozen=True)
class Marker:
    """A marker found in a message or block.

    kind: "persisted" (persisted-output), "placeholder", "snip", "compacted", "reactive".
    `path` is the workdir-relative path the marker claims; it is not trusted until the Archive
    resolves it.
    """

    kind: MarkerKind
    path: str
    count: int | None = None
    request: str | None = None
    summary: str | None = None
    preview: str | None = None


def parse_marker(text: Any) -> Marker | None:
    """The marker `text` is exactly, or None."""
    if not isinstance(text, str) or not text.startswith(("[", "<")):
        return None
    if match := _PLACEHOLDER_RE.match(text):
        return Marker("placeholder", match["path"])
    if match := _PERSISTED_RE.match(text):
        return Marker("persisted", match["path"], preview=match["preview"])
    if match := _SNIP_RE.match(text):
        return Marker("snip", match["path"], count=int(match["count"]))
    if match := _SUMMARY_RE.match(text):
        summary = match["summary"]
        try:
            decoded = json.loads(summary)
            summary = decoded if isinstance(decoded, str) else summary
        except ValueError:
            pass
        kind: MarkerKind = "compacted" if match["title"] == "Compacted" else "reactive"
        return Marker(kind, match["path"], request=match["request"], summary=summary)
    return None


def archived_path(text: Any) -> str | None:
    """The path a persisted-output block or placeholder claims (untrusted), or None if `text` is neither."""
    marker = parse_marker(text)
    return marker.path if marker is not None and marker.kind in ("persisted", "placeholder") else None


def kept_note(text: str) -> str:
    """The short pinned note that puts a fact (a constraint) back in the context (`agent.keep_fact`)."""
    return f"{KEPT_HEADING}\n{text}"
