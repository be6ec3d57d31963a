"""read_file: a text file's lines, paged by offset/limit; binary files are named, not dumped."""

from __future__ import annotations

import asyncio
from typing import Any

from core.text import plural
from core.tools.base import ToolError, ToolOutput, optional_positive_int, require_str
from core.tools.fileio import read_regular
from core.tools.text import binary_kind, decode_text, describe_binary
from core.tools.workspace import Workspace


def split_lines(text: str) -> list[str]:
    """Lines with their "\\n" kept; only "\\n" separates lines (as for sed and wc)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class ReadFileTool:
    """Reads workspace files as text: at most `line_limit` lines and `char_limit` characters a call."""

    name = "read_file"
    needs_permission = False

    def __init__(self, workspace: Workspace, *, line_limit: int, char_limit: int, byte_limit: int) -> None:
        self.workspace = workspace
        self.line_limit = line_limit
        self.char_limit = char_limit
        self.byte_limit = byte_limit

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "Read a text file in the workspace (path relative to the workspace root) and return "
                "its raw text, without line numbers. Returns at most "
                f"{plural(self.line_limit, 'line')} unless `limit` says otherwise, and at most "
                f"{self.char_limit} characters; when more remains, a final note gives the "
                "`offset` to continue from. Files larger than "
                f"{self.byte_limit} bytes and directories are refused (use bash with head, "
                "sed -n or grep, or glob to list a directory). Binary files are answered with their "
                "size and type only. Text that is not UTF-8 is decoded by its byte order mark "
                "(UTF-16/32) or as cp1252/Latin-1, and a final note says which encoding was used."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "1-based number of the first line to return (default 1).",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": f"How many lines to return (default {self.line_limit}).",
                    },
                },
                "required": ["path"],
            },
        }

    async def preview(self, tool_input: dict[str, Any]) -> str:
        return ""

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        path = require_str(tool_input, "path")
        offset = optional_positive_int(tool_input, "offset") or 1
        limit = optional_positive_int(tool_input, "limit") or self.line_limit
        found = await asyncio.to_thread(read_regular, self.workspace, path, self.byte_limit)
        kind = binary_kind(found.data)
        if kind is not None:
            return ToolOutput(f"{found.shown}: {describe_binary(len(found.data), kind)}; not shown as text.")
        decoded = decode_text(found.data)
        lines = split_lines(decoded.text)
        if not lines:
            return ToolOutput("(empty file)")
        if offset > len(lines):
            raise ToolError(
                f"offset {offset} is past the end of {found.shown}, which has {plural(len(lines), 'line')}."
            )

        selected: list[str] = []
        used = 0
        clipped_line = False
        for line in lines[offset - 1 : offset - 1 + limit]:
            if used + len(line) > self.char_limit:
                if not selected:  # one line longer than the whole budget: show its beginning
                    selected.append(line[: self.char_limit])
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
                f"{self.char_limit} chars are shown]"
            )
        if remaining > 0:
            notes.append(
                f"[... {plural(remaining, 'more line')} not shown ({plural(len(lines), 'line')} in total); "
                f"call read_file with offset={last_shown + 1} to continue]"
            )
        if decoded.note:
            notes.append(f"[{found.shown}: {decoded.note}]")
        if notes:
            if not body.endswith("\n"):
                body += "\n"
            body += "\n".join(notes)
        return ToolOutput(body)
