"""ctxtui's own directories and files inside the workdir: made private, never reached through a link.

Every writer of ctxtui's state (the archive, the session logs, the spill files of long bash output)
goes through here. A directory is walked one component at a time from the workdir, each opened with
O_NOFOLLOW | O_DIRECTORY relative to the one before, so a `.ctxtui`, `.ctxtui/sessions` or
`.task_outputs` that is a symlink (a cloned repository can hold one) is refused instead of followed
out of the workdir. Missing directories are created 0700 (existing ones tightened to it); the top
one holds a `.gitignore` of `*`, which keeps it out of the user's `git status`. Files are opened
relative to the walked directory with O_NOFOLLOW, so a planted link in place of a file is refused too.
Synchronous: callers run these in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | NO_FOLLOW
_GITIGNORE = ".gitignore"


class OutsideWorkdirError(OSError):
    """A directory on the way to ctxtui's state is a symlink or not a directory: writing there is refused."""

    def __str__(self) -> str:
        return str(self.strerror)


def _components(path: Path, base: Path) -> tuple[str, ...]:
    if not path.is_relative_to(base):
        raise ValueError(f"{path} is not inside {base}")
    parts = path.relative_to(base).parts
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{path} is not a plain path below {base}")
    return parts


def open_private_dir(path: Path, base: Path) -> int:
    """A descriptor of the directory `path` below `base`, made private on the way; the caller closes it.

    `base` (the workdir) is the user's: made if missing, its mode untouched. Each directory below it up
    to `path` is created 0700 if missing and tightened to 0700 if not; a symlink or a non-directory on
    the way raises OutsideWorkdirError (one line, naming it) and nothing is created beyond it.
    """
    parts = _components(Path(path), Path(base))
    os.makedirs(base, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    walked: list[str] = []
    try:
        for part in parts:
            walked.append(part)
            child = _open_or_make(fd, part, "/".join(walked))
            os.close(fd)
            fd = child
            if len(walked) == 1:
                _ignore_in_git(fd)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_or_make(parent: int, name: str, shown: str) -> int:
    """Open directory `name` in `parent` without following a link, creating it 0700 if missing; tightened to 0700."""
    try:
        os.mkdir(name, PRIVATE_DIR_MODE, dir_fd=parent)
    except FileExistsError:
        pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OutsideWorkdirError(
                errno.ELOOP,
                f"{shown} is a symlink or not a directory; ctxtui writes its state only in "
                "real directories inside the workdir",
            ) from None
        raise
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_DIR_MODE:
            os.fchmod(fd, PRIVATE_DIR_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _ignore_in_git(dir_fd: int) -> None:
    """A `.gitignore` of `*` in a top-level state directory, unless something already has that name.

    Best effort: when it cannot be written whole (a full disk), it is removed again, to be made by a
    later call; the write that follows reports the disk's trouble itself.
    """
    try:
        fd = os.open(
            _GITIGNORE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, PRIVATE_FILE_MODE, dir_fd=dir_fd
        )
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write("*\n")
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(_GITIGNORE, dir_fd=dir_fd)


def make_private_dir(path: Path, base: Path) -> None:
    """Create `path` and its missing parents below `base` as private ctxtui directories (see open_private_dir)."""
    os.close(open_private_dir(path, base))


def open_private_file(dir_fd: int, name: str, flags: int) -> int:
    """Open `name` in the directory `dir_fd` without following a link; a new file is 0600."""
    return os.open(name, flags | NO_FOLLOW, PRIVATE_FILE_MODE, dir_fd=dir_fd)


def private_opener(path: str, flags: int) -> int:
    """An `opener` for open()/aiofiles.open(): a new file is 0600, and a link in its place is refused."""
    return os.open(path, flags | NO_FOLLOW, PRIVATE_FILE_MODE)
