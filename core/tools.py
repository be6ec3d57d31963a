"""The agent's tools (bash, file access confined to the workspace, glob, compact) and their schemas.

`ToolBox.run` turns every tool-level problem into an error `ToolOutput` the model can read;
only cancellation propagates, and a cancelled bash command takes its whole process group with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import signal
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiofiles
import aiofiles.os

COMPACT_TOOL_OUTPUT = "Compaction requested after this tool batch."

PERMISSION_DENIED = "Permission denied: the user did not allow this bash command."
"""What the model reads when the user refused a bash command (the agent answers it; see core/agent.py)."""

GLOB_MAX_RESULTS = 500
GLOB_SKIPPED_DIRS = frozenset(
    {".git", ".venv", ".transcripts", ".task_outputs", ".ctxtui", "__pycache__", "node_modules"}
)

# After the shell exits, how long to keep reading output that background children still write.
_DRAIN_GRACE_SECONDS = 0.5
_OUTPUT_POLL_SECONDS = 0.1
_READ_CHUNK_BYTES = 64 * 1024
_UTF8_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns to the model: text, and whether it describes a failure."""

    content: str
    is_error: bool = False


class WorkspaceError(Exception):
    """A path that is not allowed: it escapes the workspace or is malformed (one-line message)."""


class _ToolError(Exception):
    """A tool-level failure reported to the model as an error result."""


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


def _not_relative(text: str, noun: str) -> str | None:
    """Why `text` cannot name something inside the workspace (empty, NUL byte, absolute), or None."""
    if not text.strip():
        return f"{noun.capitalize()} is empty."
    if "\x00" in text:
        return f"{noun.capitalize()} {text!r} contains a NUL byte."
    if os.path.isabs(text):
        return f"Absolute {noun} {text!r} is not allowed; use a {noun} relative to the workspace root."
    return None


class Workspace:
    """The directory the file tools are confined to."""

    def __init__(self, root: Path) -> None:
        self.root: Path = Path(root).resolve()

    def resolve(self, path: str) -> Path:
        """The real location of a workspace-relative `path`; raises WorkspaceError if it leaves the root.

        Refused: empty paths, NUL bytes, absolute paths, `..` that climbs above the root and
        symlinks (at any component, dangling or not) whose target lies outside the root.
        """
        if not isinstance(path, str):
            raise WorkspaceError("Path must be a string.")
        if problem := _not_relative(path, "path"):
            raise WorkspaceError(problem)
        depth = 0
        for part in path.split("/"):
            if part in ("", "."):
                continue
            depth = depth - 1 if part == ".." else depth + 1
            if depth < 0:
                raise WorkspaceError(f"Path {path!r} is outside the workspace.")
        try:
            real = Path(os.path.realpath(self.root / path))
        except (OSError, RuntimeError, ValueError) as exc:
            raise WorkspaceError(_one_line(f"Path {path!r} cannot be resolved: {exc}")) from exc
        if not real.is_relative_to(self.root):
            raise WorkspaceError(f"Path {path!r} leads outside the workspace through a symlink.")
        return real

    def relative(self, path: Path) -> str:
        """`path` as a POSIX path relative to the root ("." for the root itself)."""
        absolute = path if path.is_absolute() else self.root / path
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError as exc:
            raise WorkspaceError(f"Path {str(path)!r} is outside the workspace.") from exc


# ---------------------------------------------------------------------------------------------
# Input validation


def _require_str(tool_input: dict[str, Any], key: str, *, allow_empty: bool = True) -> str:
    value = tool_input.get(key)
    if value is None:
        raise _ToolError(f"Missing required input field {key!r}.")
    if not isinstance(value, str):
        raise _ToolError(f"Input field {key!r} must be a string, got {type(value).__name__}.")
    if not allow_empty and value == "":
        raise _ToolError(f"Input field {key!r} must not be empty.")
    return value


