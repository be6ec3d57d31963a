"""The agent's tools: one module per tool (schema beside implementation), the workspace confinement,
the shared result type and input checks, the ToolBox registry that runs them by name, and the
system prompt that names them (`prompt`)."""

from __future__ import annotations

from core.tools.base import ToolError, ToolOutput
from core.tools.compact import COMPACT_TOOL_OUTPUT
from core.tools.glob import GLOB_MAX_RESULTS, GLOB_SKIPPED_DIRS
from core.tools.toolbox import PERMISSION_DENIED, ToolBox
from core.tools.workspace import Workspace, WorkspaceError

__all__ = [
    "COMPACT_TOOL_OUTPUT",
    "GLOB_MAX_RESULTS",
    "GLOB_SKIPPED_DIRS",
    "PERMISSION_DENIED",
    "ToolBox",
    "ToolError",
    "ToolOutput",
    "Workspace",
    "WorkspaceError",
]
