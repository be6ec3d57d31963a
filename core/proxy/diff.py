"""What changed between two requests of one conversation: messages added, removed, changed, as splices.

Messages are compared by content with their `cache_control` marks left out (clients move the
cache breakpoint to the newest message on every call; that moves no content), then aligned with a
longest-matching-blocks diff, so one edited message in the middle of a long history is one change,
not "everything after it removed and added again". A message whose content is the same but whose
cache marks moved is its own class (`remarked`), so it does not read as an edit.

The splices are exact: applying them in order to the previous request's messages gives the new
request's messages (the same contract as `HistoryChanged.changes`). Messages that are equal,
marks included, are the previous request's own objects in the result (`interned`), so a view that
keeps the previous list can apply the splices and a long session's calls share their messages in
memory.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.events import HistoryChanged
from core.history import estimate_chars
from core.usage.fingerprint import without_cache_marks
from core.values.splice import Splice

Message = dict[str, Any]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def digest(value: Any) -> str:
    """A short content digest of a JSON value, cache marks left out."""
    return _hash(_canonical(without_cache_marks(value)))


def loose_equal(a: Any, b: Any) -> bool:
    """Equal content, cache marks aside (C-speed `==` first; the copy without marks only when that fails)."""
    return bool(a == b) or bool(without_cache_marks(a) == without_cache_marks(b))


@dataclass(frozen=True)
class MessageKeys:
    """Per message, its content digest without and with cache marks (what the full alignment compares)."""

    loose: tuple[str, ...] = ()
    exact: tuple[str, ...] = ()

    @classmethod
    def of(cls, messages: Sequence[Any]) -> MessageKeys:
        exact_texts = [_canonical(message) for message in messages]
        loose = [
            _hash(_canonical(without_cache_marks(message))) if '"cache_control"' in text else _hash(text)
            for message, text in zip(messages, exact_texts, strict=True)
        ]
        return cls(tuple(loose), tuple(_hash(text) for text in exact_texts))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass(frozen=True)
class RequestDiff:
    """How a request differs from the previous request of its conversation.

    `previous` is the previous call's id (None for a conversation's first call, and then every
    message counts as added). `changes` turn the previous messages into these (exact splices).
    `added` and `remarked` are indexes in this request; `removed` indexes in the previous one;
    `changed` pairs (previous index, index here) of messages edited in place.
    `first_change` is the first place, in the prompt cache's order (tools, system, messages), where
    this request differs from a prefix of the previous one: "tools", "system", "messages.K", or None
    when the previous request is a prefix of this one (only messages were appended).
    """

    previous: str | None = None
    changes: tuple[Splice, ...] = ()
    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    changed: tuple[tuple[int, int], ...] = ()
    remarked: tuple[int, ...] = ()
    system_changed: bool = False
    tools_changed: bool = False
    model_changed: bool = False
    first_change: str | None = None
    compacted: bool = False  # this request opens with a client's compaction summary the previous did not have

    @property
    def first(self) -> bool:
        return self.previous is None

    @property
    def unchanged(self) -> bool:
        """The same request again (a retry): nothing differs, not even a cache mark."""
        return (
            not self.first
            and not self.changes
            and not self.system_changed
            and not self.tools_changed
            and not self.model_changed
        )

    def describe(self) -> str:
        """What changed, in a few words (the end of a `--headless` line)."""
        if self.first:
            return f"first call, {len(self.added)} message(s)"
        if self.unchanged:
            return "same request again"
        parts: list[str] = []
        if self.compacted:
            parts.append("compacted")
        if self.model_changed:
            parts.append("model changed")
        if self.tools_changed:
            parts.append("tools changed")
        if self.system_changed:
            parts.append("system changed")
        if self.added:
            parts.append(f"+{len(self.added)} added")
        if self.removed:
            parts.append(f"-{len(self.removed)} removed")
        if self.changed:
            parts.append(f"~{len(self.changed)} changed")
        if self.remarked and not (self.added or self.removed or self.changed):
            parts.append("cache marks moved")
        return ", ".join(parts) or "cache marks moved"

    def history_changed(self, messages: Sequence[Any]) -> HistoryChanged:
        """The diff as the inspector's HistoryChanged event (`messages`: this request's)."""
        return HistoryChanged(
            length=len(messages), chars=estimate_chars(messages), changes=self.changes, reason="proxy"
        )


@dataclass(frozen=True)
class MessageDiff:
    """How one list of messages became another (see RequestDiff for the fields' meaning).

    `interned` is the new list with every message equal to a previous one (marks included) replaced
    by that previous object; `first_change` is the first previous index whose content is not kept at
    the same place (None: the previous list is a prefix of the new one, cache marks aside).
    """

    interned: list[Any]
    changes: tuple[Splice, ...] = ()
    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    changed: tuple[tuple[int, int], ...] = ()
    remarked: tuple[int, ...] = ()
    first_change: int | None = None


def diff_messages(previous: Sequence[Any], current: Sequence[Any]) -> MessageDiff:
    """Align `current` with `previous`.

    The common case, a client appending to its history (and moving its cache mark), is settled with
    `==` on the dicts, in C, without serialising anything. Anything else (a compaction, an edit, a
    removal) is aligned in full on content digests.
    """
    shared = min(len(previous), len(current))
    same = 0
    while same < shared and previous[same] == current[same]:
        same += 1
    if len(current) >= len(previous) and all(
        loose_equal(previous[index], current[index]) for index in range(same, len(previous))
    ):
        interned = list(current)
        interned[:same] = previous[:same]
        remarked = []
        for index in range(same, len(previous)):
            if previous[index] == current[index]:
                interned[index] = previous[index]
            else:
                remarked.append(index)
        changes = []
        if remarked or len(current) > len(previous):
            changes.append(Splice(same, len(previous) - same, tuple(interned[same:])))
        return MessageDiff(
            interned,
            tuple(changes),
            added=tuple(range(len(previous), len(current))),
            remarked=tuple(remarked),
        )
    return _aligned(previous, MessageKeys.of(previous), list(current), MessageKeys.of(current))


@dataclass
class _Builder:
    current: list[Any]
    changes: list[Splice] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    changed: list[tuple[int, int]] = field(default_factory=list)
    remarked: list[int] = field(default_factory=list)

    def splice(self, i1: int, i2: int, j1: int, j2: int) -> None:
        self.changes.append(Splice(j1, i2 - i1, tuple(self.current[j1:j2])))


def _aligned(
    previous: Sequence[Any], previous_keys: MessageKeys, current: list[Any], current_keys: MessageKeys
) -> MessageDiff:
    """The full alignment: longest matching blocks of content digests, then exact splices."""
    interned = list(current)
    build = _Builder(interned)
    matcher = difflib.SequenceMatcher(None, previous_keys.loose, current_keys.loose, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            run_start: int | None = None
            for offset in range(i2 - i1):
                i, j = i1 + offset, j1 + offset
                if previous_keys.exact[i] == current_keys.exact[j]:
                    interned[j] = previous[i]
                    if run_start is not None:
                        build.splice(i1 + run_start, i, j1 + run_start, j)
                        run_start = None
                else:
                    build.remarked.append(j)
                    run_start = offset if run_start is None else run_start
            if run_start is not None:
                build.splice(i1 + run_start, i2, j1 + run_start, j2)
            continue
        build.splice(i1, i2, j1, j2)
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for offset in range(paired):
            if _role(previous[i1 + offset]) == _role(interned[j1 + offset]):
                build.changed.append((i1 + offset, j1 + offset))
            else:
                build.removed.append(i1 + offset)
                build.added.append(j1 + offset)
        build.removed.extend(range(i1 + paired, i2))
        build.added.extend(range(j1 + paired, j2))
    first = next(
        (
            index
            for index, key in enumerate(previous_keys.loose)
            if index >= len(current_keys.loose) or current_keys.loose[index] != key
        ),
        None,
    )
    return MessageDiff(
        interned,
        tuple(build.changes),
        tuple(sorted(build.added)),
        tuple(sorted(build.removed)),
        tuple(build.changed),
        tuple(build.remarked),
        first,
    )


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def apply_splices(messages: Sequence[Any], changes: Sequence[Splice]) -> list[Any]:
    """`messages` with `changes` applied in order (what a view does with a diff)."""
    result = list(messages)
    for change in changes:
        result[change.start : change.start + change.removed] = list(change.added)
    return result
