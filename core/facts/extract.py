"""The fact check's extraction rules (DESIGN.md, a contract): deterministic, from one message at a time.

- constraint: a sentence of a message the person typed that contains one of the words must, never,
  always, don't, do not, only, avoid (whole words, any case). The person's text is a user message's
  own text: not a tool result, not a marker of ctxtui's (a summary marker counts for the request it
  holds, which the person typed), not a note of ctxtui's (a restored result, a kept constraint; an
  unanswered request counts without its mark). A sentence ends at a line break, or at `.`, `!` or
  `?` followed by whitespace; its text is the sentence without surrounding whitespace, a leading list
  marker (`-`, `*`, `•`, `>`, `1.`, `1)`) or its closing `.!?`.

  The cut is linear in the text: a person's prompt of any length, runs of `?` or `!` included, is
  split in one pass. Every pattern here is anchored at the start, ends with its only unbounded
  repeat, or has a fixed character before its repeat that the repeat cannot match (so no two tries
  scan the same run); the closing punctuation is stripped with `str.rstrip`, not a search.
- path: the `path` input of a read_file, write_file or edit_file call, exactly as given.
- error: a line of a tool result (its text; a marker ctxtui left in its place is not the tool's
  output) that contains `Error`, `error:`, `FAILED` or `Traceback` (case-sensitive), without
  surrounding whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from core.markers import UNANSWERED_MARK, is_note, parse_marker

Message = dict[str, Any]

CONSTRAINT_WORDS = ("must", "never", "always", "don't", "do not", "only", "avoid")
ERROR_SUBSTRINGS = ("Error", "error:", "FAILED", "Traceback")
PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file"})

_CONSTRAINT_RE = re.compile(r"\b(?:must|never|always|don't|do\s+not|only|avoid)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # its one repeat ends the pattern: nothing after it can fail
_LIST_MARKER = re.compile(r"\A(?:[-*•>]+|\d+[.)])\s+")  # anchored: tried at the start only (`match`)
CLOSING = ".!?"

FactKey = tuple[str, str]  # (kind, text)


def sentences(text: str) -> Iterator[str]:
    """The sentences of `text` as the constraint rule cuts them (see the module docstring)."""
    for line in text.split("\n"):
        for piece in _SENTENCE_END.split(line):
            sentence = piece.strip()
            marker = _LIST_MARKER.match(sentence)
            if marker is not None:
                sentence = sentence[marker.end() :]
            # `[.!?]+\Z` searched from every position of a long run of `?` was quadratic; rstrip is one pass.
            sentence = sentence.rstrip(CLOSING).strip()
            if sentence:
                yield sentence


def constraints(text: str) -> list[str]:
    """The sentences of `text` that hold a constraint word, in order, each once."""
    return list(dict.fromkeys(sentence for sentence in sentences(text) if _CONSTRAINT_RE.search(sentence)))


def error_lines(text: str) -> list[str]:
    """The lines of a tool result's text that hold an error substring, in order, each once."""
    found = []
    for line in text.split("\n"):
        if any(mark in line for mark in ERROR_SUBSTRINGS):
            stripped = line.strip()
            if stripped:
                found.append(stripped)
    return list(dict.fromkeys(found))


def tool_text(content: Any) -> str:
    """The text a tool result shows: its string, or its text blocks one per line (an image or any
    other block is not text the tool printed)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(item.get("text", ""))
            for item in content
            if isinstance(item, dict) and item.get("type") == "text"
        )
    return ""


def person_texts(message: Any) -> list[str]:
    """The text the person typed in `message` (empty for a reply, tool results, markers and notes)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return []
    content = message.get("content")
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
    else:
        return []
    texts = []
    for part in parts:
        marker = parse_marker(part)
        if marker is not None:
            if marker.request:
                texts.append(marker.request)
        elif part.startswith(UNANSWERED_MARK):
            texts.append(part[len(UNANSWERED_MARK) :].lstrip("\n"))
        elif not is_note(part):
            texts.append(part)
    return texts


def facts_of(message: Any) -> list[tuple[FactKey, str | None]]:
    """The facts that `message` is a source of, in order, each once, with the tool_use id of the
    result an error line came from (None for the other kinds)."""
    found: dict[FactKey, str | None] = {}
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if message.get("role") == "assistant" and isinstance(content, list):
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") in PATH_TOOLS
            ):
                tool_input = block.get("input")
                path = tool_input.get("path") if isinstance(tool_input, dict) else None
                if isinstance(path, str) and path:
                    found.setdefault(("path", path), None)
        return list(found.items())
    for text in person_texts(message):
        for sentence in constraints(text):
            found.setdefault(("constraint", sentence), None)
    if message.get("role") == "user" and isinstance(content, list):
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            result = block.get("content", "")
            if parse_marker(result) is not None:
                continue
            for line in error_lines(tool_text(result)):
                found.setdefault(("error", line), str(block.get("tool_use_id")))
    return list(found.items())
