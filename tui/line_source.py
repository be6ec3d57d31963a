"""Lines of a text held in memory or of a file of any size, and a literal search over them.

`FileLines` indexes where each line starts (byte offsets, in chunks, so a worker can build it a piece
at a time while the first lines already show) and reads from disk only the lines asked for.
`TextLines` does the same for a string. `search` scans either in chunks and can be cancelled
between them; a match is reported with its character offsets and its line and column.
"""

from __future__ import annotations

import operator
import re
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate, count
from pathlib import Path
from typing import BinaryIO, Protocol

CHUNK_BYTES = 4 * 1024 * 1024
LINE_READ_LIMIT = 20_000  # bytes of one line read for display (the search sees all of it)
_CACHED_LINES = 512


@dataclass(frozen=True, slots=True)
class Found:
    """One match: character offsets in the whole text, and where it sits (line, column, end column)."""

    start: int
    end: int
    line: int
    column: int
    end_column: int


class LineSource(Protocol):
    @property
    def line_count(self) -> int: ...
    @property
    def done(self) -> bool: ...
    @property
    def chars(self) -> int | None: ...
    @property
    def widest(self) -> int: ...
    def line(self, number: int) -> str: ...
    def chunks(self) -> Iterator[str]: ...
    def full_text(self) -> str: ...


def _strip_end(line: str) -> str:
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line


