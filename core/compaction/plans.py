"""What the pipeline's steps plan before they write: replacements of tool results, a snip's cut, and
the copy-on-write editor that applies them.

Nothing here writes to disk or calls a model: a step plans with these, saves everything it will
remove, and only then applies the plan (core/compaction/pipeline.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from core.archive import TRANSCRIPTS_DIR
from core.history.messages import (
    has_tool_use,
    is_tool_result,
    tool_result_positions,
    unseen_tool_result_positions,
)
from core.history.sizes import SEPARATOR, list_chars, message_chars
from core.markers import request_marker, snip_marker
from core.text import plural
from core.values.splice import Splice

Message = dict[str, Any]


@dataclass
class Replacement:
    """One planned replacement of a tool_result's content (the file is saved before it is applied)."""

    index: int
    block_index: int
    block: dict[str, Any]
    text: str | None
    path: str | None
    preview: str = ""
    old_size: int | None = None  # JSON length of the content it replaces, when already known

    @property
    def tool_use_id(self) -> str:
        return str(self.block.get("tool_use_id") or "unknown")

    @property
    def saved_path(self) -> str:
        assert self.path is not None, "replacement applied before its file was saved"
        return self.path


# As long as the names Archive.write_transcript gives (UTC stamp, pid, 4-digit counter, digest):
# used to weigh a marker before its transcript exists.
TRANSCRIPT_PATH_ESTIMATE = f"{TRANSCRIPTS_DIR}/transcript_00000000-000000-{os.getpid()}-0000-00000000.jsonl"


@dataclass(frozen=True)
class SnipPlan:
    """Where a snip cuts and what its marker counts (earlier snips' messages included)."""

    head_end: int
    tail_start: int
    archived_before: int  # messages earlier markers in the middle stood for
    archived_now: int  # messages of this history that go to the transcript's middle
    request_readded: bool
    kept: tuple[int, ...] = ()  # pinned pairs in the middle: they stay, right after the marker
    notes: tuple[Message, ...] = ()  # the notes message that follows the marker (core/compaction/notes.py)

    @property
    def count(self) -> int:
        return self.archived_before + self.archived_now

    def detail(self) -> str:
        """The step's one-line detail: how many messages it archived."""
        detail = f"{plural(self.archived_now, 'message')} archived"
        if self.archived_before:
            detail += f" ({self.count} in all with the {self.archived_before} archived earlier)"
        if self.request_readded:
            detail += "; the current request was put back after the marker"
        if self.notes:
            detail += "; the notes follow the marker"
        return detail

    def result(
        self, messages: Sequence[Message], transcript: str, active_request: str | None
    ) -> list[Message]:
        marker = {"role": "user", "content": snip_marker(self.count, transcript)}
        request = (
            [{"role": "user", "content": active_request}] if self.request_readded and active_request else []
        )
        kept = [messages[index] for index in self.kept]
        return [
            *messages[: self.head_end],
            marker,
            *self.notes,
            *kept,
            *request,
            *messages[self.tail_start :],
        ]

    def chars(self, sizes: Sequence[int], result: Sequence[Message]) -> int:
        """`estimate_chars(result)` from the input's message sizes: only the new middle is measured."""
        tail = len(sizes) - self.tail_start
        middle = result[self.head_end : len(result) - tail]
        kept = chain(sizes[: self.head_end], map(message_chars, middle), sizes[self.tail_start :])
        return list_chars(kept, len(result))

    def outweighs(self, messages: Sequence[Message], result: Sequence[Message]) -> bool:
        """`estimate_chars(result) > estimate_chars(messages)`, measuring only as much of the cut middle
        as it takes to outweigh the new one (usually one message)."""
        tail = len(messages) - self.tail_start
        middle = result[self.head_end : len(result) - tail]
        room = sum(map(message_chars, middle)) + SEPARATOR * (len(result) - len(messages))
        cut = 0
        for message in messages[self.head_end : self.tail_start]:
            cut += message_chars(message)
            if cut >= room:
                return False
        return True

    def splices(self, messages: Sequence[Message], result: Sequence[Message]) -> tuple[Splice, ...]:
        """The change from `messages` to `result` (made by `self.result`): the middle, replaced."""
        tail = len(messages) - self.tail_start
        added = tuple(result[self.head_end : len(result) - tail])
        return (Splice(self.head_end, self.tail_start - self.head_end, added),)


class Editor:
    """Copy-on-write edits of a history: a message is copied the first time one of its blocks changes."""

    def __init__(self, messages: Sequence[Message], chars: int) -> None:
        self.messages: list[Message] = list(messages)
        self.chars = chars
        self.changed: set[int] = set()
        self.files: list[str] = []

    def splices(self) -> tuple[Splice, ...]:
        """What changed, as splices of the input list: one per copied message, in order."""
        return tuple(Splice(index, 1, (self.messages[index],)) for index in sorted(self.changed))

    def set_block_content(
        self, index: int, block_index: int, content: str, old_size: int | None = None
    ) -> None:
        old = self.messages[index]
        new_blocks = list(old["content"])
        old_block = new_blocks[block_index]
        new_blocks[block_index] = {**old_block, "content": content}
        new = {**old, "content": new_blocks}
        if "content" in old_block:
            # Replacing one value changes the JSON by exactly the difference of the two values.
            if old_size is None:
                old_size = message_chars(old_block["content"])
            self.chars += message_chars(content) - old_size
        else:
            self.chars += message_chars(new) - message_chars(old)
        self.messages[index] = new
        self.changed.add(index)


def unseen_and_read(messages: Sequence[Message]) -> tuple[set[tuple[int, int]], list[tuple[int, int]]]:
    """The positions of the results the model has not seen yet, and of the ones it has read (oldest first)."""
    unseen = unseen_tool_result_positions(messages)
    return unseen, [position for position in tool_result_positions(messages) if position not in unseen]


def unchanged(messages: Sequence[Message]) -> list[Message]:
    """A step that changed nothing hands back its input itself (a copy only if it was not a list)."""
    return messages if isinstance(messages, list) else list(messages)


def is_request_copy(message: Message, active_request: str | None) -> bool:
    return (
        active_request is not None
        and message.get("role") == "user"
        and message.get("content") == active_request
    )


def request_visible(messages: Sequence[Message], active_request: str) -> bool:
    marker = request_marker(active_request)
    return any(
        message.get("role") == "user"
        and isinstance(message.get("content"), str)
        and (message["content"] == active_request or marker in message["content"])
        for message in messages
    )


def reactive_cut(messages: Sequence[Message], keep: int) -> int:
    """Where the kept tail of a reactive compaction of `keep` messages starts (a pair is never split)."""
    count = len(messages)
    tail_start = max(0, count - keep)
    if (
        0 < tail_start < count
        and is_tool_result(messages[tail_start])
        and has_tool_use(messages[tail_start - 1])
    ):
        tail_start -= 1
    return tail_start


def request_last(carried: Sequence[Message], request: str, pinned: bool = False) -> list[Message]:
    """The current request again after what a summary carried, so that the model reads it last
    (nothing carried: the summary message, which holds the request, is last already), and always
    when the request is `pinned` (a pinned message survives as a message)."""
    return [{"role": "user", "content": request}] if request and (carried or pinned) else []


def as_list(messages: Sequence[Message]) -> list[Message]:
    return messages if isinstance(messages, list) else list(messages)
