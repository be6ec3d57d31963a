"""A command's output, bounded twice: head and tail for the context, a capped spill file for the rest."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from pathlib import Path
from typing import Any

import aiofiles

from core.private import open_private_dir, open_private_file
from core.text import error_line

_UTF8_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _utf8_char_count(data: bytes | bytearray) -> int:
    """Characters in UTF-8 `data` (every byte that does not continue a multi-byte sequence)."""
    return len(bytes(data).translate(None, _UTF8_CONTINUATION_BYTES))


def clip_middle(text: str, limit: int) -> str:
    """`text` if it fits in `limit` chars, else its head and tail around an omission line."""
    if len(text) <= limit:
        return text
    head_keep = limit // 2
    tail_keep = limit - head_keep
    omitted = len(text) - head_keep - tail_keep
    return _join_clipped(text[:head_keep], omitted, text[len(text) - tail_keep :])


def _join_clipped(head: str, omitted: int, tail: str) -> str:
    head_sep = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{head_sep}[... {omitted} chars omitted ...]\n{tail}"


class BoundedOutput:
    """Collects a command's output bytes keeping only the head and a rolling tail, so memory stays
    bounded however much a command prints, and counts the characters dropped in between."""

    def __init__(self, char_limit: int) -> None:
        self._char_limit = char_limit
        # A character is at most 4 UTF-8 bytes, so each side keeps enough bytes for `char_limit` chars.
        self._keep = 4 * char_limit + 4
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped_chars = 0
        self.total_bytes = 0

    def held(self) -> bytes:
        """Everything received so far, while nothing has been dropped yet."""
        assert self._dropped_chars == 0
        return bytes(self._head + self._tail)

    def add(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        room = self._keep - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail += chunk
        if len(self._tail) > 2 * self._keep:
            cut = len(self._tail) - self._keep
            self._dropped_chars += _utf8_char_count(self._tail[:cut])
            del self._tail[:cut]

    def text(self) -> str:
        """The decoded output (invalid UTF-8 replaced), clipped to `char_limit` chars."""
        if self._dropped_chars == 0:
            return clip_middle(
                bytes(self._head + self._tail).decode("utf-8", errors="replace"), self._char_limit
            )
        tail = bytes(self._tail).lstrip(_UTF8_CONTINUATION_BYTES)  # the rest of a char cut in two
        head_text = self._head.decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        head_keep = self._char_limit // 2
        tail_keep = self._char_limit - head_keep
        omitted = len(head_text) - head_keep + self._dropped_chars + len(tail_text) - tail_keep
        return _join_clipped(head_text[:head_keep], omitted, tail_text[len(tail_text) - tail_keep :])


class Spill:
    """The output of a command too long for the context, streamed to a private file in the archive.

    The tool result keeps head and tail and names this file. At most `byte_limit` bytes are kept
    (an endless `yes` must not fill the disk); `truncated` then says the rest was dropped. Written
    under a temporary name and renamed into place when the command ends, both relative to the
    folder opened once from the workdir without following links (a folder that is a symlink is
    refused: `failed` says why, and nothing is written outside the workdir).
    """

    def __init__(self, folder: Path, workdir: Path, byte_limit: int) -> None:
        self.folder = folder
        self.workdir = workdir
        self.byte_limit = byte_limit
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        self.final = folder / f"bash-{stamp}-{secrets.token_hex(4)}.txt"
        self._temp = folder / f".{self.final.name}.tmp"
        self._handle: Any = None
        self._dir_fd = -1
        self.written = 0
        self.truncated = False
        self.failed: str | None = None

    async def write(self, data: bytes) -> None:
        if self.failed is not None or not data:
            return
        room = self.byte_limit - self.written
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
            if not data:
                return
        try:
            if self._handle is None:
                self._dir_fd = await asyncio.to_thread(open_private_dir, self.folder, self.workdir)
                self._handle = await aiofiles.open(self._temp.name, "xb", opener=self._opener)
            await self._handle.write(data)
            self.written += len(data)
        except OSError as error:
            self.failed = error_line(error)
            await self._discard()

    async def finish(self) -> Path | None:
        """Close and move into place; the final path, or None when nothing could be saved."""
        if self._handle is None or self.failed is not None:
            return None
        try:
            await self._handle.close()
            self._handle = None
            await asyncio.to_thread(
                os.rename, self._temp.name, self.final.name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd
            )
        except OSError as error:
            self.failed = error_line(error)
            await self._discard()
            return None
        self._close_dir()
        return self.final

    def _opener(self, name: str, flags: int) -> int:
        return open_private_file(self._dir_fd, name, flags)

    def _close_dir(self) -> None:
        fd, self._dir_fd = self._dir_fd, -1
        if fd >= 0:
            os.close(fd)

    async def _discard(self) -> None:
        handle, self._handle = self._handle, None
        with contextlib.suppress(OSError):
            if handle is not None:
                await handle.close()
            if self._dir_fd >= 0:
                await asyncio.to_thread(os.remove, self._temp.name, dir_fd=self._dir_fd)
        self._close_dir()
