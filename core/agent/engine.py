"""The engine in force for an agent (the `engine` setting): the client pipeline, or the API's own
clearing or compaction (core/engines/).

With a server engine the client pipeline runs tool_result_budget only (the steps that would rewrite
the history are the server's job), requests carry the engine's edits (the model does that), and
after each reply what the API reports it did becomes `CompactionStep` events ("server:<edit type>"),
ledger entries and marks on the call's timeline sample. Offline there is no server: the client
pipeline runs, and the person is told once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from core.engines.steps import server_steps
from core.events import CompactionStep, Notice
from core.model.base import ModelResponse
from core.model.edits import CLEAR_THINKING, CLEAR_TOOL_USES, ServerEngine

if TYPE_CHECKING:
    from core.agent.state import ConversationState


REPEATED_CLEARING = frozenset(f"server:{edit}" for edit in (CLEAR_TOOL_USES, CLEAR_THINKING))
"""The API clears again, on every later call, what it cleared before: such a step that clears nothing
new (no new ledger entry) is no step (no event, no timeline mark): it was said when it first cleared."""


class EngineRunner:
    """The server engine's side of the turn (inactive for the client engine and offline)."""

    def __init__(self, engine: ServerEngine | None, offline: bool, state: ConversationState) -> None:
        self.engine = None if offline else engine
        self.state = state
        self.notice = (
            Notice(f"engine {engine.kind} needs the API: offline, the client pipeline runs", "warning")
            if engine is not None and offline
            else None
        )
        """Said once at the start of the first turn."""

    @property
    def hold(self) -> bool:
        """The client pipeline runs tool_result_budget only (a server engine is in force)."""
        return self.engine is not None

    def forecast(self) -> str | None:
        """What the API does to the next request on its side, in a line (None for the client engine)."""
        engine = self.engine
        if engine is None:
            return None
        if engine.kind == "server-clear":
            return (
                f"the API clears old tool results (all but the newest {engine.clear_keep_tool_uses}) once a "
                f"request reaches {engine.clear_trigger_tokens:,} input tokens"
            )
        return f"the API compacts the conversation once a request reaches {engine.compact_trigger_tokens:,} input tokens"

    def read(self, response: ModelResponse | None) -> list[CompactionStep]:
        """What the API did to the request just answered (call before its reply joins the history):
        its steps that took something new, their ledger entries added to the agent's ledger (and the
        session log), and the call's timeline sample marked with them."""
        if self.engine is None or response is None:
            return []
        state = self.state
        conversation = state.conversation
        known = {
            entry.tool_use_id or f"thinking:{entry.span[0] if entry.span else ''}"
            for entry in state.ledger.entries
            if entry.step.startswith("server:")
        }
        steps = server_steps(
            self.engine,
            response.context_management,
            response.content,
            conversation.history,
            conversation.chars,
            conversation.session_file(),
            known,
            response.iterations,
        )
        steps = [step for step in steps if step.ledger or step.step not in REPEATED_CLEARING]
        if not steps:
            return []
        call = len(state.timeline.samples)
        stamped = [replace(step, ledger=state.ledger.stamp(step.ledger, call)) for step in steps]
        entries = [entry for step in stamped for entry in step.ledger]
        if entries:
            change = state.ledger.adding(entries)
            conversation.record_ledger(change)
            state.ledger.apply(change)
        timeline = state.timeline
        if timeline.samples:
            sample = timeline.samples[-1]
            timeline.amend(
                replace(
                    sample,
                    steps=(*sample.steps, *(step.step for step in stamped)),
                    saved=(*sample.saved, *(step.saved for step in stamped)),
                )
            )
        return stamped
