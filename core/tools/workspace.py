"""The directory the file tools are confined to, and the only way they reach a path inside it.

A path is never resolved to a string and then opened by name (a directory swapped for a symlink in
between would lead out). Instead it is walked one component at a time from an open descriptor of the
root: each directory is opened with O_NOFOLLOW | O_DIRECTORY relative to the previous one, a symlink
met on the way is read and its target walked the same way (confined to the root), and `..` goes back
to the directory the walk came from, never to whatever is the parent on disk now. The caller then
acts on the final entry relative to the open directory (`Location`).
"""

from __future__ import annotations

import errno
import os
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from core.tools.base import fold_lines, not_relative
from core.tools.text import unescape_name

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_SYMLINKS = 40

# ctxtui's own state: readable by the tools, never written by them (DESIGN: archive files are never
# overwritten; a planted session would be loaded by --resume). Git's own files neither: nearly every
# file under a `.git` directory can make the next `git status` run a command (config, hooks,
# commondir, info/attributes with a filter...), and a file named `.git` points git at a directory of
# the writer's choosing; so no path with a `.git` component is written, at any depth, in any case.
PROTECTED_DIRS = (".ctxtui", ".task_outputs", ".transcripts")
GIT_NAME = ".git"


class WorkspaceError(Exception):
    """A path that is not allowed: it escapes the workspace or is malformed (one-line message)."""


def protected_reason(parts: Iterable[str]) -> str | None:
    """Why the tools may not write at the workspace path made of `parts`, or None."""
    parts = tuple(parts)
    if parts and parts[0] in PROTECTED_DIRS:
        return f"{parts[0]}/ holds ctxtui's own state (sessions and the archive)"
    for depth, part in enumerate(parts):
        if part.casefold() == GIT_NAME:
            where = "/".join(parts[: depth + 1])
            if depth == len(parts) - 1:
                return (
                    f"{where} is git's own (a directory of git's state, or a file that points git elsewhere)"
                )
            return f"{where}/ is git's own state, whose files can make git run commands"
    return None


@dataclass
class Location:
    """Where a workspace path leads: an open directory and the entry named in it.

    `name` is None when the path is the directory itself. `parts` are the real components from the
    root (symlinks resolved). The descriptor belongs to the Location: close it with `close()`.
    """

    dir_fd: int
    name: str | None
    parts: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The workspace-relative POSIX path ("." for the root)."""
        return "/".join(self.parts) or "."

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Location:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _readlink(name: str, dir_fd: int) -> str | None:
    """The target of symlink `name` in `dir_fd`, or None when it is not a symlink (or vanished)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except (OSError, ValueError):
        return None


def _shown_name(part: str, dir_fd: int) -> str:
    """`part`, or the real name it shows with `\\xNN` escapes (as glob lists it) when only that exists."""
    if "\\x" not in part:
        return part
    real = unescape_name(part)
    if real == part:
        return part
    try:
        os.lstat(part, dir_fd=dir_fd)
        return part
    except OSError:
        pass
    try:
        os.lstat(real, dir_fd=dir_fd)
    except (OSError, ValueError):
        return part
    return real


