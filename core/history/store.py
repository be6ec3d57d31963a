"""The history's owner: a list of plain dicts that knows what changed, and per-message figures that follow it.

`History` is a `list` (json.dumps, `==`, slicing and iteration work as on any list) whose every
mutation is recorded as a `Splice`. `Tally` keeps one figure per message (its JSON length, its token
count) aligned with the history's positions and updates it from the splices, so a figure costs time
proportional to what changed, and a message that leaves the history leaves the tally with it: no cache
keyed by object identity, nothing to clear when it is full. (Views get the same splices from the
`HistoryChanged` events.)

Messages are values: code that changes a message builds a copy and puts it in place (a splice). A
message edited in place is not seen until `History.touch(index)` says so.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, count
from typing import Any, SupportsIndex, overload

from core.history.messages import splice_between
from core.history.sizes import LIST_BRACKETS, SEPARATOR, list_chars, message_chars
from core.values.splice import Splice

Message = dict[str, Any]
Measure = Callable[[Message], int]

_MERGE_LIMIT = 4_096  # appends merged into one pending splice, at most


class Follower:
    """Receives every splice of one History, in order (a tally; in tests, a recorder of the splices)."""

    def push(self, splice: Splice, length_before: int) -> None:
        raise NotImplementedError


class History(list[Message]):
    """The agent's history: a plain list of messages that records every change as a splice.

    Appends are O(1) splices; `apply` performs splices a compaction step reported (O(changed));
    `replace` diffs by identity when no splices are known. Per-message figures live in tallies
    (`tally`) that follow the splices.
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__(messages)
        self.version = 0
        self._followers: weakref.WeakSet[Follower] = weakref.WeakSet()
        self._tallies: dict[str, Tally] = {}

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    # --- recording ------------------------------------------------------------------------------

    def _record(self, splice: Splice, length_before: int) -> None:
        self.version += 1
        for follower in list(self._followers):
            follower.push(splice, length_before)

    def follow(self, follower: Follower) -> None:
        """Send every later splice to `follower` (held weakly: a dropped view stops receiving)."""
        self._followers.add(follower)

    def tally(self, key: str, measure: Measure) -> Tally:
        """The per-message figure `key` (made with `measure` the first time), kept up to date."""
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally(self, measure)
        return tally

    @property
    def chars(self) -> int:
        """Exactly `len(json.dumps(self, default=str, ensure_ascii=False))`, in time proportional to the changes."""
        tally = self.tally("chars", message_chars)
        return LIST_BRACKETS + tally.total() + SEPARATOR * max(len(self) - 1, 0)

    def sizes(self, start: int, stop: int) -> list[int]:
        """The JSON lengths of the messages `start:stop` (from the tally, nothing re-serialised)."""
        return self.tally("chars", message_chars).values(start, stop)

    # --- changing -------------------------------------------------------------------------------

    def splice(self, start: int, removed: int, added: Sequence[Message]) -> None:
        """Replace `removed` messages from `start` on with `added`."""
        length = len(self)
        if not 0 <= start <= length or removed < 0 or start + removed > length:
            raise IndexError(f"splice {start}+{removed} outside a history of {length}")
        items = tuple(added)
        if not removed and not items:
            return
        super().__setitem__(slice(start, start + removed), items)
        self._record(Splice(start, removed, items), length)

    def apply(self, changes: Iterable[Splice]) -> None:
        """Perform `changes` in order (e.g. the splices a compaction step reported)."""
        for change in changes:
            self.splice(change.start, change.removed, change.added)

    def replace(self, messages: Sequence[Message]) -> tuple[Splice, ...]:
        """Become `messages`; returns the splices, found by an identity diff."""
        changes = splice_between(self, messages)
        self.apply(changes)
        return changes

    def touch(self, index: int) -> None:
        """Say the message at `index` was edited in place (its figures are measured again)."""
        index = range(len(self))[index]
        self.splice(index, 1, (self[index],))

    # --- list mutators, each one splice ---------------------------------------------------------

    def append(self, message: Message) -> None:
        self.splice(len(self), 0, (message,))

    def extend(self, messages: Iterable[Message]) -> None:
        self.splice(len(self), 0, tuple(messages))

    def __iadd__(self, messages: Iterable[Message]) -> History:  # type: ignore[override,misc]
        self.extend(messages)
        return self

    def insert(self, index: SupportsIndex, message: Message) -> None:
        position = operator.index(index)
        length = len(self)
        position = max(0, min(length, position + length if position < 0 else position))
        self.splice(position, 0, (message,))

    def pop(self, index: SupportsIndex = -1) -> Message:
        position = range(len(self))[operator.index(index)]
        message = self[position]
        self.splice(position, 1, ())
        return message

    def remove(self, message: Message) -> None:
        self.splice(self.index(message), 1, ())

    def clear(self) -> None:
        self.splice(0, len(self), ())

    @overload
    def __setitem__(self, index: SupportsIndex, message: Message) -> None: ...
    @overload
    def __setitem__(self, index: slice, message: Iterable[Message]) -> None: ...
    def __setitem__(self, index: SupportsIndex | slice, message: Any) -> None:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                updated = list(self)
                updated[index] = message
                self.replace(updated)
                return
            self.splice(start, max(stop - start, 0), tuple(message))
        else:
            position = range(len(self))[operator.index(index)]
            self.splice(position, 1, (message,))

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        if not isinstance(index, slice):
            self.splice(range(len(self))[operator.index(index)], 1, ())
            return
        start, stop, step = index.indices(len(self))
        if step == 1:
            self.splice(start, max(stop - start, 0), ())
            return
        updated = list(self)
        del updated[index]
        self.replace(updated)

    def __imul__(self, times: SupportsIndex) -> History:
        self.replace(list(self) * operator.index(times))
        return self

    def sort(self, *args: Any, **kwargs: Any) -> None:
        ordered = list(self)
        ordered.sort(*args, **kwargs)
        self.replace(ordered)

    def reverse(self) -> None:
        self.replace(list(reversed(self)))


