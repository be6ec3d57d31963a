"""Anchors: what a tool result told the agent that it could use later, for the replay's regret figure.

An anchor of a tool result is a path, an identifier of 8 or more characters, or an error line it
contains (the fact kinds of the ledger issue, applied to tool results) that the conversation had not
shown before that result: a name the agent already had from the task or its own command is not
something the result gave it. A result is *referenced later* from call k when one of its anchors
appears in the reply to call k or any later one (an assistant message's text or tool call), in the
original trajectory. Removing it from call k on is then a regret: the agent used what it could no
longer read (an open-loop replay cannot say whether it would have found it again).

Matching is by token, not substring: a request's identifiers, paths and error lines are collected
once per message object and compared as sets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.facts.extract import ERROR_SUBSTRINGS

Message = dict[str, Any]

_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]{7,}(?![A-Za-z0-9_])")
_PATH = re.compile(r"(?<![\w./-])(?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)+")
_TEXT_KEYS = ("text", "content", "input", "thinking", "arguments")
MAX_ERROR_LINE = 300  # longer lines are cut: an anchor is something to search for, not a page


_NOT_TEXT = frozenset({"id", "tool_use_id", "type", "name", "signature", "cache_control"})


def strings(value: Any, inside_input: bool = False) -> Iterator[str]:
    """Every text a message holds that the model reads or wrote: text, results, and every string of
    a tool call's input (a command, a path); not ids, types or other keys of the blocks."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, inside_input)
    elif isinstance(value, dict):
        for key, item in value.items():
            if inside_input:
                yield from strings(item, True)
            elif key not in _NOT_TEXT and (key in _TEXT_KEYS or not isinstance(item, str)):
                yield from strings(item, key == "input")


def _path(token: str) -> str | None:
    token = token.rstrip(".")
    while token.startswith("./"):
        token = token[2:]
    if len(token) < 4 or "/" not in token.strip("/") or not any(char.isalpha() for char in token):
        return None
    return token


def anchors_of_text(text: str) -> set[str]:
    """The anchors a text holds: identifiers (8+ chars), paths (with a `/`), error lines (`E:` + line)."""
    found = set(_IDENTIFIER.findall(text))
    for token in _PATH.findall(text):
        path = _path(token)
        if path is not None:
            found.add(path)
    if any(mark in text for mark in ERROR_SUBSTRINGS):
        for line in text.split("\n"):
            if any(mark in line for mark in ERROR_SUBSTRINGS):
                stripped = line.strip()[:MAX_ERROR_LINE]
                if stripped:
                    found.add("E:" + stripped)
    return found


class AnchorIndex:
    """The anchors of each message object, computed once (a message is shared by every engine's
    requests until a step replaces it)."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, frozenset[str]]] = {}

    def of_message(self, message: Any) -> frozenset[str]:
        found = self._by_id.get(id(message))
        if found is None or found[0] is not message:
            anchors: set[str] = set()
            for text in strings(message.get("content") if isinstance(message, dict) else message):
                anchors |= anchors_of_text(text)
            found = (message, frozenset(anchors))
            self._by_id[id(message)] = found
        return found[1]

    def of_request(self, messages: Sequence[Any]) -> set[str]:
        seen: set[str] = set()
        for message in messages:
            seen |= self.of_message(message)
        return seen


@dataclass
class ResultAnchors:
    """The tool results of a trajectory, each with the anchors it introduced and when the agent last
    used any of them."""

    anchors: dict[str, frozenset[str]] = field(default_factory=dict)  # tool_use_id -> its new anchors
    last_use: dict[str, int] = field(
        default_factory=dict
    )  # tool_use_id -> last call whose reply used one (0: none)
    produced_before: list[int] = field(default_factory=list)  # per call: how many results precede it
    order: list[str] = field(default_factory=list)  # tool_use_ids in the order they appear
    original: dict[str, Any] = field(default_factory=dict)  # tool_use_id -> its original content

    def referenced_from(self, use_id: str, call: int) -> bool:
        """Some anchor of the result appears in the reply to `call` or a later one."""
        return self.last_use.get(use_id, 0) >= call


def result_blocks(message: Message) -> Iterator[dict[str, Any]]:
    content = message.get("content")
    if message.get("role") == "user" and isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                yield block


def analyse(messages: Sequence[Message]) -> ResultAnchors:
    """The anchors of every tool result of the trajectory's messages, and their later use."""
    found = ResultAnchors()
    seen: set[str] = set()
    replies: list[set[str]] = []  # per call (assistant message), its anchors
    owner: dict[str, list[str]] = {}  # anchor -> results that introduced it (in the same batch, several)
    for message in messages:
        if message.get("role") == "assistant":
            found.produced_before.append(len(found.order))
            anchors = set()
            for text in strings(message.get("content")):
                anchors |= anchors_of_text(text)
            replies.append(anchors)
            seen |= anchors
            continue
        batch: set[str] = set()
        content = message.get("content")
        for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if not isinstance(block, dict):
                continue
            texts = list(strings(block.get("content") if block.get("type") == "tool_result" else block))
            anchors = set()
            for text in texts:
                anchors |= anchors_of_text(text)
            if block.get("type") == "tool_result":
                use_id = str(block.get("tool_use_id"))
                new = frozenset(anchors - seen)
                found.anchors[use_id] = new
                found.order.append(use_id)
                found.original[use_id] = block.get("content")
                for anchor in new:
                    owner.setdefault(anchor, []).append(use_id)
            batch |= anchors
        seen |= batch
    for call, anchors in enumerate(replies, 1):
        for anchor in anchors:
            for use_id in owner.get(anchor, ()):  # a result introducing it came before (else it was seen)
                found.last_use[use_id] = call
    return found
