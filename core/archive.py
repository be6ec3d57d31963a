"""The on-disk archive: every byte removed from the context is written here first.

Tool results go to `.task_outputs/tool-results/<safe id>.txt`, whole histories to
`.transcripts/transcript_<unique>.jsonl` (one JSON message per line). Writes are atomic (temp file,
then link/rename) and a file is never replaced by different content. Paths handed out are
workdir-relative POSIX paths; a path read back from a marker is trusted only if it resolves to an
existing regular file inside one of the two archive directories.

Each archive directory also holds `.manifest` (JSON lines): one line per file this Archive wrote (its name,
its SHA-256, its size and, for a tool result, the tool_use id it was saved for). Every write is checked
whole (a full disk writes part, then refuses): a save is reported only once its manifest line is whole
on disk, a torn last line is ended before the next append, and a bad line costs that line only.
A marker is taken as the compactor's own only when the manifest names its file, for that id, and the
file still has that digest (`is_own`; a persisted-output block also needs its preview to be how the file starts); a
resumed session reads the manifest back, so it still trusts its own markers. Restoring reads a file
only when its size could fit in the context, and hands back its text only when the manifest vouches
for the very bytes read (`read_vouched`).

Whatever watches the archive (the recall index, core/recall/) is handed each batch as it is written
(`watch`): in the worker thread that wrote it, once its manifest lines are whole on disk, with the
text as written. A watcher's failure is counted and never fails the write.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import itertools
import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from core.history.sizes import dumps
from core.jsonlines import BadLine, parse_json
from core.private import NO_FOLLOW, PRIVATE_FILE_MODE, make_private_dir, private_opener
from core.text import error_line

TRANSCRIPTS_DIR = ".transcripts"
TOOL_RESULTS_DIR = ".task_outputs/tool-results"

MANIFEST_NAME = ".manifest"  # no .jsonl or .txt suffix: globs for archive files must not match it

_SAFE_ID = re.compile(r"[^A-Za-z0-9_-]")
_MAX_ID_CHARS = 80


def _stamp() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}"


class ArchiveError(Exception):
    """Writing to or reading from the archive failed; the message is one line."""


@dataclass(frozen=True)
class Written:
    """A file this archive has just written and recorded in its manifest, as a watcher takes it in.

    `text` is a tool result's text; `lines` a transcript's lines (one JSON message each, without the
    newline), so a watcher reads neither the file nor the history again.
    """

    path: str  # workdir-relative
    kind: str  # "tool-result" or "transcript"
    sha256: str
    size: int
    text: str | None = None
    lines: tuple[str, ...] | None = None


Watcher = Callable[[list[Written]], None]
"""Told each batch the archive wrote, in the writing thread, after the manifest vouches for it: it must
only hand the work on (a queue), never block the write."""


@dataclass(frozen=True)
class Vouched:
    """A file the manifest records: its workdir-relative path, kind and SHA-256 (the file may since be gone)."""

    path: str
    kind: str
    sha256: str


@dataclass(frozen=True)
class ArchivedFile:
    """A trusted archive file: its workdir-relative path, absolute path and size in bytes.

    `own` says whether the manifest vouches for it (written by ctxtui, unchanged since); None when
    not checked (`resolve` does not read the file; `list_files` checks).
    """

    path: str
    absolute: Path
    size: int
    kind: str  # "tool-result" or "transcript"
    own: bool | None = None


def _sha256(data: bytes = b"") -> Any:
    """A SHA-256 hash of `data` (hashlib, and OpenSSL's binding under it, ~1 ms to import: loaded at
    the first write or read of the archive, not at the app's start)."""
    import hashlib

    return hashlib.sha256(data)


def _file_sha256(handle: Any) -> str:
    """The SHA-256 hex digest of an open binary file, read from where it is to its end."""
    import hashlib

    return hashlib.file_digest(handle, "sha256").hexdigest()


def _digest(text: str, length: int = 10) -> str:
    return _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def safe_name(tool_use_id: str) -> str:
    """A file name for a tool_use id; ids that sanitise alike get distinct names."""
    cleaned = _SAFE_ID.sub("_", tool_use_id)[:_MAX_ID_CHARS]
    if cleaned != tool_use_id or not cleaned:
        cleaned = f"{cleaned or 'unknown'}-{_digest(tool_use_id, 8)}"
    return cleaned


class Archive:
    """Writes and reads the archive under `workdir`."""

    def __init__(self, workdir: str | os.PathLike[str]) -> None:
        self.workdir = Path(workdir).resolve()
        self.transcripts_dir = self.workdir / TRANSCRIPTS_DIR
        self.tool_results_dir = self.workdir / TOOL_RESULTS_DIR
        self._counter = itertools.count(1)
        self.stamp: Callable[[], str] = _stamp
        """The time-and-process part of a transcript's name (a replay makes it fixed, for figures that repeat)."""
        self._ready_dirs: set[Path] = set()
        self._manifest = _Manifest()
        self._watchers: list[Watcher] = []
        self.watch_failures = 0
        """Batches a watcher failed to take (each counted, none failed a write)."""
        self.watch_problem: str | None = None
        """The last such failure, in one line."""

    # --- watching ------------------------------------------------------------------------------

    def watch(self, watcher: Watcher) -> None:
        """Hand every batch written from now on to `watcher` (see `Watcher`)."""
        self._watchers.append(watcher)

    def _tell(self, written: list[Written]) -> None:
        """Each watcher takes the batch; what one raises is counted, never passed on to the write."""
        for watcher in self._watchers:
            try:
                watcher(written)
            except Exception as error:  # the file is on disk and vouched for: the write succeeded
                self.watch_failures += 1
                self.watch_problem = error_line(error, 300)

    # --- writing -------------------------------------------------------------------------------

    def expected_tool_result_path(self, tool_use_id: str) -> str:
        """The path `save_tool_result` gives this id unless the name is taken by other text."""
        return self.relative(self.tool_results_dir / f"{safe_name(tool_use_id or 'unknown')}.txt")

    async def save_tool_result(self, tool_use_id: str, text: str) -> str:
        """Store a tool result's full text; returns its workdir-relative path.

        Saving the same text under the same id again returns the same path.
        """
        return (await self.save_tool_results([(tool_use_id, text)]))[0]

    async def save_tool_results(self, items: list[tuple[str, str]]) -> list[str]:
        """Store many (tool_use_id, text) pairs in one trip to a worker thread; returns their paths.

        Each file is written whole and never overwrites another (`_store_new_at`); saving the
        same text under the same id again gives the same path. One thread hop for the batch
        instead of five aiofiles hops per file: micro_compact often saves dozens of results at
        once, and the hops, not the disk, were most of its time.
        """
        if not items:
            return []
        await self._ensure_dir(self.tool_results_dir)
        try:
            return await asyncio.to_thread(self._save_batch_sync, items)
        except OSError as error:
            self._ready_dirs.discard(self.tool_results_dir)
            raise ArchiveError(
                f"cannot write archive files in {TOOL_RESULTS_DIR}: {error_line(error)}"
            ) from error

    def _save_batch_sync(self, items: list[tuple[str, str]]) -> list[str]:
        """Store each item, then record the batch in the manifest with one append (an OSError ends it).

        The folder is opened once (not followed if it is a link) and every file of the batch is
        written, linked and checked relative to it, so no path is walked again per file.
        """
        paths = []
        stored: list[tuple[Path, str, str | None, int]] = []
        texts: list[str] = []
        folder = self.tool_results_dir
        prefix = f"{self.relative(folder)}/"
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | NO_FOLLOW)
        try:
            for tool_use_id, text in items:
                base = safe_name(tool_use_id or "unknown")
                data = text.encode("utf-8", "surrogatepass")
                digest = _sha256(data).hexdigest()  # the collision name and the manifest share it
                for name in (f"{base}.txt", f"{base}-{digest[:10]}.txt"):
                    if self._store_new_at(dir_fd, name, data, digest):
                        stored.append((folder / name, digest, tool_use_id, len(data)))
                        paths.append(prefix + name)
                        texts.append(text)
                        break
                else:
                    self._manifest.record(stored)
                    raise ArchiveError(
                        f"cannot archive tool result {tool_use_id!r}: name collision at {folder / name}"
                    )
        finally:
            os.close(dir_fd)
        self._manifest.record(stored)
        if self._watchers:
            self._tell(
                [
                    Written(path, "tool-result", digest, size, text=text)
                    for path, (_, digest, _, size), text in zip(paths, stored, texts, strict=True)
                ]
            )
        return paths

    def _store_new_at(self, dir_fd: int, name: str, data: bytes, digest: str) -> bool:
        """Write `data` as `name` in the folder `dir_fd` atomically unless it exists (in a worker thread).

        True when `name` now holds `data` (written now or already identical), False when it holds
        something else. The file appears whole or not at all: it is written under a temporary
        name, then linked in place, which never overwrites, so concurrent writers can never
        clobber each other.
        """
        temp = f".{name}.{os.getpid()}.{next(self._counter)}.tmp"
        handle = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, PRIVATE_FILE_MODE, dir_fd=dir_fd
        )
        try:
            try:
                _, failed = _write_fully(handle, data)
                if failed is not None:
                    raise failed
            finally:
                os.close(handle)
            return _place_at(dir_fd, temp, name, digest)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)

    async def write_transcript(self, messages: Sequence[Any]) -> str:
        """Store a whole history as JSONL (one message per line); returns its relative path."""
        return (await self.save_transcript(messages)).path

    async def save_transcript(self, messages: Sequence[Any]) -> SavedTranscript:
        """`write_transcript`, also handing back what writing it measured: each message's JSON length.

        One trip to a worker thread: each message is serialised once, and the lines are written,
        hashed and measured in the same pass, so a caller that needs the history's size (snip's
        figures) measures nothing again, and the SHA-256 that names the file is the one its
        manifest line records. The file is whole under a temporary name before it gets its own
        (a hard link, which never overwrites; a rename where links are not supported); when
        anything fails, no file is left behind.
        """
        await self._ensure_dir(self.transcripts_dir)
        try:
            return await asyncio.to_thread(self._save_transcript_sync, messages)
        except OSError as error:
            self._ready_dirs.discard(self.transcripts_dir)
            raise ArchiveError(
                f"cannot archive a transcript in {TRANSCRIPTS_DIR}: {error_line(error)}"
            ) from error

    def _save_transcript_sync(self, messages: Sequence[Any]) -> SavedTranscript:
        """Write, name and record a transcript (in a worker thread; raises OSError or ArchiveError).
        Its name is given relative to the folder opened once (not followed if it is a link), as a
        batch of tool results is."""
        temp = self.transcripts_dir / f".transcript.{os.getpid()}.{time.time_ns()}.{next(self._counter)}.tmp"
        try:
            lines: list[str] | None = [] if self._watchers else None
            digest, sizes = _write_jsonl(temp, messages, lines)
            length = os.stat(temp).st_size
            stamp = self.stamp()
            dir_fd = os.open(self.transcripts_dir, os.O_RDONLY | os.O_DIRECTORY | NO_FOLLOW)
            try:
                for _ in range(100):
                    name = f"transcript_{stamp}-{next(self._counter):04d}-{digest[:8]}.jsonl"
                    if _place_at(dir_fd, temp.name, name, digest):
                        target = self.transcripts_dir / name
                        self._manifest.record([(target, digest, None, length)])
                        path = self.relative(target)
                        if lines is not None:
                            self._tell([Written(path, "transcript", digest, length, lines=tuple(lines))])
                        return SavedTranscript(path, digest, sizes)
            finally:
                os.close(dir_fd)
            raise ArchiveError("cannot archive transcript: no free file name")
        finally:
            with contextlib.suppress(OSError):
                os.remove(temp)

    async def _ensure_dir(self, folder: Path) -> None:
        """Create an archive directory once, and refuse one that leads out of the workdir."""
        if folder in self._ready_dirs:
            return
        try:
            await asyncio.to_thread(make_private_dir, folder, self.workdir)
        except OSError as error:
            raise ArchiveError(
                f"cannot create archive directory {self.relative(folder)}: {error_line(error)}"
            ) from error
        if not self._root_is_plain(folder):
            raise ArchiveError(
                f"refusing to write in {self.relative(folder)}: the archive directory leads out of the workdir"
            )
        self._ready_dirs.add(folder)

    # --- paths ---------------------------------------------------------------------------------

    def relative(self, path: Path) -> str:
        """The workdir-relative POSIX form of a path inside the workdir."""
        try:
            return PurePosixPath(path.relative_to(self.workdir)).as_posix()
        except ValueError:
            return path.as_posix()

    def resolve(self, path: str) -> ArchivedFile | None:
        """Trust a marker's path only if it is relative and resolves inside the archive to a file.

        Absolute paths, `..` tricks, symlinks leading out, missing files and anything that is not
        a regular file give None; such a marker is shown as plain text and never opened.
        """
        if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
            return None
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or pure.name == MANIFEST_NAME:
            return None
        candidate = self.workdir / pure
        try:
            real = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        for root, kind in ((self.tool_results_dir, "tool-result"), (self.transcripts_dir, "transcript")):
            if not self._root_is_plain(root):
                continue
            real_root = root
            if real.parent == real_root or real_root in real.parents:
                try:
                    if not real.is_file():
                        return None
                    size = real.stat().st_size
                except OSError:
                    return None
                return ArchivedFile(path=path, absolute=real, size=size, kind=kind)
        return None

    def is_own(self, path: str, tool_use_id: str | None = None, preview: str | None = None) -> bool:
        """This archive wrote `path` (for `tool_use_id`, when given) and the file is unchanged since;
        with `preview`, the file also starts with exactly that text.

        A path alone proves nothing: tool output can name any archive file. Only a file recorded in
        the manifest, with the same digest now, and (for a tool result) recorded for the same
        tool_use id, is the compactor's own; any other marker is plain text. A persisted-output
        block passes its preview: an id can come twice (a replayed offline call, a duplicate the API
        sent), and a block whose preview the file does not start with holds text no file has.
        """
        found = self.resolve(path)
        if found is None or not self._manifest.vouches(found.absolute, tool_use_id):
            return False
        return preview is None or _starts_with(found.absolute, preview.encode("utf-8", "surrogatepass"))

    @staticmethod
    def _root_is_plain(root: Path) -> bool:
        """The archive directory exists and no symlink on its way leads elsewhere."""
        try:
            return root.resolve(strict=True) == root
        except (OSError, RuntimeError):
            return False

    # --- reading -------------------------------------------------------------------------------

    async def read_vouched(self, path: str, max_bytes: int) -> tuple[str, frozenset[str | None]]:
        """The text at a trusted `path` and the tool_use ids the manifest recorded it for.

        Refused (ArchiveError) by its size before anything is read when it is over `max_bytes`,
        and after one bounded read when the manifest does not vouch for exactly those bytes (a
        file ctxtui never wrote, or one changed since): the digest is taken of the bytes read,
        so nothing can change the file between the check and the text handed back.
        """
        found = self._require(path)
        try:
            return await asyncio.to_thread(self._read_vouched_sync, found, max_bytes)
        except OSError as error:
            raise ArchiveError(f"cannot read {path}: {error_line(error)}") from error

    def _read_vouched_sync(self, found: ArchivedFile, max_bytes: int) -> tuple[str, frozenset[str | None]]:
        data, ids = self._vouched_bytes(found, max_bytes)
        return data.decode("utf-8", errors="replace"), ids

    def vouched_bytes(self, path: str, max_bytes: int) -> bytes:
        """The bytes at `path` when the manifest vouches for exactly them (synchronous: for a worker
        thread); ArchiveError as `read_vouched` refuses (not an archive file, over `max_bytes`, not
        written by this archive or changed since)."""
        try:
            return self._vouched_bytes(self._require(path), max_bytes)[0]
        except OSError as error:
            raise ArchiveError(f"cannot read {path}: {error_line(error)}") from error

    def vouched(self) -> list[Vouched]:
        """Every file the manifests record, tool results first, each name in the order first recorded
        (the files themselves are not read: one may since be gone or changed)."""
        found = []
        for root, kind in ((self.tool_results_dir, "tool-result"), (self.transcripts_dir, "transcript")):
            prefix = f"{self.relative(root)}/"
            for name, digest in self._manifest.names(root):
                if name and "/" not in name and not name.startswith(".") and name != MANIFEST_NAME:
                    found.append(Vouched(prefix + name, kind, digest))
        return found

    def manifest_sizes(self) -> tuple[int, int]:
        """The sizes of the two manifests on disk (-1 for one missing): they change when anything is recorded."""
        sizes = []
        for root in (self.tool_results_dir, self.transcripts_dir):
            try:
                sizes.append(os.stat(root / MANIFEST_NAME).st_size)
            except OSError:
                sizes.append(-1)
        return sizes[0], sizes[1]

    def _vouched_bytes(self, found: ArchivedFile, max_bytes: int) -> tuple[bytes, frozenset[str | None]]:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(found.absolute, flags)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ArchiveError(f"refusing to open {found.path!r}: not a regular file")
            if info.st_size > max_bytes:
                raise ArchiveError(
                    f"{found.path} is {info.st_size:,} bytes, more than the {max_bytes:,} "
                    "that could fit in the context: not read"
                )
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ArchiveError(f"{found.path} grew past {max_bytes:,} bytes while it was read")
        ids = self._manifest.ids_for(found.absolute, _sha256(data).hexdigest(), len(data))
        if ids is None:
            raise ArchiveError(
                f"refusing to restore {found.path}: the archive's manifest does not vouch for it "
                "(ctxtui did not write it, or it was changed since)"
            )
        return data, ids

    async def read_text(self, path: str) -> str:
        """The full text behind a trusted path (raises ArchiveError for an untrusted one)."""
        found = self._require(path)
        import aiofiles  # here: the first frame builds an Archive, and reads nothing yet

        try:
            async with aiofiles.open(found.absolute, "rb") as handle:
                data = await handle.read()
        except OSError as error:
            raise ArchiveError(f"cannot read {path}: {error_line(error)}") from error
        return data.decode("utf-8", errors="replace")

    async def read_transcript(self, path: str) -> list[Any]:
        """The messages of a transcript, in order."""
        text = await self.read_text(path)
        # Only "\n" ends a record: JSON written with ensure_ascii=False may hold U+2028 and friends.
        # Each line through core/jsonlines.py: not JSON, or nested past its bound, refuses the transcript.
        messages = [parse_json(line) for line in text.split("\n") if line.strip()]
        bad = next((message for message in messages if isinstance(message, BadLine)), None)
        if bad is not None:
            raise ArchiveError(f"transcript {path} is not valid JSONL: {bad.reason}")
        return messages

    def _require(self, path: str) -> ArchivedFile:
        found = self.resolve(path)
        if found is None:
            raise ArchiveError(f"refusing to open {path!r}: not a file inside the archive")
        return found

    def list_files(self) -> list[ArchivedFile]:
        """Every archived file, newest first, each marked `own` when the manifest vouches for it."""
        found: list[tuple[float, ArchivedFile]] = []
        for root in (self.tool_results_dir, self.transcripts_dir):
            if not root.is_dir():
                continue
            for entry in root.iterdir():
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                archived = self.resolve(self.relative(entry))
                if archived is not None:
                    own = self._manifest.vouches(archived.absolute, None)
                    found.append((entry.stat().st_mtime, dataclasses.replace(archived, own=own)))
        found.sort(key=lambda pair: (-pair[0], pair[1].path))
        return [archived for _, archived in found]