class Workspace:
    """The directory the file tools are confined to."""

    def __init__(self, root: Path) -> None:
        self.root: Path = Path(root).resolve()

    # -- checks ------------------------------------------------------------------------------

    def _check_text(self, path: object) -> str:
        if not isinstance(path, str):
            raise WorkspaceError("Path must be a string.")
        if problem := not_relative(path, "path"):
            raise WorkspaceError(problem)
        depth = 0
        for part in path.split("/"):
            if part in ("", "."):
                continue
            depth = depth - 1 if part == ".." else depth + 1
            if depth < 0:
                raise WorkspaceError(f"Path {path!r} is outside the workspace.")
        return path

    def _inside(self, absolute: str) -> list[str] | None:
        """The components below the root of an absolute symlink target, or None if it lies outside."""
        normal = Path(os.path.normpath(absolute))
        if not normal.is_relative_to(self.root):
            return None
        return list(normal.relative_to(self.root).parts)

    # -- the walk ----------------------------------------------------------------------------

    def locate(
        self,
        path: str,
        *,
        create_dirs: bool = False,
        guard: Callable[[tuple[str, ...]], None] | None = None,
    ) -> Location:
        """Walk `path` from the root without following any symlink blindly; the caller closes it.

        Symlinks inside the workspace are followed (their targets walked the same way); one that
        leads out, `..` above the root, or a loop raise WorkspaceError. A missing final entry is
        fine (`Location.name` names it); a missing directory on the way raises FileNotFoundError,
        or is created when `create_dirs` (after `guard(parts)` accepted its path).
        """
        self._check_text(path)
        pending: deque[str] = deque(path.split("/"))
        names: list[str] = []
        fds: list[int] = [os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        links = 0
        try:
            while pending:
                part = pending.popleft()
                if part in ("", "."):
                    continue
                if part == "..":
                    if not names:
                        raise WorkspaceError(f"Path {path!r} leads outside the workspace through a symlink.")
                    names.pop()
                    os.close(fds.pop())
                    continue
                here = fds[-1]
                last = not any(rest not in ("", ".") for rest in pending)
                part = _shown_name(part, here)
                try:
                    fd = os.open(part, DIR_FLAGS, dir_fd=here)
                except FileNotFoundError:
                    if last:
                        return Location(os.dup(here), part, (*names, part))
                    if not create_dirs:
                        raise FileNotFoundError(
                            errno.ENOENT, "No such directory", "/".join((*names, part))
                        ) from None
                    if guard is not None:
                        guard((*names, part))
                    try:
                        os.mkdir(part, 0o777, dir_fd=here)
                    except FileExistsError:
                        pass
                    pending.appendleft(part)
                    continue
                except OSError as error:
                    if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    target = _readlink(part, here)
                    if target is None:
                        if last:
                            return Location(os.dup(here), part, (*names, part))
                        raise NotADirectoryError(
                            errno.ENOTDIR, "Not a directory", "/".join((*names, part))
                        ) from None
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise WorkspaceError(f"Path {path!r} has too many levels of symlinks.") from None
                    if os.path.isabs(target):
                        inside = self._inside(target)
                        if inside is None:
                            raise WorkspaceError(
                                f"Path {path!r} leads outside the workspace through a symlink."
                            ) from None
                        while len(fds) > 1:
                            os.close(fds.pop())
                        names.clear()
                        pending.extendleft(reversed(inside))
                    else:
                        pending.extendleft(reversed(target.split("/")))
                    continue
                names.append(part)
                fds.append(fd)
            return Location(os.dup(fds[-1]), None, tuple(names))
        except ValueError as error:  # e.g. an embedded NUL in a symlink target
            raise WorkspaceError(fold_lines(f"Path {path!r} cannot be resolved: {error}")) from error
        finally:
            for fd in fds:
                os.close(fd)

    def resolve(self, path: str) -> Path:
        """The real location of a workspace-relative `path`; raises WorkspaceError if it leaves the root.

        Refused: empty paths, NUL bytes, absolute paths, `..` that climbs above the root and
        symlinks (at any component, dangling or not) whose target lies outside the root. Missing
        directories on the way are taken as written.
        """
        self._check_text(path)
        parts = [part for part in path.split("/") if part not in ("", ".")]
        # Walk the longest prefix that exists, then add the rest as written.
        for cut in range(len(parts), -1, -1):
            prefix = "/".join(parts[:cut]) or "."
            try:
                with self.locate(prefix) as location:
                    names = list(location.parts)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as error:
                raise WorkspaceError(fold_lines(f"Path {path!r} cannot be resolved: {error}")) from error
            for part in parts[cut:]:
                if part == "..":
                    if not names:
                        raise WorkspaceError(f"Path {path!r} is outside the workspace.")
                    names.pop()
                else:
                    names.append(part)
            return self.root.joinpath(*names)
        raise WorkspaceError(f"Path {path!r} cannot be resolved.")

    def relative(self, path: Path) -> str:
        """`path` as a POSIX path relative to the root ("." for the root itself)."""
        absolute = path if path.is_absolute() else self.root / path
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError as exc:
            raise WorkspaceError(f"Path {str(path)!r} is outside the workspace.") from exc