class Tally(Follower):
    """One figure per message of a History (e.g. its JSON length), updated from the splices.

    Splices queue up as they happen (cheap, on the event loop) and are applied when a figure is
    read, measuring only the added messages; reading from a worker thread is safe. A splice that
    replaces everything drops what was queued before it, so no message outlives its time in the
    history here.
    """

    def __init__(self, history: History, measure: Measure) -> None:
        self._measure = measure
        self._values: list[int] = []
        self._total = 0
        self._pending: list[Splice] = [Splice(0, 0, tuple(history))] if len(history) else []
        self._lock = threading.Lock()  # guards _pending
        self._flush_lock = threading.Lock()  # one flush at a time; guards _values and _total
        history.follow(self)

    def push(self, splice: Splice, length_before: int) -> None:
        with self._lock:
            pending = self._pending
            if splice.start == 0 and splice.removed == length_before:
                # everything is replaced: what was queued no longer matters (removed -1: all of it)
                self._pending = [Splice(0, -1, splice.added)]
            elif (
                pending
                and not splice.removed
                and splice.start == pending[-1].start + len(pending[-1].added)
                and len(pending[-1].added) < _MERGE_LIMIT
            ):
                last = pending[-1]
                pending[-1] = Splice(last.start, last.removed, last.added + splice.added)
            else:
                pending.append(splice)

    def _flush(self) -> None:
        with self._flush_lock:
            with self._lock:
                pending, self._pending = self._pending, []
            for number, splice in enumerate(pending):
                try:
                    figures = [self._measure(message) for message in splice.added]
                except BaseException:
                    with self._lock:
                        self._pending = pending[number:] + self._pending
                    raise
                removed = len(self._values) if splice.removed < 0 else splice.removed
                stop = splice.start + removed
                self._total += sum(figures) - sum(self._values[splice.start : stop])
                self._values[splice.start : stop] = figures

    def total(self) -> int:
        """The sum of the figures of every message now in the history."""
        self._flush()
        return self._total

    def values(self, start: int, stop: int) -> list[int]:
        self._flush()
        with self._flush_lock:
            return self._values[start:stop]