class _Manifest:
    """The `.manifest` of each archive directory: what was written there, by digest and size.

    Read lazily and again whenever the file grew (another Archive on the same workdir, or a
    resumed session); appended to after each file is stored. A file whose size is not one the
    manifest recorded for its name is refused without being read (lines written before sizes were
    recorded have none: their files are hashed). A verified file's digest is cached by (size,
    mtime, inode), so a marker seen again is not hashed again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Path, dict[str, dict[str, set[str | None]]]] = {}  # dir -> name -> sha -> ids
        self._sizes: dict[Path, dict[str, set[int | None]]] = {}  # dir -> name -> sizes (None: not recorded)
        self._loaded_size: dict[Path, int] = {}
        self._verified: dict[Path, tuple[tuple[int, int, int], str]] = {}

    def record(self, stored: list[tuple[Path, str, str | None, int]]) -> None:
        """Append one line per (file, its SHA-256, tool_use id, size) to the manifest of the file's folder.

        Every byte is written (a short write is continued) or OSError is raised, and either way this
        Archive vouches for what the manifest on disk vouches for: the entries whose line was written
        whole, none of the rest. A torn last line (a full disk, a crash) is ended before the next append,
        so no entry is glued onto it: a bad line costs that line only.
        """
        by_folder: dict[Path, list[tuple[str, str, str | None, int]]] = {}
        for target, digest, tool_use_id, size in stored:
            by_folder.setdefault(target.parent, []).append((target.name, digest, tool_use_id, size))
        with self._lock:
            for folder, entries in by_folder.items():
                self._load(folder)
                lines = [
                    json.dumps(
                        {"name": name, "sha256": digest, "tool_use_id": tool_use_id, "bytes": size},
                        ensure_ascii=True,
                    ).encode("ascii")
                    for name, digest, tool_use_id, size in entries
                ]
                manifest = folder / MANIFEST_NAME
                handle = os.open(manifest, os.O_RDWR | os.O_APPEND | os.O_CREAT | NO_FOLLOW, 0o600)
                try:
                    lead = b"" if _ends_a_line(handle) else b"\n"
                    done, failed = _write_fully(handle, lead + b"".join(line + b"\n" for line in lines))
                finally:
                    os.close(handle)
                end = len(lead)
                for line, (name, digest, tool_use_id, size) in zip(lines, entries, strict=True):
                    end += len(line)
                    if end > done:
                        break  # this line and the ones after it are not (whole) on disk
                    self._add(folder, name, digest, tool_use_id, size)
                    end += 1
                if failed is not None:
                    raise failed
                with contextlib.suppress(OSError):
                    self._loaded_size[folder] = os.stat(manifest).st_size

    def vouches(self, absolute: Path, tool_use_id: str | None) -> bool:
        """The manifest recorded this file's current bytes (for `tool_use_id`, when given)."""
        with self._lock:
            self._load(absolute.parent)
            by_digest = self._entries.get(absolute.parent, {}).get(absolute.name)
            if not by_digest:
                return False
            digest = self._digest_of(absolute)
            ids = by_digest.get(digest or "")
            if ids is None:
                return False
            return tool_use_id is None or tool_use_id in ids

    def names(self, folder: Path) -> list[tuple[str, str]]:
        """Every (name, SHA-256) the folder's manifest records, each once, in the order first recorded."""
        with self._lock:
            self._load(folder)
            return [
                (name, digest)
                for name, by_digest in self._entries.get(folder, {}).items()
                for digest in by_digest
            ]

    def ids_for(self, absolute: Path, digest: str, size: int) -> frozenset[str | None] | None:
        """The tool_use ids the manifest recorded for these bytes of this file (None: it never did)."""
        with self._lock:
            self._load(absolute.parent)
            ids = self._entries.get(absolute.parent, {}).get(absolute.name, {}).get(digest)
            return frozenset(ids) if ids is not None and self._size_known(absolute, size) else None

    def _size_known(self, absolute: Path, size: int) -> bool:
        sizes = self._sizes.get(absolute.parent, {}).get(absolute.name, set())
        return None in sizes or size in sizes

    def _digest_of(self, absolute: Path) -> str | None:
        try:
            info = absolute.stat()
            if not self._size_known(absolute, info.st_size):
                return None  # not a size this name was written with: not read at all
            key = (info.st_size, info.st_mtime_ns, info.st_ino)
            cached = self._verified.get(absolute)
            if cached is not None and cached[0] == key:
                return cached[1]
            with open(absolute, "rb") as handle:
                digest = _file_sha256(handle)
        except OSError:
            return None
        self._verified[absolute] = (key, digest)
        return digest

    def _load(self, folder: Path) -> None:
        """(Re)read the folder's manifest if it changed size since it was last read."""
        manifest = folder / MANIFEST_NAME
        try:
            size = os.stat(manifest).st_size
        except OSError:
            return
        if self._loaded_size.get(folder) == size:
            return
        try:
            with open(manifest, "rb") as handle:
                data = handle.read()
        except OSError:
            return
        for raw in data.split(b"\n"):
            entry = _manifest_entry(raw)
            if not isinstance(entry, dict):
                continue
            name, digest, tool_use_id = entry.get("name"), entry.get("sha256"), entry.get("tool_use_id")
            length = entry.get("bytes")
            if not (type(length) is int and length >= 0):
                length = None
            if (
                isinstance(name, str)
                and isinstance(digest, str)
                and (tool_use_id is None or isinstance(tool_use_id, str))
            ):
                self._add(folder, name, digest, tool_use_id, length)
        self._loaded_size[folder] = size

    def _add(self, folder: Path, name: str, digest: str, tool_use_id: str | None, size: int | None) -> None:
        self._entries.setdefault(folder, {}).setdefault(name, {}).setdefault(digest, set()).add(tool_use_id)
        self._sizes.setdefault(folder, {}).setdefault(name, set()).add(size)