class TextLines:
    """The lines of a string (an in-context block, a rendered transcript)."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = array("q", [0])
        starts.extend(match.end() for match in re.finditer("\n", text))
        if len(starts) > 1 and starts[-1] == len(text):
            starts.pop()  # a final newline ends the last line; it does not start an empty one
        self._starts = starts if text else array("q")
        self.widest = 0
        previous = 0
        for start in self._starts[1:]:
            self.widest = max(self.widest, start - previous)
            previous = start
        self.widest = max(self.widest, len(text) - previous)

    @property
    def line_count(self) -> int:
        return len(self._starts)

    @property
    def done(self) -> bool:
        return True

    @property
    def chars(self) -> int:
        return len(self.text)

    def line(self, number: int) -> str:
        starts = self._starts
        start = starts[number]
        end = starts[number + 1] if number + 1 < len(starts) else len(self.text)
        return _strip_end(self.text[start : min(end, start + LINE_READ_LIMIT)])

    def chunks(self) -> Iterator[str]:
        step = CHUNK_BYTES
        text = self.text
        position = 0
        while position < len(text):
            cut = text.rfind("\n", position, position + step)
            end = len(text) if position + step >= len(text) or cut < 0 else cut + 1
            yield text[position:end]
            position = end

    def full_text(self) -> str:
        return self.text


class FileLines:
    """The lines of a file: an index of line starts built in chunks; lines read from disk on demand."""

    def __init__(self, path: Path, size: int | None = None) -> None:
        self.path = path
        self.size = path.stat().st_size if size is None else size
        self._starts = array("q", [0] if self.size else [])
        self._indexed = 0
        self._chars = 0
        self._pending = b""  # bytes after the last newline of the indexed part (for the char count)
        self.done = self.size == 0
        self.widest = 0
        self._reader: BinaryIO | None = None
        self._cache: OrderedDict[int, str] = OrderedDict()

    # --- the index -------------------------------------------------------------------------------

    def index_chunk(self, handle: BinaryIO, chunk: int = CHUNK_BYTES) -> bool:
        """Index the next `chunk` bytes (from `handle`, the indexer's own); True once the whole file is."""
        if self.done:
            return True
        handle.seek(self._indexed)
        data = handle.read(chunk)
        if not data:
            self._finish()
            return True
        base = self._indexed
        parts = data.split(b"\n")
        if len(parts) > 1:
            first = len(parts[0]) + base - (self._starts[-1] if self._starts else 0)  # the line begun before
            self.widest = max(self.widest, first, max(map(len, parts[1:-1]), default=0))
            # the line after the k-th newline starts at base + (lengths of parts 0..k) + k + 1 (all in C)
            self._starts.extend(map(operator.add, accumulate(map(len, parts[:-1])), count(base + 1)))
        cut = data.rfind(b"\n") + 1
        text = self._pending + data[:cut]
        self._chars += len(text.decode("utf-8", errors="replace"))
        self._pending = data[cut:] if cut else self._pending + data
        self._indexed += len(data)
        if self._indexed >= self.size:
            self._finish()
        return self.done

    def _finish(self) -> None:
        starts = self._starts
        if len(starts) > 1 and starts[-1] >= self.size:
            starts.pop()
        self.widest = max(self.widest, self.size - (starts[-1] if starts else 0))
        self._chars += len(self._pending.decode("utf-8", errors="replace"))
        self._pending = b""
        self.done = True

    @property
    def progress(self) -> float:
        return 1.0 if self.done or not self.size else self._indexed / self.size

    @property
    def line_count(self) -> int:
        """Lines known so far (all of them once `done`)."""
        count = len(self._starts)
        return count if self.done else max(count - 1, 0)

    @property
    def chars(self) -> int | None:
        return self._chars if self.done else None

    # --- reading ---------------------------------------------------------------------------------

    def line(self, number: int) -> str:
        cached = self._cache.get(number)
        if cached is not None:
            self._cache.move_to_end(number)
            return cached
        starts = self._starts
        start = starts[number]
        end = starts[number + 1] if number + 1 < len(starts) else self.size
        if self._reader is None:
            self._reader = self.path.open("rb")
        self._reader.seek(start)
        data = self._reader.read(min(end - start, LINE_READ_LIMIT))
        text = _strip_end(data.decode("utf-8", errors="replace"))
        self._cache[number] = text
        if len(self._cache) > _CACHED_LINES:
            self._cache.popitem(last=False)
        return text

    def chunks(self) -> Iterator[str]:
        """The file's text in pieces that end at line ends (read with a handle of their own)."""
        with self.path.open("rb") as handle:
            carry = b""
            while True:
                data = handle.read(CHUNK_BYTES)
                if not data:
                    if carry:
                        yield carry.decode("utf-8", errors="replace")
                    return
                data = carry + data
                cut = data.rfind(b"\n") + 1
                if not cut:
                    carry = data
                    continue
                carry = data[cut:]
                yield data[:cut].decode("utf-8", errors="replace")

    def full_text(self) -> str:
        """The whole file as text (reads all of it: for small files and tests)."""
        return self.path.read_bytes().decode("utf-8", errors="replace")

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def search(
    source: LineSource,
    query: str,
    limit: int,
    cancelled: Callable[[], bool] = lambda: False,
    progress: Callable[[int, int], None] | None = None,
) -> list[Found] | None:
    """Every case-insensitive literal match of `query`, in order, at most `limit` (None if cancelled).

    `progress(characters scanned, matches so far)` is called after each chunk.
    """
    needle = query.lower()
    pattern = re.compile(re.escape(query), re.IGNORECASE)
    found: list[Found] = []
    base_chars = 0
    base_line = 0
    for chunk in source.chunks():
        if cancelled():
            return None
        lowered = chunk.lower()
        if len(lowered) == len(chunk):  # str.find on the lowered text: several times faster than re.I
            positions: Iterator[tuple[int, int]] = _finds(lowered, needle)
        else:  # lowering changed lengths (e.g. "İ"): offsets would move, so let re do it
            positions = ((match.start(), match.end()) for match in pattern.finditer(chunk))
        line = base_line
        counted = 0
        for start, end in positions:
            line += chunk.count("\n", counted, start)
            counted = start
            line_start = chunk.rfind("\n", 0, start) + 1
            found.append(
                Found(base_chars + start, base_chars + end, line, start - line_start, end - line_start)
            )
            if len(found) >= limit:
                return found
        base_chars += len(chunk)
        base_line += chunk.count("\n")
        if progress is not None:
            progress(base_chars, len(found))
    return found


def _finds(text: str, needle: str) -> Iterator[tuple[int, int]]:
    position = text.find(needle)
    while position >= 0:
        yield position, position + len(needle)
        position = text.find(needle, position + len(needle))