def _optional_str(tool_input: dict[str, Any], key: str) -> str | None:
    value = tool_input.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _ToolError(f"Input field {key!r} must be a string, got {type(value).__name__}.")


def _optional_positive_int(tool_input: dict[str, Any], key: str) -> int | None:
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _ToolError(f"Input field {key!r} must be a positive integer, got {value!r}.")
    return value


def _optional_positive_number(tool_input: dict[str, Any], key: str) -> float | None:
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise _ToolError(f"Input field {key!r} must be a positive number of seconds, got {value!r}.")
    return float(value)


# ---------------------------------------------------------------------------------------------
# Output shaping


def _utf8_char_count(data: bytes | bytearray) -> int:
    """Characters in UTF-8 `data` (every byte that does not continue a multi-byte sequence)."""
    return len(bytes(data).translate(None, _UTF8_CONTINUATION_BYTES))


def _clip_middle(text: str, limit: int) -> str:
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


class _BoundedOutput:
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
            return _clip_middle(
                bytes(self._head + self._tail).decode("utf-8", errors="replace"), self._char_limit
            )
        tail = bytes(self._tail).lstrip(_UTF8_CONTINUATION_BYTES)  # the rest of a char cut in two
        head_text = self._head.decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        head_keep = self._char_limit // 2
        tail_keep = self._char_limit - head_keep
        omitted = len(head_text) - head_keep + self._dropped_chars + len(tail_text) - tail_keep
        return _join_clipped(head_text[:head_keep], omitted, tail_text[len(tail_text) - tail_keep :])


class _Spill:
    """The whole output of a command too long for the context, streamed to a file in the archive.

    Nothing the command printed is lost: the tool result keeps head and tail and names this file.
    Written under a temporary name and renamed into place when the command ends.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.final = folder / f"bash-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(4)}.txt"
        self._temp = folder / f".{self.final.name}.tmp"
        self._handle: Any = None
        self.failed: str | None = None

    async def write(self, data: bytes) -> None:
        if self.failed is not None or not data:
            return
        try:
            if self._handle is None:
                await aiofiles.os.makedirs(self.folder, exist_ok=True)
                self._handle = await aiofiles.open(self._temp, "xb")
            await self._handle.write(data)
        except OSError as error:
            self.failed = " ".join(str(error).split())
            await self._discard()

    async def finish(self) -> Path | None:
        """Close and move into place; the final path, or None when nothing could be saved."""
        if self._handle is None or self.failed is not None:
            return None
        try:
            await self._handle.close()
            self._handle = None
            await aiofiles.os.rename(self._temp, self.final)
        except OSError as error:
            self.failed = " ".join(str(error).split())
            await self._discard()
            return None
        return self.final

    async def _discard(self) -> None:
        handle, self._handle = self._handle, None
        with contextlib.suppress(OSError):
            if handle is not None:
                await handle.close()
            await aiofiles.os.remove(self._temp)


def _split_lines(text: str) -> list[str]:
    """Lines with their "\\n" kept; only "\\n" separates lines (as for sed and wc)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# ---------------------------------------------------------------------------------------------
# Glob matching