@dataclass(frozen=True)
class SavedTranscript:
    """A transcript just archived: its relative path, its SHA-256 and each message's JSON length."""

    path: str
    sha256: str
    sizes: tuple[int, ...]  # each line without its newline, in characters: `message_chars` of each message


_WRITE_BATCH = 256  # messages serialised, encoded, hashed and written together


def _write_jsonl(
    temp: Path, messages: Sequence[Any], kept: list[str] | None = None
) -> tuple[str, tuple[int, ...]]:
    """Write `messages` as JSONL to the new file `temp` (0600); returns its SHA-256 and the line lengths.
    `kept`, when given, gets every line as written (for the archive's watchers)."""
    digest = _sha256()
    sizes: list[int] = []
    with open(temp, "xb", opener=private_opener) as handle:
        for start in range(0, len(messages), _WRITE_BATCH):
            lines = [dumps(message) for message in messages[start : start + _WRITE_BATCH]]
            sizes += map(len, lines)
            if kept is not None:
                kept += lines
            encoded = [
                line.encode("utf-8", "surrogatepass") for line in lines
            ]  # faster than encoding the join
            encoded.append(b"")
            data = b"\n".join(encoded)
            digest.update(data)
            handle.write(data)
    return digest.hexdigest(), tuple(sizes)


