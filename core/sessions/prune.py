"""Pruning a workdir: old session logs, and the archive files no remaining session needs.

`ctxtui sessions --prune [--older-than DAYS] [--keep N] [--dry-run]`. A session log goes when it is past
the policy: last active more than DAYS ago, and not among the newest N (either alone, or both; with
neither, no session goes and only archive files nothing needs do). An archive file (a tool result, a
bash spill or a transcript) goes when no remaining session log names it, directly or through an archive
file that one names: a name is looked for as text anywhere in the file (a marker, a ledger entry, an undo
record, a spill path quoted in a result all count), so what a kept session can restore always stays.

A session still running (the process its file is named after is alive, and not a later one that got the
same pid) is never removed, and while one runs every archive file any session log names, and every file
written since it started, stays too: its history in memory may name a file its log does not hold yet (a
write the disk refused is retried later). A log or a needed archive file that cannot be read keeps every
archive file.

Nothing is followed through a symlink: folders are opened from the workdir without following links, and
files are removed relative to them.
"""

from __future__ import annotations

import calendar
import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.archive import MANIFEST_NAME, TOOL_RESULTS_DIR, TRANSCRIPTS_DIR
from core.private import NO_FOLLOW
from core.sessions.log import SESSION_PREFIX, SESSION_SUFFIX, SESSIONS_DIR, session_id

STATE_DIR = ".ctxtui"
DAY = 86_400.0
STARTED_SLACK = 60.0  # a running session's files are kept from this many seconds before its stamp
_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | NO_FOLLOW


@dataclass(frozen=True)
class Removal:
    """A file prune removes (or would): its workdir-relative path, what it is and its size in bytes."""

    path: str
    kind: str  # "session" | "tool-result" | "transcript"
    size: int


@dataclass
class PrunePlan:
    """What a prune removes, what it keeps and why it kept more than the policy asked."""

    removals: list[Removal] = field(default_factory=list)
    kept_sessions: int = 0
    running: list[str] = field(default_factory=list)  # ids of sessions still running
    notes: list[str] = field(default_factory=list)  # one line each: why archive files were kept wholesale

    @property
    def size(self) -> int:
        return sum(removal.size for removal in self.removals)


@dataclass(frozen=True)
class _File:
    folder: str  # workdir-relative folder
    name: str
    size: int
    mtime: float

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.name}"


def _open_folder(workdir: Path, relative: str) -> int | None:
    """A descriptor of `workdir/relative`, each step opened without following a link; None when missing."""
    fd = os.open(workdir, _DIR_FLAGS)
    try:
        for part in Path(relative).parts:
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                return None
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(
                    os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
                ):
                    raise OSError(errno.ELOOP, f"{relative} leads through a symlink: not followed") from None
                if error.errno == errno.ENOTDIR:  # a file where a folder belongs: nothing of ctxtui's
                    os.close(fd)
                    return None
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd


def _regular_files(workdir: Path, relative: str, suffix: str = "") -> list[_File]:
    """The regular files of a folder (not hidden, not the manifest), without following any link."""
    fd = _open_folder(workdir, relative)
    if fd is None:
        return []
    try:
        found = []
        for name in os.listdir(fd):
            if name.startswith(".") or name == MANIFEST_NAME or not name.endswith(suffix):
                continue
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(_File(relative, name, info.st_size, info.st_mtime))
        return found
    finally:
        os.close(fd)


