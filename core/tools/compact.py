"""compact: asks for the conversation to be summarised after the current tool batch."""

from __future__ import annotations

from typing import Any

from core.tools.base import ToolOutput, optional_str

COMPACT_TOOL_OUTPUT = "Compaction requested after this tool batch."


class CompactTool:
    """Does nothing itself: the agent sees COMPACT_TOOL_OUTPUT and compacts after the batch."""

    name = "compact"
    needs_permission = False

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
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
        }

    async def preview(self, tool_input: dict[str, Any]) -> str:
        return ""

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        optional_str(tool_input, "focus")
        return ToolOutput(COMPACT_TOOL_OUTPUT)
