"""How a step describes what it took out of the context: its ledger entries.

A step builds one entry per tool result it replaced by a marker and one per run of consecutive
messages it removed (a message counts as removed when nothing the step added is that message, or
equal to it: a pinned message carried after a summary, or the current request put back after a snip
marker, stayed). Entries are made with `call` 0 and `group` 0; the keeper that applies the change
stamps both. Token counts are taken by whoever has a counter (`count_tokens`), off the event loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from core.history.sizes import dumps
from core.text import one_line
from core.values.records import LedgerEntry

Message = dict[str, Any]
Removed = tuple[LedgerEntry, Any]
"""An entry and the JSON value it stands for (what its tokens are counted from)."""

LABEL_CHARS = 120


def result_label(messages: Sequence[Message], index: int, block_index: int) -> str:
    """The tool call a result answered and its input, on one line ("read_file {"path": "a.py"}")."""
    block = messages[index]["content"][block_index]
    tool_use_id = str(block.get("tool_use_id"))
    previous = messages[index - 1] if index > 0 else None
    content = previous.get("content") if isinstance(previous, dict) else None
    if isinstance(content, list):
        for use in content:
            if isinstance(use, dict) and use.get("type") == "tool_use" and str(use.get("id")) == tool_use_id:
                tool_input = json.dumps(use.get("input"), ensure_ascii=False, sort_keys=True, default=str)
                return one_line(f"{use.get('name')} {tool_input}", LABEL_CHARS)
    return one_line(f"the result of {tool_use_id}", LABEL_CHARS)


def result_entry(
    step: str,
    messages: Sequence[Message],
    index: int,
    block_index: int,
    path: str,
    restorable: bool,
    chars: int | None = None,
) -> Removed:
    """The entry of one tool result whose content a step replaced (its content in the context then);
    `chars`: the content's JSON length when the caller has measured it already."""
    block = messages[index]["content"][block_index]
    content = block.get("content", "")
    size = len(dumps(content)) if chars is None else chars
    entry = LedgerEntry(
        step,
        0,
        "tool_result",
        result_label(messages, index, block_index),
        size,
        None,
        path,
        restorable,
        tool_use_id=str(block.get("tool_use_id")),
    )
    return entry, content


def run_label(start: int, stop: int) -> str:
    """ "messages #12-#31" for positions 12..31, "message #12" for one."""
    return f"message #{start}" if stop - start == 1 else f"messages #{start}-#{stop - 1}"


def runs(positions: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive positions as [start, stop) runs, in order."""
    found: list[tuple[int, int]] = []
    for position in sorted(positions):
        if found and found[-1][1] == position:
            found[-1] = (found[-1][0], position + 1)
        else:
            found.append((position, position + 1))
    return found


def removed_positions(
    messages: Sequence[Message], start: int, stop: int, added: Sequence[Message]
) -> list[int]:
    """The positions in [start, stop) whose message left: nothing in `added` is it or equal to it."""
    same = {id(message) for message in added}
    cut = {id(message) for message in messages[start:stop]}
    others = [message for message in added if id(message) not in cut]
    return [
        position
        for position in range(start, stop)
        if id(messages[position]) not in same and not any(messages[position] == other for other in others)
    ]


def message_entries(
    step: str, messages: Sequence[Message], positions: Iterable[int], path: str, size: Callable[[int], int]
) -> list[Removed]:
    """One entry per run of removed `positions` of `messages`, archived in the transcript `path`
    (whose lines are `messages`); `size(position)` is a message's JSON length."""
    removed = []
    for start, stop in runs(positions):
        chars = sum(size(position) for position in range(start, stop))
        entry = LedgerEntry(
            step, 0, "messages", run_label(start, stop), chars, None, path, False, span=(start, stop)
        )
        removed.append((entry, list(messages[start:stop])))
    return removed


def cut_entries(
    step: str,
    messages: Sequence[Message],
    stop: int,
    added: Sequence[Message],
    transcript: str,
    sizes: Sequence[int] | None,
) -> list[Removed]:
    """The entries of a summary step that replaced `messages[:stop]` by `added` (the transcript's
    line lengths when it was written, else each message measured)."""
    gone = removed_positions(messages, 0, stop, added)
    return message_entries(
        step,
        messages,
        gone,
        transcript,
        sizes.__getitem__ if sizes else lambda position: len(dumps(messages[position])),
    )


def count_removed(removed: Sequence[Removed], count: Callable[[str], int]) -> tuple[LedgerEntry, ...]:
    """The entries with their tokens counted (a run's messages each as its own JSON). Blocking: run it
    in a worker thread."""
    counted = []
    for entry, value in removed:
        if entry.kind == "messages" and isinstance(value, list):
            tokens = sum(count(dumps(message)) for message in value)
        else:
            tokens = count(dumps(value))
        counted.append(replace(entry, tokens=tokens))
    return tuple(counted)
