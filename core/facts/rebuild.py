"""The facts of a history read back (a resumed session, an inspected file), with what its archive holds.

A live index learns each fact as its message arrives. A history read back from a file only holds
what was in the context when it was written: the messages steps took out are behind its markers.
So the markers are followed, newest first: a summary or snip marker names a transcript (the whole
list before that step, which holds the earlier markers in turn), a placeholder or persisted-output
block names the tool result's file. Each file is read once; every fact found in it that the history
does not hold is out of the context, in that file; its source is the message's line in the transcript
(its position in the history that step archived) or, for a result's file, the position of the
message that names it. Only paths the archive resolves inside its own directories are read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from core.archive import Archive
from core.facts.extract import FactKey, error_lines, facts_of
from core.facts.index import FactIndex
from core.jsonlines import BadLine, parse_json
from core.markers import parse_marker

Message = dict[str, Any]
Found = tuple[FactKey, str, str]  # (fact, source, the file that holds it)


def _markers(message: Any) -> Iterable[tuple[str, str]]:
    """(kind, path) of the markers in a message: its own text, and its tool results' contents."""
    if not isinstance(message, dict):
        return
    content = message.get("content")
    marker = parse_marker(content)
    if marker is not None:
        yield marker.kind, marker.path
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = parse_marker(block.get("content"))
                if inner is not None:
                    yield inner.kind, inner.path


def archived_facts(messages: Sequence[Message], archive: Archive) -> list[Found]:
    """Every fact the archive holds for `messages` (see the module docstring); reads files (blocking)."""
    found: list[Found] = []
    seen: set[str] = set()
    queue: deque[tuple[str, str, int]] = deque()

    def follow(message: Any, position: int) -> None:
        for kind, path in _markers(message):
            if path not in seen:
                seen.add(path)
                queue.append((kind, path, position))

    for position in range(len(messages) - 1, -1, -1):
        follow(messages[position], position)
    while queue:
        kind, path, position = queue.popleft()
        located = archive.resolve(path)
        if located is None:
            continue
        try:
            text = located.absolute.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        if located.kind == "tool-result":
            if kind in ("placeholder", "persisted"):
                found.extend((("error", line), f"messages.{position}", path) for line in error_lines(text))
            continue
        # Each line through core/jsonlines.py: one that is not JSON, or nested too deep, costs that line only.
        messages_read = [parse_json(line) for line in text.split("\n") if line.strip()]
        for line_number in range(len(messages_read) - 1, -1, -1):
            if not isinstance(messages_read[line_number], BadLine):
                follow(messages_read[line_number], line_number)
        for line_number, message in enumerate(messages_read):
            if not isinstance(message, BadLine):
                found.extend((key, f"messages.{line_number}", path) for key, _ in facts_of(message))
    return found


def read_back(messages: Sequence[Message], archive: Archive | None, fallback: str | None = None) -> FactIndex:
    """The fact index of a history read back, with the facts its archive holds (blocking)."""
    index = FactIndex(messages, fallback=fallback)
    if archive is not None:
        index.add_archived(archived_facts(messages, archive))
    return index
