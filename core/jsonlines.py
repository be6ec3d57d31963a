"""Untrusted JSON and JSON-lines files, read so that no file can hang, exhaust or crash the reader.

Session logs, transcripts, Claude Code sessions and files given to `ctxtui inspect` are data from
disk: anything may sit there. Only a regular file is read (opened without blocking, then checked,
so a FIFO or a device such as /dev/zero is refused at once; by default a symlink is refused too);
a line longer than `MAX_LINE_BYTES` is skipped without being held in memory; a value nested deeper
than `MAX_DEPTH` (which would make json or any code that walks it recurse without bound) counts
as a bad line, like a line that is not JSON. A bad line costs that line only.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

MAX_LINE_BYTES = 64 * 1024 * 1024  # a session snapshot is one line: far above any real one
MAX_DEPTH = 200  # containers inside containers; a Messages API history needs about ten
_CHUNK = 1024 * 1024


class NotRegularFile(OSError):
    """The path is not a regular file (a FIFO, a device, a directory, or a symlink where none is followed)."""


class BadLine:
    """What `parse_line` gives for a line that is not one JSON value of a sane depth."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"BadLine({self.reason!r})"


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = False) -> BinaryIO:
    """Open `path` for reading in binary mode if it is a regular file, else raise NotRegularFile.

    `O_NONBLOCK` keeps a FIFO from blocking the open; the check is made on the opened file
    (`fstat`), so nothing can swap the path between the check and the read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if not follow_symlinks and os.path.islink(path):
            raise NotRegularFile(f"{path}: a symlink, not followed") from error
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{path}: not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def is_regular(path: str | os.PathLike[str]) -> bool:
    """`path` itself (not a symlink to it) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def iter_lines(handle: BinaryIO, max_bytes: int | None = None) -> Iterator[bytes | None]:
    """Each line of `handle` without its newline; None for a line over `max_bytes` (dropped as it is
    read, never held whole). Only `\\n` ends a line."""
    limit = MAX_LINE_BYTES if max_bytes is None else max_bytes
    pending: list[bytes] = []
    pending_size = 0
    overlong = False
    while chunk := handle.read(_CHUNK):
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:newline]
            if overlong or pending_size + len(piece) > limit:
                yield None
            else:
                yield b"".join([*pending, piece]) if pending else piece
            pending, pending_size, overlong = [], 0, False
            start = newline + 1
        rest = chunk[start:]
        if overlong or pending_size + len(rest) > limit:
            pending, pending_size, overlong = [], 0, True
        elif rest:
            pending.append(rest)
            pending_size += len(rest)
    if overlong:
        yield None
    elif pending:
        yield b"".join(pending)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """`value` holds containers nested more than `limit` deep (walked level by level, no recursion)."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        if depth >= limit:
            return True
        below: list[Any] = []
        for item in level:
            below.extend(
                child
                for child in (item.values() if type(item) is dict else item)
                if type(child) in _CONTAINERS
            )
        level = below
        depth += 1
    return False


_CONTAINERS = (dict, list)


def parse_json(text: str | bytes) -> Any:
    """One JSON value, or a BadLine: not JSON, nested too deep for json itself, or deeper than `MAX_DEPTH`."""
    try:
        value = json.loads(text)
    except RecursionError:
        return BadLine("nested too deep")
    except ValueError as error:
        return BadLine(f"not JSON ({error.msg if isinstance(error, json.JSONDecodeError) else error})")
    # Only a text with more opening brackets than the bound can nest past it: most lines are not walked.
    opening = (
        text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    )
    if opening > MAX_DEPTH and too_deep(value):
        return BadLine(f"nested more than {MAX_DEPTH} levels deep")
    return value


def parse_line(raw: bytes | None) -> Any:
    """`parse_json` of one line from `iter_lines` (undecodable bytes replaced; None: too long)."""
    if raw is None:
        return BadLine(f"a line longer than {MAX_LINE_BYTES:,} bytes")
    return parse_json(raw.decode("utf-8", errors="replace"))


def read_records(path: Path, *, follow_symlinks: bool = False) -> Iterator[Any]:
    """The parsed non-blank lines of a regular file, in order (BadLine for a bad one).

    Raises OSError (NotRegularFile included) at once when the file cannot be opened as a regular file.
    """
    return _records(open_regular(path, follow_symlinks=follow_symlinks))


def _records(handle: BinaryIO) -> Iterator[Any]:
    with handle:
        for raw in iter_lines(handle):
            if raw is not None and not raw.strip():
                continue
            yield parse_line(raw)
