"""ToolBox: the registry that describes the tools to the model and runs them by name.

`run` turns every tool-level problem into an error ToolOutput the model can read (only cancellation
propagates) and guarantees the content is valid UTF-8. It never asks for consent: the agent asks
first, using `needs_permission` and `permission_preview`, and only then calls `run`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.text import valid_utf8
from core.tools.base import OutputSink, Tool, ToolError, ToolOutput, fold_lines
from core.tools.bash import BashTool
from core.tools.compact import CompactTool
from core.tools.edit_file import EditFileTool
from core.tools.glob import GlobTool
from core.tools.note import NoteTool
from core.tools.read_file import ReadFileTool
from core.tools.search_context import SearchContextTool, Searcher
from core.tools.workspace import Workspace, WorkspaceError
from core.tools.write_file import WriteFileTool

PERMISSION_DENIED = "Permission denied: the user did not allow this tool call."


class ToolBox:
    """Runs the agent's tools inside one workspace and describes them to the model."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        bash_timeout: float = 120.0,
        max_bash_timeout: float = 600.0,
        output_limit: int = 200_000,
        read_line_limit: int = 2_000,
        read_byte_limit: int = 5_000_000,
        spill_dir: Path | None = None,
        spill_byte_limit: int = 50_000_000,
        glob_time_budget: float = 10.0,
        searcher: Searcher | None = None,
    ) -> None:
        self.workspace = workspace
        self._search = SearchContextTool(searcher)
        tools: list[Tool] = [
            BashTool(
                workspace,
                timeout=bash_timeout,
                max_timeout=max_bash_timeout,
                output_limit=output_limit,
                spill_dir=spill_dir,
                spill_byte_limit=spill_byte_limit,
            ),
            ReadFileTool(
                workspace, line_limit=read_line_limit, char_limit=output_limit, byte_limit=read_byte_limit
            ),
            WriteFileTool(workspace, byte_limit=read_byte_limit),
            EditFileTool(workspace, byte_limit=read_byte_limit),
            GlobTool(workspace, time_budget=glob_time_budget),
            CompactTool(),
            self._search,
            NoteTool(),
        ]
        self._tools: dict[str, Tool] = {tool.name: tool for tool in tools}

    @property
    def searcher(self) -> Searcher | None:
        """What answers search_context (the archive's index, core/recall/; the agent hands it over)."""
        return self._search.searcher

    @searcher.setter
    def searcher(self, searcher: Searcher | None) -> None:
        self._search.searcher = searcher

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """Anthropic tool definitions for every tool (a fresh list each time)."""
        return [tool.schema() for tool in self._tools.values()]

    def needs_permission(self, name: str, tool_input: dict[str, Any]) -> bool:
        """Whether the user must allow this call first (bash, write_file, edit_file)."""
        tool = self._tools.get(name) if isinstance(name, str) else None
        return tool is not None and tool.needs_permission

    async def permission_preview(self, name: str, tool_input: dict[str, Any]) -> str:
        """What the consent dialog shows besides the exact input: for write_file and edit_file a
        bounded unified diff of the file now against what it would become; "" for bash.

        Never raises (except on cancellation): a preview that cannot be made says why in one line.
        """
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None or not isinstance(tool_input, dict):
            return ""
        try:
            return valid_utf8(await tool.preview(tool_input))
        except (ToolError, WorkspaceError) as error:
            return valid_utf8(f"(no preview: {fold_lines(str(error))})")
        except Exception as error:
            return valid_utf8(f"(no preview: {self._describe(name, error)})")

    async def run(
        self, name: str, tool_input: dict[str, Any], on_output: OutputSink | None = None
    ) -> ToolOutput:
        """Run tool `name`; problems come back as an error ToolOutput, only cancellation raises.
        `on_output` gets the output in pieces as it is printed, from a tool that streams it (bash)."""
        output = await self._run(name, tool_input, on_output)
        return ToolOutput(valid_utf8(output.content), output.is_error)

    async def _run(self, name: str, tool_input: dict[str, Any], on_output: OutputSink | None) -> ToolOutput:
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            known = ", ".join(self._tools)
            return ToolOutput(fold_lines(f"Unknown tool {name!r}; available tools: {known}."), is_error=True)
        if not isinstance(tool_input, dict):
            return ToolOutput(f"Tool input for {name} must be a JSON object.", is_error=True)
        try:
            if on_output is not None and getattr(tool, "streams_output", False):
                return await tool.run(tool_input, on_output=on_output)  # type: ignore[call-arg]
            return await tool.run(tool_input)
        except (ToolError, WorkspaceError) as exc:
            return ToolOutput(fold_lines(str(exc)), is_error=True)
        except Exception as exc:
            return ToolOutput(self._describe(name, exc), is_error=True)

    def _describe(self, name: str, exc: Exception) -> str:
        if not isinstance(exc, OSError):
            return fold_lines(f"{name} failed: {type(exc).__name__}: {exc}")
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename is not None:
            filename = os.fsdecode(exc.filename)
            try:
                where = self.workspace.relative(Path(filename)) if os.path.isabs(filename) else filename
            except WorkspaceError:
                where = filename
            reason = f"{reason}: {where}"
        return fold_lines(f"{name} failed: {reason}")
