"""Reading and replacing files through a `Location`, never by a path name that could be swapped.

Synchronous on purpose (plain os calls on descriptors): the tools run these in a worker thread.
Special files are opened non-blocking and refused after fstat, so a FIFO can never hang a tool.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass

from core.tools.base import ToolError
from core.tools.workspace import Location, Workspace, WorkspaceError, protected_reason

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_ATTEMPTS = 5  # a final entry swapped for a symlink mid-way is walked again, this many times


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


@dataclass(frozen=True)
class FileBytes:
    """A regular file read whole: its workspace path, bytes, and mode."""

    shown: str
    data: bytes
    mode: int


def read_regular(workspace: Workspace, path: str, byte_limit: int) -> FileBytes:
    """The bytes of the regular file at `path` (at most `byte_limit`), read through a confined walk.

    Missing files, directories, special files and files over the limit are refused (ToolError).
    """
    found = read_existing(workspace, path, byte_limit)
    if found is None:
        raise ToolError(f"File not found: {path}")
    return found


def read_existing(workspace: Workspace, path: str, byte_limit: int) -> FileBytes | None:
    """`read_regular`, but None when there is no file at `path`."""
    for _ in range(_ATTEMPTS):
        try:
            location = workspace.locate(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        with location:
            if location.name is None:
                raise ToolError(
                    f"{location.shown} is a directory, not a file; use glob to list its contents."
                )
            try:
                fd = os.open(location.name, _READ_FLAGS, dir_fd=location.dir_fd)
            except FileNotFoundError:
                return None
            except OSError as error:
                if error.errno == errno.ELOOP:  # became a symlink after the walk: walk it again
                    continue
                raise
            with os.fdopen(fd, "rb", closefd=True) as handle:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise ToolError(
                        f"{location.shown} is {_kind(info.st_mode)}; only regular files are read."
                    )
                if info.st_size > byte_limit:
                    raise ToolError(
                        f"{location.shown} is {info.st_size} bytes, more than the {byte_limit}-byte limit; "
                        "use bash (head, tail, sed -n, grep) to look at parts of it."
                    )
                data = handle.read(byte_limit + 1)
            if len(data) > byte_limit:  # it grew after the size check
                raise ToolError(f"{location.shown} is larger than the {byte_limit}-byte limit.")
            return FileBytes(location.shown, data, info.st_mode)
    raise WorkspaceError(f"Path {path!r} kept changing while it was opened; try again.")


def refuse_protected(parts: tuple[str, ...]) -> None:
    """Raise WorkspaceError when the tools may not write at `parts`."""
    if reason := protected_reason(parts):
        raise WorkspaceError(f"Refusing to write {'/'.join(parts)}: {reason}; the tools may only read it.")


def refuse_protected_path(path: str) -> None:
    """`refuse_protected` for a path as given (or shown): its "/"-separated parts, empty and "." left out."""
    refuse_protected(tuple(part for part in path.split("/") if part not in ("", ".")))


def locate_for_write(workspace: Workspace, path: str, *, create_dirs: bool) -> Location:
    """The Location a write to `path` lands on, refusing ctxtui's own state and directories."""
    refuse_protected_path(path)
    location = workspace.locate(path, create_dirs=create_dirs, guard=refuse_protected)
    try:
        refuse_protected(location.parts)
        if location.name is None:
            if not location.parts:
                raise ToolError("The workspace root is a directory; give a file path.")
            raise ToolError(f"{location.shown} is a directory; give a file path.")
    except BaseException:
        location.close()
        raise
    return location


def existing_mode(location: Location) -> int | None:
    """The mode of the regular file the Location names, None if there is none; other kinds refused."""
    assert location.name is not None
    try:
        info = os.stat(location.name, dir_fd=location.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise WorkspaceError(f"{location.shown} changed into a symlink while it was written; try again.")
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{location.shown} is a directory; give a file path.")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{location.shown} is {_kind(info.st_mode)}; only regular files are written.")
    return info.st_mode


def replace_atomic(location: Location, data: bytes, mode: int | None) -> None:
    """Write `data` to a new file in the Location's directory, then rename it over the entry.

    The rename replaces the name itself (a symlink put there meanwhile is replaced, not followed).
    """
    assert location.name is not None
    temp = f".ctxtui-write-{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=location.dir_fd)
    try:
        with os.fdopen(fd, "wb", closefd=True) as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(mode))
            os.fsync(handle.fileno())
        os.replace(temp, location.name, src_dir_fd=location.dir_fd, dst_dir_fd=location.dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=location.dir_fd)
        raise
