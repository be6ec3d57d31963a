"""What one turn of the agent keeps while it runs, and the small rules of a turn's messages.

`Turn` is the state of one `Agent.run_turn`: the tool batch being answered, the final text and how the
turn ended. The calls of a reply cut at the model's context window are answered, not run, by `not_run`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.agent.tool_run import ToolRun
from core.history.messages import INTERRUPTED, interrupted_result
from core.model.base import ModelResponse

if TYPE_CHECKING:
    from core.agent.conversation import Conversation
    from core.agent.economics import Economics
    from core.events import HistoryChanged

Message = dict[str, Any]

WINDOW_EXCEEDED = (
    "the reply stopped at the model's context window (model_context_window_exceeded): the request left it "
    "no room; compact (ctrl+o) or let the pipeline shorten the context, then ask again"
)
NOT_RUN = "[not run: the reply was cut at the model's context window]"


@dataclass
class Turn:
    """What one turn has done so far: the batch being answered, the final text, how it ended."""

    request: str
    batch: list[Message] = field(default_factory=list)  # tool_use blocks of the reply being answered
    answered: list[Message] = field(default_factory=list)  # their tool_results so far
    waiting: asyncio.Future[str] | None = None  # an unanswered PermissionRequested.reply
    running: ToolRun | None = None  # the tool call running now (a cancel keeps what it printed)
    response: ModelResponse | None = None
    final_text: str = ""
    error: str | None = None
    error_kind: str = "error"
    finished: bool = False
    ended: bool = False

    def all_answered(self) -> list[Message]:
        """The batch's results after a cancel: those it has, then `[interrupted]` for each call left
        unanswered (with what it printed, for the one that was running)."""
        done = {result.get("tool_use_id") for result in self.answered}
        return [*self.answered] + [
            interrupted_result(str(block.get("id")), self._interrupted_text(str(block.get("id"))))
            for block in self.batch
            if block.get("id") not in done
        ]

    def _interrupted_text(self, tool_use_id: str) -> str:
        running = self.running
        return running.interrupted_text() if running and running.tool_use_id == tool_use_id else INTERRUPTED

    def fail(self, message: str, kind: str) -> None:
        self.error, self.error_kind = message, kind

    def end(self, conversation: Conversation, economics: Economics) -> HistoryChanged | None:
        """End the turn: a waiting consent is denied, an open call abandoned, the calls of the batch
        not answered yet get an interrupted result, and a turn that did not finish is recorded as
        cancelled. Returns the repair, if one was needed."""
        self.ended = True
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result("deny")
        economics.abandon("cancelled")
        repaired = None
        if self.batch:
            repaired = conversation.append({"role": "user", "content": self.all_answered()}, "interrupted")
        if not self.finished:
            conversation.record_cancel()
        return repaired


def not_run(batch: list[Message]) -> list[Message]:
    """Error results for the tool calls of a reply cut at the context window (they are not run)."""
    return [
        {"type": "tool_result", "tool_use_id": block.get("id"), "content": NOT_RUN, "is_error": True}
        for block in batch
    ]


__all__ = ["NOT_RUN", "WINDOW_EXCEEDED", "Turn", "not_run"]
