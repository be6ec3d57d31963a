"""write_file: create or replace a whole file, atomically, inside the workspace (asks first)."""

from __future__ import annotations

import asyncio
from typing import Any

from core.tools.base import ToolOutput, require_str
from core.tools.diff import bounded_diff
from core.tools.fileio import (
    existing_mode,
    locate_for_write,
    read_existing,
    refuse_protected_path,
    replace_atomic,
)
from core.tools.text import binary_kind, decode_text, describe_binary
from core.tools.workspace import Workspace


class WriteFileTool:
    """Writes `content` as UTF-8; never into ctxtui's own state or git's config and hooks."""

    name = "write_file"
    needs_permission = True

    def __init__(self, workspace: Workspace, *, byte_limit: int) -> None:
        self.workspace = workspace
        self.byte_limit = byte_limit  # how much of the current file a preview reads

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "Create a file in the workspace, or replace an existing file's whole content, with "
                "exactly `content` (written as UTF-8, atomically). Missing parent directories are "
                "created. The user approves each write. Files under .ctxtui/, .task_outputs/, "
                ".transcripts/, .git/config and .git/hooks/ cannot be written. For changes to part "
                "of an existing file, use edit_file instead."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "content": {"type": "string", "description": "The complete new file content."},
                },
                "required": ["path", "content"],
            },
        }

    async def preview(self, tool_input: dict[str, Any]) -> str:
        path = require_str(tool_input, "path")
        content = require_str(tool_input, "content")
        refuse_protected_path(path)
        current = await asyncio.to_thread(read_existing, self.workspace, path, self.byte_limit)
        if current is None:  # where it would land, symlinks on the way resolved (a link to .git is .git)
            landing = await asyncio.to_thread(self.workspace.resolve, path)
            refuse_protected_path(self.workspace.relative(landing))
            return bounded_diff(None, content, path)
        refuse_protected_path(current.shown)
        kind = binary_kind(current.data)
        if kind is not None:
            return (
                f"{current.shown} is a {describe_binary(len(current.data), kind)}; "
                f"it would be replaced by {len(content):,} chars of text."
            )
        return bounded_diff(decode_text(current.data).text, content, current.shown)

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        path = require_str(tool_input, "path")
        content = require_str(tool_input, "content")
        data = content.encode("utf-8", errors="replace")
        shown = await asyncio.to_thread(self._write, path, data)
        return ToolOutput(f"Wrote {len(content)} chars to {shown}")

    def _write(self, path: str, data: bytes) -> str:
        with locate_for_write(self.workspace, path, create_dirs=True) as location:
            replace_atomic(location, data, existing_mode(location))
            return location.shown
