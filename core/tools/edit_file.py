"""edit_file: replace one exact, unique piece of a text file, keeping its encoding (asks first)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from core.tools.base import ToolError, ToolOutput, require_str
from core.tools.diff import bounded_diff
from core.tools.fileio import (
    existing_mode,
    locate_for_write,
    read_regular,
    refuse_protected_path,
    replace_atomic,
)
from core.tools.text import binary_kind, decode_text, describe_binary
from core.tools.workspace import Workspace, WorkspaceError


@dataclass(frozen=True)
class _Edit:
    shown: str
    before: str
    after: str
    data: bytes
    codec_note: str


class EditFileTool:
    """Edits text files in place; a file that is not UTF-8 is written back in its own encoding."""

    name = "edit_file"
    needs_permission = True

    def __init__(self, workspace: Workspace, *, byte_limit: int) -> None:
        self.workspace = workspace
        self.byte_limit = byte_limit

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "Replace one exact piece of text in a workspace file. `old_text` must match the "
                "file exactly, including whitespace, indentation and line breaks, and must occur "
                "exactly once: if it occurs several times, include more surrounding lines so it is "
                "unique. Read the file first. An empty `new_text` deletes `old_text`. The write is "
                "atomic, keeps the file's encoding, and the user approves each edit. Binary files "
                "and files under .ctxtui/, .task_outputs/, .transcripts/, .git/config and "
                ".git/hooks/ cannot be edited."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "old_text": {"type": "string", "description": "The exact text to replace."},
                    "new_text": {"type": "string", "description": "The text to put in its place."},
                },
                "required": ["path", "old_text", "new_text"],
            },
        }

    def _plan(self, tool_input: dict[str, Any]) -> _Edit:
        """Read the file and compute the edit; refuses (ToolError) whatever the edit cannot do."""
        path = require_str(tool_input, "path")
        old_text = require_str(tool_input, "old_text", allow_empty=False)
        new_text = require_str(tool_input, "new_text")
        refuse_protected_path(path)
        found = read_regular(self.workspace, path, self.byte_limit)
        refuse_protected_path(found.shown)
        kind = binary_kind(found.data)
        if kind is not None:
            raise ToolError(
                f"{found.shown} is a {describe_binary(len(found.data), kind)}; edit_file edits text only."
            )
        decoded = decode_text(found.data)
        text = decoded.text
        count = text.count(old_text)
        if count == 0:
            hint = ""
            if "\r\n" in text and "\r\n" not in old_text and "\n" in old_text:
                hint = " (the file uses CRLF line endings)"
            raise ToolError(f"old_text not found in {found.shown}{hint}")
        if count > 1:
            raise ToolError(
                f"old_text occurs {count} times in {found.shown}; include more surrounding context so it "
                "matches exactly once."
            )
        updated = text.replace(old_text, new_text, 1)
        try:
            data = decoded.encode(updated)
        except UnicodeEncodeError:
            raise ToolError(
                f"new_text contains characters that cannot be written in {found.shown}'s encoding "
                f"({decoded.codec})."
            ) from None
        note = (
            f" (kept the file's {decoded.codec} encoding)" if decoded.codec != "utf-8" or decoded.bom else ""
        )
        return _Edit(found.shown, text, updated, data, note)

    async def preview(self, tool_input: dict[str, Any]) -> str:
        try:
            edit = await asyncio.to_thread(self._plan, tool_input)
        except (ToolError, WorkspaceError) as error:
            return f"(this edit would fail: {error})"
        return bounded_diff(edit.before, edit.after, edit.shown)

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        edit = await asyncio.to_thread(self._apply, tool_input)
        return ToolOutput(f"Edited {edit.shown}: replaced 1 occurrence of old_text{edit.codec_note}.")

    def _apply(self, tool_input: dict[str, Any]) -> _Edit:
        edit = self._plan(tool_input)
        with locate_for_write(self.workspace, edit.shown, create_dirs=False) as location:
            replace_atomic(location, edit.data, existing_mode(location))
        return edit
