"""glob: list workspace paths matching a pattern, walked through descriptors under a time budget.

The walk runs in a daemon thread: a cancelled call returns at once (the thread sees the stop flag at
its next entry), and a walk that outlives its budget ends with a clear error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from core.text import plural
from core.tools.base import ToolError, ToolOutput, not_relative, require_str
from core.tools.globmatch import GlobPattern, has_magic
from core.tools.text import NAME_ESCAPE_NOTE, display_name
from core.tools.workspace import DIR_FLAGS, Workspace

GLOB_MAX_RESULTS = 500
GLOB_MAX_PATTERN_CHARS = 1_000
GLOB_SKIPPED_DIRS = frozenset(
    {".git", ".venv", ".transcripts", ".task_outputs", ".ctxtui", "__pycache__", "node_modules"}
)

T = TypeVar("T")


class _Stopped(Exception):
    """The walk ran out of time, or its caller went away."""


@dataclass
class _Frame:
    fd: int
    prefix: tuple[str, ...]
    states: frozenset[int]
    entries: Iterator[tuple[str, bool]]


async def run_in_daemon_thread(work: Callable[[], T], stop: threading.Event) -> T:
    """`work()` in a daemon thread; a cancel sets `stop` and returns without waiting for the thread."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        result: T | None = None
        failure: BaseException | None = None
        try:
            result = work()
        except BaseException as error:
            failure = error
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
            loop.call_soon_threadsafe(deliver, result, failure)

    threading.Thread(target=target, name="ctxtui-glob", daemon=True).start()
    try:
        return await future
    finally:
        stop.set()


class GlobTool:
    """Lists matches sorted, directories with a trailing "/", at most GLOB_MAX_RESULTS of them."""

    name = "glob"
    needs_permission = False

    def __init__(self, workspace: Workspace, *, time_budget: float) -> None:
        self.workspace = workspace
        self.time_budget = time_budget

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "List files and directories in the workspace whose path matches a glob pattern "
                "relative to the workspace root, e.g. `**/*.py`, `src/*.ts` or `*`. `*`, `?` and "
                "`[abc]` match within one path segment; `**` matches any number of directories. "
                "Returns sorted relative paths, directories ending in `/`, at most "
                f"{GLOB_MAX_RESULTS}. Skips {', '.join(sorted(GLOB_SKIPPED_DIRS))}. Gives up with an "
                f"error after {self.time_budget:g} seconds; start the pattern with a literal "
                "directory to search less."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Glob pattern relative to the workspace root.",
                    },
                },
                "required": ["pattern"],
            },
        }

    async def preview(self, tool_input: dict[str, Any]) -> str:
        return ""

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        pattern = require_str(tool_input, "pattern")
        if problem := not_relative(pattern, "pattern"):
            raise ToolError(problem)
        if len(pattern) > GLOB_MAX_PATTERN_CHARS:
            raise ToolError(
                f"Pattern is {len(pattern):,} chars long; at most {GLOB_MAX_PATTERN_CHARS:,} are allowed."
            )
        segments = [segment for segment in pattern.split("/") if segment not in ("", ".")]
        if ".." in segments:
            raise ToolError(f"Pattern {pattern!r} contains '..'; glob only searches inside the workspace.")
        if not segments:
            raise ToolError(f"Pattern {pattern!r} matches nothing; try '*' or '**/*'.")

        # Walk only below the literal directory prefix of the pattern.
        literal: list[str] = []
        for segment in segments[:-1]:
            if has_magic(segment) or segment == "**":
                break
            literal.append(segment)
        stop = threading.Event()
        deadline = time.monotonic() + self.time_budget
        found = await run_in_daemon_thread(
            lambda: self._walk("/".join(literal), segments[len(literal) :], deadline, stop), stop
        )
        if found is None:
            return ToolOutput(f"No files match {pattern}")
        matches, escaped = found
        if not matches:
            return ToolOutput(f"No files match {pattern}")
        matches.sort()
        shown = matches[:GLOB_MAX_RESULTS]
        text = "\n".join(shown)
        if len(matches) > len(shown):
            text += (
                f"\n[... {plural(len(matches) - len(shown), 'more match', 'more matches')} not shown ({len(matches)} in total); "
                "use a more specific pattern]"
            )
        if escaped:
            text += "\n" + NAME_ESCAPE_NOTE
        return ToolOutput(text)

    def _walk(
        self, base: str, segments: list[str], deadline: float, stop: threading.Event
    ) -> tuple[list[str], bool] | None:
        """(matches, whether any name was escaped); None when `base` is no directory. Directories
        are entered by descriptor with O_NOFOLLOW, never by name. Raises ToolError when the time
        budget runs out, _Stopped when the caller went away."""
        try:
            location = self.workspace.locate(base or ".")
        except (FileNotFoundError, NotADirectoryError):
            return None
        if location.name is not None:  # the literal prefix names a file, or nothing
            location.close()
            return None
        pattern = GlobPattern(segments)
        matches: list[str] = []
        escaped = False
        scanned = 0
        frames = [_Frame(location.dir_fd, location.parts, pattern.start(), _entries(location.dir_fd))]
        location.dir_fd = -1  # the frame owns it now
        try:
            while frames:
                frame = frames[-1]
                entry = next(frame.entries, None)
                if entry is None:
                    os.close(frames.pop().fd)
                    continue
                scanned += 1
                if stop.is_set():
                    raise _Stopped
                if time.monotonic() > deadline:
                    raise ToolError(
                        f"glob gave up after its {self.time_budget:g}s time budget, having looked at "
                        f"{scanned:,} entries; use a more specific pattern or start it with a literal "
                        "directory (e.g. src/**/*.py)."
                    )
                name, is_dir = entry
                if is_dir and name in GLOB_SKIPPED_DIRS:
                    continue
                states = pattern.step(frame.states, name)
                if not states:
                    continue
                path = (*frame.prefix, name)
                if pattern.accepts(states):
                    shown = []
                    for part in path:
                        text, changed = display_name(part)
                        shown.append(text)
                        escaped = escaped or changed
                    matches.append("/".join(shown) + ("/" if is_dir else ""))
                if is_dir and pattern.alive(states):
                    try:
                        child = os.open(name, DIR_FLAGS, dir_fd=frame.fd)
                    except OSError:  # gone, swapped for a symlink, unreadable, or out of descriptors
                        continue
                    frames.append(_Frame(child, path, states, _entries(child)))
        finally:
            for frame in frames:
                os.close(frame.fd)
        return matches, escaped


def _entries(fd: int) -> Iterator[tuple[str, bool]]:
    """(name, is a real directory) for each entry of the open directory `fd`; symlinks are not dirs."""
    try:
        with os.scandir(fd) as listing:
            for entry in listing:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                yield entry.name, is_dir
    except OSError:
        return
