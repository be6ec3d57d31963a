"""The agent's prices: every call sampled and priced, why it missed, what each change cost the cache.

`Economics` prices; the `Timeline` (one sample per model call, summary calls included) and the
`CacheTracker` (what the last answered request left cached, until when, and the changes since) are
the conversation state's (core/agent/state.py), which it writes. The agent hands it what happens, in
order: the history size before compaction (`before`), each event of a compaction (`note`: a step is
priced and followed, a summary call's usage becomes a sample), each other change of the history
(`track`: a steering action, a rewritten request), the request going out (`start`) and its end
(`finish`). When compaction runs is not decided here: that is the schedule's (core/agent/schedule.py),
which asks `priced` and `pays_back`. Nothing here talks to a UI: every figure leaves in an event the
agent yields.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from core.events import (
    AgentEvent,
    CompactionHeld,
    CompactionStep,
    ContextMeasured,
    ContextSampled,
    HistoryChanged,
    Notice,
)
from core.model.base import Model, ModelResponse, SummaryUsage
from core.model.counting import estimate_request
from core.usage.cache import CacheTracker, break_even_calls
from core.usage.figures import unknown_figures
from core.usage.fingerprint import Fingerprinter, Position, PrefixPrint, message_digests, prefix_change
from core.usage.payback import expected_calls, multipliers, pays_back
from core.usage.prices import Usage
from core.usage.timeline import Timeline
from core.values.miss import PrefixChange, agrees
from core.values.samples import ContextSample

if TYPE_CHECKING:
    from core.agent.state import ConversationState
    from core.config import Settings
    from core.history.tokens import TokenCounter

Message = dict[str, Any]
COMPACTION_REASONS = ("prepare", "compact_history", "reactive_compact")


def api_reason(response: ModelResponse) -> str | None:
    """The API's diagnosis of a call: its cache_miss_reason's type, "none" when it compared and found
    no divergence, None when it said nothing (not asked, or still pending)."""
    if response.diagnostics is None:
        return "none" if response.asked else None
    reason = response.diagnostics.get("cache_miss_reason")
    return str(reason.get("type")) if isinstance(reason, dict) and reason.get("type") else None


class Economics:
    """Prices what happens to the conversation's context (see the module docstring); the timeline and
    the cache's accounts it keeps are the state's."""

    def __init__(
        self, state: ConversationState, model: Model, settings: Settings, tokens: TokenCounter
    ) -> None:
        self.state = state
        self.model = model
        self.timing = settings.compaction_timing
        self.ttl = settings.cache_ttl
        self.tokens = tokens
        self.price = state.price
        self._prints = Fingerprinter()
        self._pending: tuple[PrefixPrint, float, ContextSample] | None = None
        self._held: tuple[str, ...] = ()
        self._estimate: int | None = None  # the tiktoken estimate of the request going out

    @property
    def timeline(self) -> Timeline:
        return self.state.timeline

    @property
    def tracker(self) -> CacheTracker:
        return self.state.tracker

    def clock(self) -> float:
        return self.state.clock()

    @property
    def online(self) -> bool:
        return not self.model.offline

    def reset(self) -> None:
        """A new session (the state has reset its accounts): nothing pending."""
        self._pending, self._held = None, ()

    # --- changes between two calls -------------------------------------------------------------------

    def before(self, chars: int) -> None:
        """The history size before a compaction (only the first since the last call counts)."""
        self.timeline.note_before(chars)

    def note(self, event: AgentEvent | SummaryUsage, by: str | None = None) -> AgentEvent:
        """An event of a compaction: a step is priced (`by` names what ran it, else the step) and
        followed; a summary call's usage becomes its sample (a ContextSampled)."""
        if isinstance(event, SummaryUsage):
            sample = self.timeline.summary(event.usage, event.chars, self.clock())
            return ContextSampled(sample, self.timeline.session_cost)
        if isinstance(event, CompactionStep):
            self.timeline.note_step(event.step, event.saved)
            if not self.online:
                return event  # no cache offline: nothing to price or follow
            priced = self.priced_step(event, self.tracker)
            self.tracker.change(event.changed_at, by or event.step)
            return priced
        return event

    def priced_step(self, step: CompactionStep, tracker: CacheTracker) -> CompactionStep:
        """`step` with its cost to the cache, given the changes `tracker` has followed."""
        if not self.online:
            return step
        invalidated, break_even = tracker.cost(step.changed_at, step.saved, self.price, self.clock())
        ratio = tracker.tokens_per_char()
        saved = round(step.saved * ratio) if ratio is not None else None
        return replace(
            step, cache_invalidated_tokens=invalidated, break_even_calls=break_even, saved_tokens=saved
        )

    def priced(self, steps: Sequence[CompactionStep]) -> list[CompactionStep]:
        """Steps that have not happened (a preview), priced in order as if they did."""
        if not self.online or self.tracker.base is None:
            return list(steps)  # nothing known of a cache: nothing to price
        tracker = self.tracker.copy()
        priced = []
        for step in steps:
            priced.append(self.priced_step(step, tracker))
            tracker.change(step.changed_at, step.step)
        return priced

    def track(
        self,
        changed: HistoryChanged | None,
        history: Sequence[Message],
        by: str | None,
        before_chars: int | None = None,
    ) -> HistoryChanged | None:
        """A change of the history outside the pipeline (a steering action `by`, or None: the user's
        turn rewrote its request): followed, and priced when `before_chars` is given."""
        if changed is None or not changed.changes or not self.online:
            return changed
        position = self._position(changed, history)
        if before_chars is not None and self.online:
            invalidated, break_even = self.tracker.cost(
                position, before_chars - changed.chars, self.price, self.clock()
            )
            changed = replace(changed, cache_invalidated_tokens=invalidated, break_even_calls=break_even)
        self.tracker.change(position, by)
        return changed

    def _position(self, changed: HistoryChanged, history: Sequence[Message]) -> Position | None:
        """The first block a change touched: its first splice's message, and there the first block
        that differs from what the last request sent."""
        start = min(change.start for change in changed.changes)
        base = self.tracker.base
        if base is None or start >= len(history) or start >= base.messages:
            return (start, 0)
        return base.first_new_block(start, message_digests(history[start]))

    def pins_changed(
        self, notice: Notice, before: Sequence[CompactionStep], after: Sequence[CompactionStep]
    ) -> Notice:
        """A pin or unpin's `notice`, with how many more cached tokens the next call's compaction would
        invalidate because of it (`before` and `after` its steps; fewer for a pin: negative) and the
        break-even."""
        if not self.online or self.tracker.base is None:
            return notice
        old, new = self._pending_cost(before), self._pending_cost(after)
        invalidated = new[0] - old[0]
        ratio = self.tracker.tokens_per_char() or 0.0
        calls = break_even_calls(max(invalidated, 0), (new[1] - old[1]) * ratio, self.price, self.ttl)
        return replace(notice, cache_invalidated_tokens=invalidated, break_even_calls=calls)

    def _pending_cost(self, steps: Sequence[CompactionStep]) -> tuple[int, int]:
        """(cached tokens the steps would invalidate, chars they would save), priced in order."""
        priced = self.priced(steps)
        return sum(step.cache_invalidated_tokens or 0 for step in priced), sum(step.saved for step in priced)

    def hold(self, held: CompactionHeld | None) -> None:
        """The steps that wait before the next call (its sample names them)."""
        self._held = tuple(dict.fromkeys(step.step for step in held.steps)) if held is not None else ()

    def pays_back(self, steps: Sequence[CompactionStep]) -> bool:
        """The lossless steps that would rewrite the warm prefix save enough, within the calls the
        session is likely to make, to pay for writing it again (core/usage/payback.py); a summary's
        saving is not counted: it waits for the ceiling unless the steps before it pay."""
        lossless = [step for step in steps if step.step != "compact_history" and step.saved > 0]
        invalidated = max((step.cache_invalidated_tokens or 0 for step in lossless), default=0)
        saved = sum(step.saved_tokens or 0 for step in lossless)
        write, read = multipliers(self.price, self.ttl)
        return pays_back(invalidated, saved, expected_calls(self.state.model_calls), write, read)

    # --- a call ------------------------------------------------------------------------------------

    async def start(
        self, measured: ContextMeasured, system: str, tools: Sequence[Any], messages: Sequence[Message]
    ) -> None:
        """A request goes out now: its sample, and (online) its fingerprint and the miss it will have."""
        sample = self.timeline.start(measured.chars, measured.messages, measured.tokens)
        now = self.clock()
        sample = replace(sample, started_at=now, timing=self.timing, held=self._held)
        self._held = ()
        if self.online:
            request = self._prints.print(self.model.name, system, tools, messages)
            miss = self.tracker.miss(request, now)
            base = self.tracker.base
            change = prefix_change(base, request) if miss is not None and base is not None else None
            sample = replace(sample, cache_miss=miss, prefix_change=PrefixChange(*change) if change else None)
            if self.timing == "cache-aware":
                self._estimate = await asyncio.to_thread(
                    estimate_request, self.tokens, system, messages, tools
                )
            self._pending = (request, now, sample)
        self.timeline.amend(sample)

    def finish(self, response: ModelResponse | None, error: str | None = None) -> list[AgentEvent]:
        """The call ended (answered, or failed with `error`): its sample, and a notice when the API's
        diagnosis of the cache disagrees with ctxtui's."""
        pending, self._pending = self._pending, None
        done = self.timeline.finish(None if response is None else response.usage, error)
        events: list[AgentEvent] = []
        if response is None or pending is None:
            done = self.timeline.amend(replace(done, cache_miss=None, prefix_change=None))
            return [ContextSampled(done, self.timeline.session_cost)]
        request, started, _ = pending
        usage = Usage.from_figures(response.usage)
        if unknown := unknown_figures(response.usage):
            events.append(
                Notice(f"the API's usage gave no count for {', '.join(unknown)}: shown as unknown", "warning")
            )
        reason = api_reason(response)
        miss = self.tracker.settle(request, done.cache_miss, usage.figure("cache_read_tokens"), self.clock())
        if miss is not None and reason is not None and reason != "none":
            miss = replace(miss, api_reason=reason)
        if (
            reason is not None
            and agrees(miss.cause if miss else None, None if reason == "none" else reason) is False
        ):
            ours = miss.describe() if miss is not None else "the whole cached prefix reused"
            events.append(Notice(f"cache: ctxtui sees {ours}; the API's diagnosis is {reason}"))
        self.tracker.answered(request, usage, started)
        if self._estimate and usage.prompt_figure:
            self.state.tokens_ratio = usage.prompt_figure / self._estimate
        done = self.timeline.amend(
            replace(
                done,
                cache_miss=miss,
                api_miss_reason=reason,
                cache_expires_at=self.tracker.expires_at,
                hit_rate=self.tracker.hit_rate,
            )
        )
        return [ContextSampled(done, self.timeline.session_cost), *events]

    def abandon(self, reason: str) -> None:
        """The call never ended (the turn was cancelled or closed)."""
        if self.timeline.abandon(reason) is not None:
            self._pending = None
            self.timeline.amend(replace(self.timeline.samples[-1], cache_miss=None, prefix_change=None))


__all__ = ["COMPACTION_REASONS", "Economics", "api_reason"]
