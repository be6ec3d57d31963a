"""One tool call run as a task, its output relayed while it runs and kept for a cancel.

A tool that streams its output (bash) hands it over in pieces; `ToolRun.events` yields them as
`ToolOutputDelta`s (pieces that arrive together are joined, so a fast command makes a few events, not
thousands) until the call ends, and keeps the first `limit` characters. When the turn is cancelled
the call is cancelled with it (bash kills what it started), and `interrupted_text` is the tool
result the history gets: `[interrupted]` and what the command printed before the cancel, so Esc on a
long command loses none of its output.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from core.events import ToolOutputDelta
from core.history.messages import interrupted_output
from core.text import plural
from core.tools import ToolBox, ToolOutput

JOIN_SECONDS = 0.05
"""After a piece arrives, how long to wait for more before yielding them as one event."""


class ToolRun:
    """Runs one tool call; see the module docstring."""

    def __init__(
        self, toolbox: ToolBox, tool_use_id: str, name: str, tool_input: dict[str, Any], limit: int
    ) -> None:
        self.toolbox = toolbox
        self.tool_use_id = tool_use_id
        self.name = name
        self.tool_input = tool_input
        self.limit = limit
        self.kept: list[str] = []
        self.kept_chars = 0
        self.dropped_chars = 0
        self.output: ToolOutput | None = None
        self._pieces: asyncio.Queue[str] = asyncio.Queue()

    def _take(self, text: str) -> None:
        room = self.limit - self.kept_chars
        if room > 0:
            self.kept.append(text[:room])
            self.kept_chars += min(len(text), room)
        self.dropped_chars += max(len(text) - max(room, 0), 0)
        self._pieces.put_nowait(text)

    async def events(self) -> AsyncIterator[ToolOutputDelta]:
        """Run the call, yielding its output as it comes; `output` holds the result at the end."""
        task = asyncio.ensure_future(self.toolbox.run(self.name, self.tool_input, on_output=self._take))
        try:
            while not task.done():
                getter = asyncio.ensure_future(self._pieces.get())
                try:
                    await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    getter.cancel()
                if not getter.cancelled() and getter.done():
                    if not task.done():
                        await asyncio.wait({task}, timeout=JOIN_SECONDS)
                    yield ToolOutputDelta(self.tool_use_id, getter.result() + self._drain())
            if rest := self._drain():
                yield ToolOutputDelta(self.tool_use_id, rest)
            self.output = task.result()
        finally:
            if not task.done():  # the turn was cancelled: so is the call (bash kills what it started)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _drain(self) -> str:
        pieces = []
        while not self._pieces.empty():
            pieces.append(self._pieces.get_nowait())
        return "".join(pieces)

    def interrupted_text(self) -> str:
        """The tool result of a call the cancel stopped: `[interrupted]`, then what it printed."""
        text = interrupted_output("".join(self.kept))
        if self.dropped_chars:
            text += f"\n[… {plural(self.dropped_chars, 'more char')} not kept]"
        return text


__all__ = ["JOIN_SECONDS", "ToolRun"]