def _read_chunks(workdir: Path, item: _File) -> Iterator[str]:
    """The file's text in chunks (bytes that are not UTF-8 replaced), read without following a link."""
    fd = _open_folder(workdir, item.folder)
    if fd is None:
        raise FileNotFoundError(item.path)
    try:
        handle = os.open(item.name, os.O_RDONLY | NO_FOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(handle, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            raise OSError(f"{item.path}: not a regular file")
        while chunk := stream.read(_CHUNK):
            yield chunk.decode("utf-8", errors="replace")


class _Names:
    """Finds which of a set of file names a text mentions, in one pass (Aho-Corasick), across chunks."""

    def __init__(self, names: Iterable[str]) -> None:
        import ahocorasick

        self._automaton: Any = ahocorasick.Automaton()
        self._longest = 0
        for name in set(names):
            self._automaton.add_word(name, name)
            self._longest = max(self._longest, len(name))
        self._empty = self._longest == 0
        if not self._empty:
            self._automaton.make_automaton()

    def mentioned(self, chunks: Iterable[str]) -> set[str]:
        found: set[str] = set()
        if self._empty:
            return found
        tail = ""
        for chunk in chunks:
            text = tail + chunk
            found.update(name for _, name in self._automaton.iter(text))
            tail = text[-(self._longest - 1) :] if self._longest > 1 else ""
        return found


def _stamp_of(path_name: str) -> float | None:
    """When a session file was created, from its name (`session_YYYYmmdd-HHMMSS-pid-hex.jsonl`, UTC)."""
    parts = path_name.removeprefix(SESSION_PREFIX).split("-")
    try:
        return float(calendar.timegm(time.strptime(f"{parts[0]}-{parts[1]}", "%Y%m%d-%H%M%S")))
    except (IndexError, ValueError, OverflowError):
        return None


def _process_start(pid: int) -> float | None:
    """When process `pid` started, in seconds since the epoch (Linux /proc), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith(b"btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: start time in ticks
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def is_running(name: str) -> bool:
    """The process a session file is named after is still alive, and is the one that made it: a pid the
    system gave again to a process started after the file was (where /proc tells) is not."""
    parts = name.removeprefix(SESSION_PREFIX).split("-")
    if len(parts) < 4 or not parts[2].isdigit():
        return False
    pid = int(parts[2])
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return False
    started, stamp = _process_start(pid), _stamp_of(name)
    return started is None or stamp is None or started <= stamp + 2  # the stamp is cut to the second


def plan_prune(
    workdir: Path, older_than_days: float | None = None, keep: int | None = None, now: float | None = None
) -> PrunePlan:
    """What `ctxtui sessions --prune` removes in `workdir` (nothing is removed here)."""
    now = time.time() if now is None else now
    plan = PrunePlan()
    sessions_folder = f"{STATE_DIR}/{SESSIONS_DIR}"
    sessions = sorted(
        _regular_files(workdir, sessions_folder, SESSION_SUFFIX),
        key=lambda item: (item.mtime, item.name),
        reverse=True,
    )
    sessions = [item for item in sessions if item.name.startswith(SESSION_PREFIX)]
    policy = older_than_days is not None or keep is not None
    kept: list[_File] = []
    running_since: float | None = None
    for index, item in enumerate(sessions):
        running = is_running(item.name)
        if running:
            plan.running.append(session_id(Path(item.name)))
            started = _stamp_of(item.name)
            started = item.mtime if started is None else min(started, item.mtime)
            running_since = started if running_since is None else min(running_since, started)
        past = (
            policy
            and (keep is None or index >= keep)
            and (older_than_days is None or now - item.mtime > older_than_days * DAY)
        )
        if past and not running:
            plan.removals.append(Removal(item.path, "session", item.size))
        else:
            kept.append(item)
    plan.kept_sessions = len(kept)
    archive = [*(_regular_files(workdir, TOOL_RESULTS_DIR)), *(_regular_files(workdir, TRANSCRIPTS_DIR))]
    if not archive:
        return plan
    # While a session runs, every log counts (the one it resumed from names what its history holds).
    readers = sessions if running_since is not None else kept
    needed = _needed(workdir, readers, archive, plan)
    if needed is None:
        return plan
    for item in sorted(archive, key=lambda item: item.path):
        if item.name in needed:
            continue
        if running_since is not None and item.mtime >= running_since - STARTED_SLACK:
            continue
        kind = "transcript" if item.folder == TRANSCRIPTS_DIR else "tool-result"
        plan.removals.append(Removal(item.path, kind, item.size))
    return plan


def _needed(workdir: Path, readers: list[_File], archive: list[_File], plan: PrunePlan) -> set[str] | None:
    """The names of the archive files the `readers` (session logs) name, directly or through archive
    files they name; None (and a note) when one of them cannot be read: then every file stays."""
    by_name = {item.name: item for item in archive}
    names = _Names(by_name)
    needed: set[str] = set()
    queue: list[_File] = list(readers)
    while queue:
        item = queue.pop()
        try:
            found = names.mentioned(_read_chunks(workdir, item))
        except OSError as error:
            why = error.strerror or error
            plan.notes.append(f"kept every archive file: {item.path} cannot be read ({why})")
            return None
        for name in found - needed:
            needed.add(name)
            queue.append(by_name[name])
    return needed


def apply_prune(workdir: Path, plan: PrunePlan) -> tuple[list[Removal], list[str]]:
    """Remove what the plan names, sessions first; returns what was removed and one line per failure.

    A file is removed only if it is still the regular file of the size planned (relative to its folder,
    without following a link); a session that started running since the plan is left alone."""
    removed: list[Removal] = []
    failures: list[str] = []
    for removal in sorted(plan.removals, key=lambda item: item.kind != "session"):
        folder, _, name = removal.path.rpartition("/")
        if removal.kind == "session" and is_running(name):
            failures.append(f"{removal.path}: its session is running now; kept")
            continue
        try:
            fd = _open_folder(workdir, folder)
            if fd is None:
                continue
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode) or info.st_size != removal.size:
                    failures.append(f"{removal.path}: changed since it was planned; kept")
                    continue
                os.unlink(name, dir_fd=fd)
            finally:
                os.close(fd)
        except FileNotFoundError:
            continue
        except OSError as error:
            failures.append(f"{removal.path}: {error.strerror or error}")
            continue
        removed.append(removal)
    return removed, failures