_ENTRY_START = b'{"name": '  # how `record` starts a line; inside a value its quotes would be escaped


def _manifest_entry(raw: bytes) -> Any:
    """One manifest line read back; a line glued onto a torn one (as versions before the repair appended
    after a full disk) gives the whole entry at its end; None for a line that holds none."""
    entry = parse_json(raw)
    if not isinstance(entry, BadLine):
        return entry
    start = raw.rfind(_ENTRY_START)
    if start <= 0:
        return None
    glued = parse_json(raw[start:])
    return None if isinstance(glued, BadLine) else glued


def _write_fully(fd: int, data: bytes) -> tuple[int, OSError | None]:
    """Write all of `data` to `fd`, continuing after short writes; returns the bytes written and, when
    not all of them were, the error that stopped it (a full disk writes part, then refuses the rest)."""
    view = memoryview(data)
    done = 0
    while done < len(data):
        try:
            written = os.write(fd, view[done:])
        except OSError as error:
            return done, error
        if written <= 0:
            return done, OSError(errno.EIO, f"short write ({done:,} of {len(data):,} bytes)")
        done += written
    return done, None


def _ends_a_line(fd: int) -> bool:
    """The open file is empty or its last byte is a newline (not a line torn by a failed write)."""
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


def _starts_with(absolute: Path, prefix: bytes) -> bool:
    """The file's first bytes are exactly `prefix` (only that many bytes are read)."""
    try:
        with open(absolute, "rb") as handle:
            return handle.read(len(prefix)) == prefix
    except OSError:
        return False


def _place_at(dir_fd: int, temp: str, name: str, digest: str) -> bool:
    """Give the file `temp` the name `name` (both in the open folder `dir_fd`) unless it is taken;
    True when `name` now holds it.

    A name already taken counts as placed only when that file has the same bytes (its SHA-256); a
    link planted at the name is not followed (False: the caller tries its next name).
    """
    try:
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileExistsError:
        pass
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        try:
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # filesystems without hard links
            return True
    try:
        handle = os.open(name, os.O_RDONLY | NO_FOLLOW, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return False  # a link in its place is someone else's: the next name is tried
        raise
    with open(handle, "rb") as existing:
        return _file_sha256(existing) == digest
