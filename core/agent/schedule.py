"""When the compaction steps run: before every call ("eager", the seed's rule), or, with the
"cache-aware" timing, not while they would rewrite a warm cached prefix that they do not pay back.

`Schedule.plan` answers, before each call and for each forecast, what the next prepare holds back:
under a server engine only tool_result_budget runs on the client (the server edits the rest); with
the cache-aware timing, while the cache is warm and the next request is under the ceiling, the steps
that would rewrite the cached prefix wait unless they pay back (a `CompactionHeld` says which, and what
they would cost now). The pipeline is dry-run once per state of the history (its version, the pins, the
request and the thresholds): the plan and the forecast that follows it share that run, and the
forecast's held steps are read off it (a held prepare runs tool_result_budget only, the pipeline's
first step).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING, Any

from core.compaction.pipeline import Compactor
from core.events import CompactionHeld, CompactionStep
from core.history.tokens import TokenCounter
from core.model.base import Model
from core.model.counting import estimate_request, model_window

if TYPE_CHECKING:
    from core.agent.economics import Economics
    from core.agent.state import ConversationState

CEILING_SHARE = 0.8  # cache-aware: the default ceiling, as a share of the model's window
FIRST_STEP = "tool_result_budget"  # what a held prepare runs


@dataclass(frozen=True)
class Plan:
    """What the next prepare does: `hold` (only tool_result_budget runs), and `held`, the steps that
    wait for the cache (None when nothing waits for it)."""

    hold: bool
    held: CompactionHeld | None = None
    priced: tuple[CompactionStep, ...] | None = None
    """The whole pipeline's steps, priced, when the plan needed them (a forecast reuses them)."""


class Schedule:
    """Decides when the steps run (see the module docstring)."""

    def __init__(
        self,
        state: ConversationState,
        compactor: Compactor,
        model: Model,
        tokens: TokenCounter,
        *,
        timing: str,
        ceiling_tokens: int = 0,
        server: bool = False,
    ) -> None:
        self.state = state
        self.compactor = compactor
        self.model = model
        self.tokens = tokens
        self.timing = timing
        self.ceiling_setting = ceiling_tokens
        self.server = server
        """A server engine is in force: the client runs tool_result_budget only."""
        self._ceiling: int | None = None
        self._dry: tuple[tuple[Any, ...], list[CompactionStep]] | None = None
        self.dry_runs = 0
        """How many times the pipeline was dry-run (bench/bench_shape.py reads it)."""

    async def steps(self, request: str) -> list[CompactionStep]:
        """What the whole pipeline would do now (unpriced): dry-run once per state of the history."""
        history = self.state.history
        settings = astuple(self.compactor.settings)  # a changed threshold is another plan
        key = (id(history), history.version, len(history), self.state.pinned, request, settings)
        if self._dry is not None and self._dry[0] == key:
            return list(self._dry[1])
        self.dry_runs += 1
        steps = await self.compactor.dry_run(history, request)
        if (history.version, len(history)) == key[1:3]:  # not changed while it ran
            self._dry = (key, steps)
        return list(steps)

    async def plan(self, request: str, system: str, tools: Sequence[Any], economics: Economics) -> Plan:
        """What the next prepare holds back (see the module docstring)."""
        if self.server:
            return Plan(hold=True)
        state = self.state
        now = state.clock()
        if self.timing != "cache-aware" or not state.auto_compact or not state.tracker.warm(now):
            return Plan(hold=False)
        ceiling = await self.ceiling()
        if ceiling is None:
            return Plan(hold=False)
        tokens = await self.next_tokens(system, tools)
        if tokens >= ceiling:
            return Plan(hold=False)
        steps = economics.priced(await self.steps(request))
        frontier = state.tracker.frontier
        breaking = [
            step
            for step in steps
            if step.changed_at is not None
            and frontier is not None
            and step.changed_at < frontier
            and (step.saved > 0 or step.step == "compact_history")
        ]
        if not breaking or economics.pays_back(breaking):
            return Plan(False, None, tuple(steps))
        assert state.tracker.expires_at is not None
        return Plan(
            True, CompactionHeld(tuple(steps), state.tracker.expires_at, tokens, ceiling), tuple(steps)
        )

    async def forecast(
        self, request: str, system: str, tools: Sequence[Any], economics: Economics
    ) -> tuple[list[CompactionStep], CompactionHeld | None]:
        """What the next prepare would run now, each step priced, and what would wait for the cache
        (one dry run, shared with the plan)."""
        plan = await self.plan(request, system, tools, economics)
        if plan.priced is not None:  # priced once: the first step's price is the same alone
            steps = list(plan.priced)
        else:
            steps = economics.priced(await self.steps(request))
        if plan.hold:
            steps = [step for step in steps if step.step == FIRST_STEP]
        return steps, plan.held

    async def ceiling(self) -> int | None:
        """The request size at which waiting steps run anyway: the setting, else 80% of the window."""
        if self.ceiling_setting:
            return self.ceiling_setting
        if self._ceiling is None:
            window = await model_window(self.model)
            self._ceiling = int(window.tokens * CEILING_SHARE) if window.tokens else None
        return self._ceiling

    async def next_tokens(self, system: str, tools: Sequence[Any]) -> int:
        """The next request's size: the tiktoken estimate, scaled by how the last call's estimate
        compared with the API's count of it."""
        estimate = await asyncio.to_thread(estimate_request, self.tokens, system, self.state.history, tools)
        ratio = self.state.tokens_ratio
        return round(estimate * ratio) if ratio else estimate


__all__ = ["CEILING_SHARE", "Plan", "Schedule"]
