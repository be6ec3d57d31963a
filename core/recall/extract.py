"""What of an archive file is searched, and where in the file it is: the index's chunks.

A tool result is searched as its text, in chunks of whole lines (`CHUNK_LINES` lines or `CHUNK_CHARS`
characters, whichever comes first; a longer line is a chunk of its own), each found at the line it
starts on. A transcript is searched message by message, each at its line of the file (one JSON message
a line): the text the model read or wrote (text, tool results, tool calls' input, thinking), not the
blocks' ids and types. A summary is searched where it is kept once it leaves the context: the transcript
of the next compaction holds its `[Compacted]` (or `[Reactive compact]`) message, which is indexed as a
`summary` chunk of the request and the summary text, decoded (the one in force is in the context itself).

The same functions make the chunks when the archive hands a batch over, when the index is rebuilt from
the files, and when a hit's snippet is read back from the file, so a chunk's text is always the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from core.jsonlines import BadLine, parse_json
from core.markers import parse_marker
from core.text import valid_utf8

CHUNK_LINES = 40
CHUNK_CHARS = 4_000

_TEXT_KEYS = frozenset({"text", "content", "input", "thinking"})
_MAX_TEXT_DEPTH = 12  # a message's blocks inside blocks; the JSON reader bounds the rest


@dataclass(frozen=True)
class Chunk:
    """A piece of an archive file as the index holds it: its first line (1-based), how many lines it
    spans, what kind of text it is and the text searched."""

    line: int
    lines: int
    kind: str  # "tool-result", "transcript" or "summary"
    text: str


def searchable(text: str) -> str:
    """The text as the index and the queries see it: valid UTF-8 (a lone surrogate as its escape, as
    everywhere else), NUL as a blank."""
    return valid_utf8(text).replace("\x00", " ")


def result_chunks(text: str) -> Iterator[Chunk]:
    """The chunks of a tool result's text, in order (lines are split at "\\n" only, as read_file does)."""
    lines = text.split("\n")
    start = 0
    while start < len(lines):
        end, size = start, 0
        while (
            end < len(lines)
            and end - start < CHUNK_LINES
            and (end == start or size + len(lines[end]) <= CHUNK_CHARS)
        ):
            size += len(lines[end]) + 1
            end += 1
        piece = "\n".join(lines[start:end])
        if piece.strip():
            yield Chunk(start + 1, end - start, "tool-result", searchable(piece))
        start = end


def transcript_chunks(lines: Iterator[str] | list[str] | tuple[str, ...]) -> Iterator[Chunk]:
    """One chunk per message line of a transcript (a line that is not a message is skipped)."""
    for number, line in enumerate(lines, 1):
        chunk = line_chunk(number, line)
        if chunk is not None:
            yield chunk


def line_chunk(number: int, line: str) -> Chunk | None:
    """The chunk of transcript line `number` (None when it holds no message or no text)."""
    if not line.strip():
        return None
    message = parse_json(line)  # core/jsonlines.py: bounded in depth, never raises
    if isinstance(message, BadLine) or not isinstance(message, dict):
        return None
    summary = _summary_text(message)
    if summary is not None:
        return Chunk(number, 1, "summary", searchable(summary))
    text = "\n".join(_strings(message.get("content"), 0))
    return Chunk(number, 1, "transcript", searchable(text)) if text.strip() else None


def _summary_text(message: dict[str, Any]) -> str | None:
    """A compaction's summary message: its request and its summary, decoded; None for any other message."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, str):
        return None
    marker = parse_marker(content)
    if marker is None or marker.kind not in ("compacted", "reactive"):
        return None
    return f"{marker.request or ''}\n{marker.summary or ''}"


def _strings(value: Any, depth: int, every: bool = False) -> Iterator[str]:
    """Every text of a message's content the model read or wrote: text, results, thinking, a tool call's
    name and every string of its input; not ids, types, signatures or images."""
    if depth > _MAX_TEXT_DEPTH:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1, every)
    elif isinstance(value, dict):
        if not every and value.get("type") == "tool_use" and isinstance(value.get("name"), str):
            yield value["name"]
        for key, item in value.items():
            if every or key in _TEXT_KEYS:
                yield from _strings(item, depth + 1, every or key == "input")