def _segment_regex(segment: str) -> str:
    """Regex for one glob path segment: `*`, `?` and `[...]` never match "/"."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = i + 1
            if end < len(segment) and segment[end] in "!^":
                end += 1
            if end < len(segment) and segment[end] == "]":
                end += 1
            while end < len(segment) and segment[end] != "]":
                end += 1
            if end >= len(segment):
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\").replace("^", "\\^")
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _glob_regex(segments: list[str]) -> re.Pattern[str]:
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".+" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


def _has_magic(segment: str) -> bool:
    return any(char in segment for char in "*?[")


# ---------------------------------------------------------------------------------------------
# The toolbox


ToolHandler = Callable[[dict[str, Any]], Awaitable[ToolOutput]]


class ToolBox:
    """Runs the agent's tools inside one workspace and describes them to the model."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        bash_timeout: float = 120.0,
        output_limit: int = 200_000,
        read_line_limit: int = 2_000,
        read_byte_limit: int = 5_000_000,
        spill_dir: Path | None = None,
    ) -> None:
        self.workspace = workspace
        self.spill_dir = spill_dir  # where the whole output of over-long commands is kept
        self.bash_timeout = bash_timeout
        self.output_limit = output_limit
        self.read_line_limit = read_line_limit
        self.read_byte_limit = read_byte_limit
        self._shell: str | None = shutil.which("bash")
        self._handlers: dict[str, ToolHandler] = {
            "bash": self._bash,
            "read_file": self._read_file,
            "write_file": self._write_file,
            "edit_file": self._edit_file,
            "glob": self._glob,
            "compact": self._compact,
        }

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """Anthropic tool definitions for every tool (a fresh list each time)."""
        timeout = f"{self.bash_timeout:g}"
        return [
            {
                "name": "bash",
                "description": (
                    "Run a shell command with bash in the workspace root and return its combined "
                    "stdout and stderr, followed by a final line with the exit code. The user must "
                    "approve every command; if a command is denied, do not retry it unchanged. Each "
                    "call starts a fresh non-interactive shell (stdin is empty; `cd` and variables do "
                    f"not persist). Times out after {timeout} seconds unless `timeout` is given; on "
                    "timeout the command and all its child processes are killed and the partial output "
                    f"is returned. Output longer than {self.output_limit} characters keeps only its "
                    "beginning and end here; the whole output is then saved to a file whose path is "
                    "given, to be read with read_file (offset/limit). Background processes that still hold the output open when the "
                    "command ends are stopped; redirect their output to a file to keep them running. "
                    "Prefer read_file, write_file, edit_file and glob for reading and changing files."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The shell command to run."},
                        "timeout": {
                            "type": "number",
                            "description": f"Seconds before the command is killed (default {timeout}).",
                        },
                    },
                    "required": ["command"],
                },
            },
            {
                "name": "read_file",
                "description": (
                    "Read a text file in the workspace (path relative to the workspace root) and return "
                    "its raw text, without line numbers. Returns at most "
                    f"{self.read_line_limit} lines unless `limit` says otherwise, and at most "
                    f"{self.output_limit} characters; when more remains, a final note gives the "
                    "`offset` to continue from. Files larger than "
                    f"{self.read_byte_limit} bytes and directories are refused (use bash with head, "
                    "sed -n or grep, or glob to list a directory). Bytes that are not valid UTF-8 are "
                    "shown as U+FFFD."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "path": {
                            "type": "string",
                            "description": "File path relative to the workspace root.",
                        },
                        "offset": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "1-based number of the first line to return (default 1).",
                        },
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "description": f"How many lines to return (default {self.read_line_limit}).",
                        },
                    },
                    "required": ["path"],
                },
            },
            {
                "name": "write_file",
                "description": (
                    "Create a file in the workspace, or replace an existing file's whole content, with "
                    "exactly `content` (written as UTF-8, atomically). Missing parent directories are "
                    "created. For changes to part of an existing file, use edit_file instead."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "path": {
                            "type": "string",
                            "description": "File path relative to the workspace root.",
                        },
                        "content": {"type": "string", "description": "The complete new file content."},
                    },
                    "required": ["path", "content"],
                },
            },
            {
                "name": "edit_file",
                "description": (
                    "Replace one exact piece of text in a workspace file. `old_text` must match the "
                    "file exactly, including whitespace, indentation and line breaks, and must occur "
                    "exactly once: if it occurs several times, include more surrounding lines so it is "
                    "unique. Read the file first. An empty `new_text` deletes `old_text`. The write is "
                    "atomic."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "path": {
                            "type": "string",
                            "description": "File path relative to the workspace root.",
                        },
                        "old_text": {"type": "string", "description": "The exact text to replace."},
                        "new_text": {"type": "string", "description": "The text to put in its place."},
                    },
                    "required": ["path", "old_text", "new_text"],
                },
            },
            {
                "name": "glob",
                "description": (
                    "List files and directories in the workspace whose path matches a glob pattern "
                    "relative to the workspace root, e.g. `**/*.py`, `src/*.ts` or `*`. `*`, `?` and "
                    "`[abc]` match within one path segment; `**` matches any number of directories. "
                    "Returns sorted relative paths, directories ending in `/`, at most "
                    f"{GLOB_MAX_RESULTS}. Skips {', '.join(sorted(GLOB_SKIPPED_DIRS))}."
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
            },
            {
                "name": "compact",
                "description": (
                    "Compact the conversation context: after the current batch of tool calls finishes, "
                    "older conversation is replaced by a summary to free context space. Use it when "
                    "the context is long and earlier details are no longer needed verbatim. `focus` "
                    "says what the summary must preserve."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "focus": {
                            "type": "string",
                            "description": "Optional: what the summary should concentrate on.",
                        },
                    },
                },
            },
        ]

    def needs_permission(self, name: str, tool_input: dict[str, Any]) -> bool:
        """Whether the user must consent before this call runs (the agent asks, then calls `run`)."""
        return name == "bash"

    async def permission_preview(self, name: str, tool_input: dict[str, Any]) -> str:
        """What the consent dialog shows besides the exact input (nothing yet)."""
        return ""

    async def run(self, name: str, tool_input: dict[str, Any]) -> ToolOutput:
        """Run tool `name`; problems come back as an error ToolOutput, only cancellation raises."""
        handler = self._handlers.get(name) if isinstance(name, str) else None
        if handler is None:
            known = ", ".join(self._handlers)
            return ToolOutput(_one_line(f"Unknown tool {name!r}; available tools: {known}."), is_error=True)
        if not isinstance(tool_input, dict):
            return ToolOutput(f"Tool input for {name} must be a JSON object.", is_error=True)
        try:
            return await handler(tool_input)
        except (_ToolError, WorkspaceError) as exc:
            return ToolOutput(_one_line(str(exc)), is_error=True)
        except OSError as exc:
            return ToolOutput(_one_line(f"{name} failed: {self._describe_os_error(exc)}"), is_error=True)
        except Exception as exc:
            return ToolOutput(_one_line(f"{name} failed: {type(exc).__name__}: {exc}"), is_error=True)

    def _describe_os_error(self, exc: OSError) -> str:
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename is None:
            return reason
        try:
            where = self.workspace.relative(Path(os.fsdecode(exc.filename)))
        except WorkspaceError:
            where = os.fsdecode(exc.filename)
        return f"{reason}: {where}"

    # -- bash ------------------------------------------------------------------------------

    async def _bash(self, tool_input: dict[str, Any]) -> ToolOutput:
        command = _require_str(tool_input, "command")
        if not command.strip():
            raise _ToolError("Input field 'command' must not be empty.")
        timeout = _optional_positive_number(tool_input, "timeout") or self.bash_timeout

        process = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=self.workspace.root,
            start_new_session=True,
            executable=self._shell,
        )
        output = _BoundedOutput(self.output_limit)
        spill = _Spill(self.spill_dir) if self.spill_dir is not None else None
        assert process.stdout is not None
        pump = asyncio.create_task(self._pump(process.stdout, output, spill))
        try:
            timed_out, stopped_background = await self._supervise(process, pump, timeout)
        except BaseException:
            # Cancelled: nothing the command started may outlive the call.
            if process.returncode is None or not pump.done():
                _kill_group(process.pid)
            if spill is not None:
                await asyncio.shield(spill.finish())
            raise
        finally:
            if not pump.done():
                pump.cancel()
                await asyncio.wait({pump})
            if not pump.cancelled() and pump.exception() is not None:
                output.add(b"\n[reading the output failed]\n")

        text = output.text() or "(no output)"
        if not text.endswith("\n"):
            text += "\n"
        if spill is not None:
            saved = await spill.finish()
            if saved is not None:
                text += f"[the full output ({output.total_bytes:,} bytes) is saved at {self.workspace.relative(saved)}]\n"
            elif spill.failed is not None:
                text += f"[the full output could not be saved: {spill.failed}]\n"
        if timed_out:
            return ToolOutput(f"{text}[timed out after {timeout:g}s; the command was killed]", is_error=True)
        if stopped_background:
            text += "[background processes still holding the output were stopped]\n"
        code = process.returncode
        if code is None:
            return ToolOutput(f"{text}[exit code unknown]", is_error=True)
        if code < 0:
            try:
                signal_name = signal.Signals(-code).name
            except ValueError:
                signal_name = f"signal {-code}"
            return ToolOutput(f"{text}[exit code {code}: killed by {signal_name}]", is_error=True)
        return ToolOutput(f"{text}[exit code {code}]", is_error=code != 0)

    @staticmethod
    async def _supervise(
        process: asyncio.subprocess.Process, pump: asyncio.Task[None], time_limit: float
    ) -> tuple[bool, bool]:
        """Wait for the command and its output, killing its process group on timeout or when
        background children keep the output open after the shell exits.

        Returns (timed_out, stopped_background). Process.wait() only returns once the output pipe
        closes, so the exit code and the end of output are watched separately.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + time_limit
        while not pump.done() and process.returncode is None and loop.time() < deadline:
            await asyncio.wait({pump}, timeout=min(_OUTPUT_POLL_SECONDS, deadline - loop.time()))
        if pump.done():
            await _wait_for_exit(process, deadline - loop.time())
        elif process.returncode is not None:
            await asyncio.wait({pump}, timeout=_DRAIN_GRACE_SECONDS)
            if pump.done():
                return False, False
            _kill_group(process.pid)
            await asyncio.wait({pump}, timeout=_DRAIN_GRACE_SECONDS)
            return False, True
        if process.returncode is not None:
            return False, False
        _kill_group(process.pid)
        await asyncio.wait({pump}, timeout=_DRAIN_GRACE_SECONDS)
        if pump.done():
            await _wait_for_exit(process, 2.0)
        return True, False

    async def _pump(self, stream: asyncio.StreamReader, output: _BoundedOutput, spill: _Spill | None) -> None:
        spilling = False
        while chunk := await stream.read(_READ_CHUNK_BYTES):
            if spill is not None and not spilling and output.total_bytes + len(chunk) > self.output_limit:
                # From here the text may be clipped: what came before is still held whole, save it first
                # (before this chunk, which may be large enough to push the head out of the buffer).
                spilling = True
                await spill.write(output.held())
            output.add(chunk)
            if spilling and spill is not None:
                await spill.write(chunk)

    # -- files -----------------------------------------------------------------------------

    async def _stat_regular_file(self, path: Path, shown: str) -> os.stat_result:
        """The stat of `path`, refusing missing files, directories, special files and huge files."""
        try:
            info = await aiofiles.os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            raise _ToolError(f"File not found: {shown}") from None
        if stat.S_ISDIR(info.st_mode):
            raise _ToolError(f"{shown} is a directory, not a file; use glob to list its contents.")
        if not stat.S_ISREG(info.st_mode):
            raise _ToolError(f"{shown} is not a regular file.")
        if info.st_size > self.read_byte_limit:
            raise _ToolError(
                f"{shown} is {info.st_size} bytes, more than the {self.read_byte_limit}-byte limit; "
                "use bash (head, tail, sed -n, grep) to look at parts of it."
            )
        return info

    async def _read_bytes(self, path: Path) -> bytes:
        async with aiofiles.open(path, "rb") as handle:
            data: bytes = await handle.read(self.read_byte_limit + 1)
        if len(data) > self.read_byte_limit:  # it grew after the size check
            raise _ToolError(
                f"{self.workspace.relative(path)} is larger than the {self.read_byte_limit}-byte limit."
            )
        return data

    async def _read_file(self, tool_input: dict[str, Any]) -> ToolOutput:
        raw_path = _require_str(tool_input, "path")
        offset = _optional_positive_int(tool_input, "offset") or 1
        limit = _optional_positive_int(tool_input, "limit") or self.read_line_limit
        path = self.workspace.resolve(raw_path)
        shown = self.workspace.relative(path)
        await self._stat_regular_file(path, shown)
        text = (await self._read_bytes(path)).decode("utf-8", errors="replace")
        lines = _split_lines(text)
        if not lines:
            return ToolOutput("(empty file)")
        if offset > len(lines):
            raise _ToolError(f"offset {offset} is past the end of {shown}, which has {len(lines)} lines.")

        selected: list[str] = []
        used = 0
        clipped_line = False
        for line in lines[offset - 1 : offset - 1 + limit]:
            if used + len(line) > self.output_limit:
                if not selected:  # one line longer than the whole budget: show its beginning
                    selected.append(line[: self.output_limit])
                    clipped_line = True
                break
            selected.append(line)
            used += len(line)

        body = "".join(selected)
        last_shown = offset - 1 + len(selected)
        remaining = len(lines) - last_shown
        notes: list[str] = []
        if clipped_line:
            notes.append(
                f"[line {last_shown} is {len(lines[last_shown - 1])} chars long; only its first "
                f"{self.output_limit} chars are shown]"
            )
        if remaining > 0:
            notes.append(
                f"[... {remaining} more lines not shown ({len(lines)} lines in total); "
                f"call read_file with offset={last_shown + 1} to continue]"
            )
        if notes:
            if not body.endswith("\n"):
                body += "\n"
            body += "\n".join(notes)
        return ToolOutput(body)

    async def _write_atomic(self, path: Path, data: bytes, mode: int | None) -> None:
        """Write `data` to a temporary file beside `path`, then rename it over `path`."""
        temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            async with aiofiles.open(temp, "xb") as handle:
                await handle.write(data)
                await handle.flush()
                await asyncio.to_thread(os.fsync, handle.fileno())
            if mode is not None:
                await asyncio.to_thread(os.chmod, temp, stat.S_IMODE(mode))
            await aiofiles.os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                await aiofiles.os.remove(temp)
            raise

    async def _existing_mode(self, path: Path, shown: str) -> int | None:
        try:
            info = await aiofiles.os.stat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(info.st_mode):
            raise _ToolError(f"{shown} is a directory; give a file path.")
        if not stat.S_ISREG(info.st_mode):
            raise _ToolError(f"{shown} is not a regular file.")
        return info.st_mode

    async def _write_file(self, tool_input: dict[str, Any]) -> ToolOutput:
        raw_path = _require_str(tool_input, "path")
        content = _require_str(tool_input, "content")
        path = self.workspace.resolve(raw_path)
        shown = self.workspace.relative(path)
        if path == self.workspace.root:
            raise _ToolError("The workspace root is a directory; give a file path.")
        mode = await self._existing_mode(path, shown)
        await aiofiles.os.makedirs(path.parent, exist_ok=True)
        # The parent may have been created through nothing but real directories; check again anyway.
        self.workspace.resolve(self.workspace.relative(path.parent))
        await self._write_atomic(path, content.encode("utf-8", errors="replace"), mode)
        return ToolOutput(f"Wrote {len(content)} chars to {shown}")

    async def _edit_file(self, tool_input: dict[str, Any]) -> ToolOutput:
        raw_path = _require_str(tool_input, "path")
        old_text = _require_str(tool_input, "old_text", allow_empty=False)
        new_text = _require_str(tool_input, "new_text")
        path = self.workspace.resolve(raw_path)
        shown = self.workspace.relative(path)
        info = await self._stat_regular_file(path, shown)
        # surrogateescape keeps bytes that are not UTF-8 exactly as they were.
        text = (await self._read_bytes(path)).decode("utf-8", errors="surrogateescape")
        count = text.count(old_text)
        if count == 0:
            hint = ""
            if "\r\n" in text and "\r\n" not in old_text and "\n" in old_text:
                hint = " (the file uses CRLF line endings)"
            raise _ToolError(f"old_text not found in {shown}{hint}")
        if count > 1:
            raise _ToolError(
                f"old_text occurs {count} times in {shown}; include more surrounding context so it "
                "matches exactly once."
            )
        updated = text.replace(old_text, new_text, 1)
        try:
            data = updated.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError:
            raise _ToolError("new_text contains characters that cannot be written as UTF-8.") from None
        await self._write_atomic(path, data, info.st_mode)
        return ToolOutput(f"Edited {shown}: replaced 1 occurrence of old_text.")

    # -- glob ------------------------------------------------------------------------------

    async def _glob(self, tool_input: dict[str, Any]) -> ToolOutput:
        pattern = _require_str(tool_input, "pattern")
        if problem := _not_relative(pattern, "pattern"):
            raise _ToolError(problem)
        segments = [segment for segment in pattern.split("/") if segment not in ("", ".")]
        if ".." in segments:
            raise _ToolError(f"Pattern {pattern!r} contains '..'; glob only searches inside the workspace.")
        if not segments:
            raise _ToolError(f"Pattern {pattern!r} matches nothing; try '*' or '**/*'.")

        # Walk only below the literal directory prefix of the pattern.
        literal: list[str] = []
        for segment in segments[:-1]:
            if _has_magic(segment) or segment == "**":
                break
            literal.append(segment)
        base = self.workspace.resolve("/".join(literal)) if literal else self.workspace.root
        matches = await asyncio.to_thread(self._glob_walk, base, segments)
        if not matches:
            return ToolOutput(f"No files match {pattern}")
        matches.sort()
        shown = matches[:GLOB_MAX_RESULTS]
        text = "\n".join(shown)
        if len(matches) > len(shown):
            text += (
                f"\n[... {len(matches) - len(shown)} more matches not shown ({len(matches)} in total); "
                "use a more specific pattern]"
            )
        return ToolOutput(text)

    def _glob_walk(self, base: Path, segments: list[str]) -> list[str]:
        """Workspace-relative paths (directories with a trailing "/") matching `segments`."""
        regex = _glob_regex(segments)
        max_depth = None if "**" in segments else len(segments)
        root = self.workspace.root
        matches: list[str] = []
        if not base.is_dir():
            return matches
        for directory, dirnames, filenames in os.walk(base):
            rel_dir = Path(directory).relative_to(root).as_posix()
            prefix = "" if rel_dir == "." else rel_dir + "/"
            depth = 0 if not prefix else prefix.count("/")
            dirnames[:] = [name for name in dirnames if name not in GLOB_SKIPPED_DIRS]
            for name in dirnames:
                if regex.fullmatch(prefix + name):
                    matches.append(prefix + name + "/")
            for name in filenames:
                if regex.fullmatch(prefix + name):
                    matches.append(prefix + name)
            if max_depth is not None and depth + 1 >= max_depth:
                dirnames.clear()
        return matches

    # -- compact ---------------------------------------------------------------------------

    async def _compact(self, tool_input: dict[str, Any]) -> ToolOutput:
        _optional_str(tool_input, "focus")
        return ToolOutput(COMPACT_TOOL_OUTPUT)


async def _wait_for_exit(process: asyncio.subprocess.Process, seconds: float) -> None:
    """Wait up to `seconds` for the shell to exit. Only call this once the output pipe has closed:
    Process.wait() waits for the pipes too."""
    if process.returncode is not None:
        return
    waiter = asyncio.ensure_future(process.wait())
    try:
        await asyncio.wait({waiter}, timeout=max(seconds, 0.0))
    finally:
        if not waiter.done():
            waiter.cancel()


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid` (bash runs with start_new_session, so pgid == pid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
