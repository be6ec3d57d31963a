"""search_context: the model searches everything the session archived (DESIGN.md, "Recall").

Like the compact tool it reaches beyond the workspace: what it searches is the archive's index
(core/recall/), which sits above the tools in the core's stack, so the tool is handed something that
searches (`Searcher`) and only checks the input. The query is plain text, never search syntax; `limit`
is clamped to 1..20. Without a searcher (a toolbox built for a schema alone) the call is refused in
one line.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from core.tools.base import ToolError, ToolOutput, require_str

SEARCH_TOOL = "search_context"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20


class Answer(Protocol):
    """A search's outcome: the text the model reads, and the problem when there was nothing to search."""

    @property
    def problem(self) -> str | None: ...

    def text(self) -> str: ...


class Searcher(Protocol):
    """What searches (the recall index, core/recall/index.py)."""

    async def search(self, query: str, limit: int = DEFAULT_LIMIT) -> Answer: ...


class SearchContextTool:
    """Searches the archive's tool results, transcripts and summaries for text."""

    name = SEARCH_TOOL
    needs_permission = False

    def __init__(self, searcher: Searcher | None = None) -> None:
        self.searcher = searcher

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": (
                "Search everything compaction took out of your context in this session: archived tool "
                "results, earlier messages (transcripts) and summaries. The query is plain text (words, "
                "an identifier, a path, an error line), matched as written, case-insensitively; every "
                "word must appear (if none holds them all, hits holding some are given). Returns the "
                "best hits: the archive path, the line, a snippet, and the read_file call (path, "
                "offset) that reads the full text from there."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "The text to search for."},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                        "description": f"How many hits to return (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).",
                    },
                },
                "required": ["query"],
            },
        }

    async def preview(self, tool_input: dict[str, Any]) -> str:
        return ""

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        query = require_str(tool_input, "query")
        limit = read_limit(tool_input)
        if self.searcher is None:
            raise ToolError("search_context is not available here: this session has no archive index.")
        answer = await self.searcher.search(query, limit)
        return ToolOutput(answer.text(), is_error=answer.problem is not None)


def read_limit(tool_input: dict[str, Any]) -> int:
    """`limit` as a whole number clamped to 1..20 (DEFAULT_LIMIT when absent); not a number: refused."""
    value = tool_input.get("limit")
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ToolError(f"Input field 'limit' must be a whole number from 1 to {MAX_LIMIT}, got {value!r}.")
    return max(1, min(MAX_LIMIT, int(value)))