class Mirror:
    """A History that follows a plain list by diffing it, for callers that hold no History.

    The diff is by message identity; a message whose `content` was reassigned in place is seen
    too (its content object changed) and measured again.
    """

    def __init__(self) -> None:
        self.history = History()
        self._contents: list[Any] = []

    def sync(self, messages: Sequence[Message]) -> History:
        if isinstance(messages, History):
            return messages
        history = self.history
        changes = history.replace(messages)
        # the splice's own messages are measured already: touch only the ones it kept
        spliced = range(changes[0].start, changes[0].start + len(changes[0].added)) if changes else range(0)
        contents = [_content_of(message) for message in messages]
        if len(self._contents) == len(contents):
            for index in compress(count(), map(operator.is_not, self._contents, contents)):
                if index not in spliced:
                    history.touch(index)
        self._contents = contents
        return history


def _content_of(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else message


class HistorySizer:
    """`estimate_chars` for the lists one Compactor sees, in time proportional to what changed.

    A History answers itself. A list a compaction step derived from a measured one (`derive`) is
    sized from its base and the changed messages only. Any other list is diffed against the last
    one (a Mirror); its newest `recheck` messages are measured again, the place where in-place
    edits would happen.
    """

    def __init__(self, recheck: int = 4) -> None:
        self._mirror = Mirror()
        self._recheck = recheck
        self._derived: tuple[Sequence[Message], int, int] | None = None  # (list, its length, its chars)

    def measure(self, messages: Sequence[Message]) -> int:
        if isinstance(messages, History):
            return messages.chars
        derived = self._derived
        if derived is not None and derived[0] is messages and derived[1] == len(messages):
            return derived[2]
        return self._synced(messages).chars

    def sizes(self, messages: Sequence[Message]) -> list[int]:
        """The JSON length of each message of `messages` (known ones are not measured again)."""
        history = self._synced(messages)
        return history.sizes(0, len(history))

    def _synced(self, messages: Sequence[Message]) -> History:
        """A History equal to `messages` whose figures are known (the mirror, for a plain list)."""
        history = self._mirror.sync(messages)
        if history is messages:
            return history
        length = len(history)
        start = max(length - self._recheck, 0)
        for index, known in enumerate(history.sizes(start, length), start):
            if message_chars(history[index]) != known:
                history.touch(index)
        return history

    def derive(
        self,
        base: Sequence[Message],
        result: Sequence[Message],
        changes: Sequence[Splice],
        chars: int | None = None,
    ) -> None:
        """`result` is `base` with `changes` applied; size it from `base` and the changed messages only.

        `chars`, when the step already knows the result's size exactly, is taken as it is.
        """
        if chars is None:
            chars = self._derived_chars(base, result, changes)
        self._derived = (result, len(result), chars)

    def _derived_chars(
        self, base: Sequence[Message], result: Sequence[Message], changes: Sequence[Splice]
    ) -> int:
        inner = self.measure(base) - LIST_BRACKETS - SEPARATOR * max(len(base) - 1, 0) if base else 0
        offset = 0
        done = 0
        for change in changes:
            if change.removed < 0 or change.start < done:  # not in order: measure the result
                return list_chars(map(message_chars, result), len(result))
            start = change.start - offset
            stop = start + change.removed
            removed = (
                base.sizes(start, stop) if isinstance(base, History) else map(message_chars, base[start:stop])
            )
            inner += sum(map(message_chars, change.added)) - sum(removed)
            offset += len(change.added) - change.removed
            done = change.start + len(change.added)
        return LIST_BRACKETS + inner + SEPARATOR * max(len(result) - 1, 0)

    def forget(self) -> None:
        """Let go of the last derived list (so it holds no message once its step is over)."""
        self._derived = None
