"""The agent's accounts with the prompt cache: every call sampled and priced, why it missed, what each
change cost, and when the cache-aware timing lets the steps wait.

`Economics` owns the `Timeline` (one sample per model call, summary calls included) and the
`CacheTracker` (what the last answered request left cached, until when, and the changes since). The
agent hands it what happens, in order: the history size before compaction (`before`), each event of
a compaction (`note`: a step is priced and followed, a summary call's usage becomes a sample), each
other change of the history (`track`: a steering action, a rewritten request), the request going out
(`start`) and its end (`finish`). Before the pipeline runs it asks `plan`: with the "cache-aware"
timing, while the cache is warm and the next request is under the ceiling, the steps that would
rewrite the cached prefix wait (a `CompactionHeld` says which, and what they would cost now).
Nothing here talks to a UI: every figure leaves in an event the agent yields.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
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
from core.usage.cache import CacheTracker, Clock, break_even_calls
from core.usage.counting import estimate_request, model_window
from core.usage.figures import unknown_figures
from core.usage.fingerprint import Fingerprinter, Position, PrefixPrint, message_digests, prefix_change
from core.usage.miss import PrefixChange, agrees
from core.usage.payback import expected_calls, multipliers, pays_back
from core.usage.prices import Usage, price_for
from core.usage.timeline import ContextSample, Timeline

if TYPE_CHECKING:
    from core.agent.keeper import ContextKeeper
    from core.config import Settings
    from core.history.tokens import TokenCounter

Message = dict[str, Any]
CEILING_SHARE = 0.8  # cache-aware: the default ceiling, as a share of the model's window
COMPACTION_REASONS = ("prepare", "compact_history", "reactive_compact")


def api_reason(response: ModelResponse) -> str | None:
    """The API's diagnosis of a call: its cache_miss_reason's type, "none" when it compared and found
    no divergence, None when it said nothing (not asked, or still pending)."""
    if response.diagnostics is None:
        return "none" if response.asked else None
    reason = response.diagnostics.get("cache_miss_reason")
    return str(reason.get("type")) if isinstance(reason, dict) and reason.get("type") else None


class Economics:
    """The timeline and the cache's accounts of one agent (see the module docstring)."""

    def __init__(
        self, model: Model, settings: Settings, tokens: TokenCounter, clock: Clock | None = None
    ) -> None:
        self.model = model
        self.timing = settings.compaction_timing
        self.ttl = settings.cache_ttl
        self.ceiling_setting = settings.cache_ceiling_tokens
        self.clock: Clock = clock or time.time
        self.tokens = tokens
        self.price = None if model.offline else price_for(model.name)
        self.tracker = CacheTracker(ttl=self.ttl)
        self.timeline = Timeline(self.price, offline=model.offline, ttl=self.ttl)
        self._prints = Fingerprinter()
        self._pending: tuple[PrefixPrint, float, ContextSample] | None = None
        self._held: tuple[str, ...] = ()
        self._ceiling: int | None = None
        self._estimate: int | None = None  # the tiktoken estimate of the request going out
        self._ratio: float | None = None  # the API's prompt tokens per estimated token, last call

    @property
    def online(self) -> bool:
        return not self.model.offline

    def reset(self) -> None:
        """A new session: a new timeline (cost is per session), nothing known of any cache."""
        self.tracker.reset()
        self.timeline = Timeline(self.price, offline=self.model.offline, ttl=self.ttl)
        self._pending, self._held, self._ratio = None, (), None

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

    async def preview(self, keeper: ContextKeeper, request: str, hold: bool = False) -> list[CompactionStep]:
        """The next prepare's steps (with `hold`, those that leave a warm cache alone), each priced."""
        return self.priced(await keeper.preview(request, hold))

    async def pins_changed(self, keeper: ContextKeeper, request: str, change: Callable[[], Notice]) -> Notice:
        """A pin or unpin (`change`): its notice, with how many more cached tokens the next call's
        compaction would invalidate because of it (fewer for a pin: negative) and the break-even."""
        if not self.online or self.tracker.base is None:
            return change()
        before = self._pending_cost(await keeper.preview(request))
        notice = change()
        after = self._pending_cost(await keeper.preview(request))
        invalidated = after[0] - before[0]
        ratio = self.tracker.tokens_per_char() or 0.0
        calls = break_even_calls(max(invalidated, 0), (after[1] - before[1]) * ratio, self.price, self.ttl)
        return replace(notice, cache_invalidated_tokens=invalidated, break_even_calls=calls)

    def _pending_cost(self, steps: Sequence[CompactionStep]) -> tuple[int, int]:
        """(cached tokens the steps would invalidate, chars they would save), priced in order."""
        priced = self.priced(steps)
        return sum(step.cache_invalidated_tokens or 0 for step in priced), sum(step.saved for step in priced)

    # --- cache-aware timing ----------------------------------------------------------------------------

    async def ceiling(self) -> int | None:
        """The request size at which waiting steps run anyway: the setting, else 80% of the window."""
        if self.ceiling_setting:
            return self.ceiling_setting
        if self._ceiling is None:
            window = await model_window(self.model)
            self._ceiling = int(window.tokens * CEILING_SHARE) if window.tokens else None
        return self._ceiling

    async def next_tokens(self, system: str, tools: Sequence[Any], messages: Sequence[Message]) -> int:
        """The next request's size: the tiktoken estimate, scaled by how the last call's estimate
        compared with the API's count of it."""
        estimate = await asyncio.to_thread(estimate_request, self.tokens, system, messages, tools)
        return round(estimate * self._ratio) if self._ratio else estimate

    def hold(self, held: CompactionHeld | None) -> None:
        """The steps that wait before the next call (its sample names them)."""
        self._held = tuple(dict.fromkeys(step.step for step in held.steps)) if held is not None else ()

    async def plan(
        self, keeper: ContextKeeper, request: str, system: str, tools: Sequence[Any]
    ) -> CompactionHeld | None:
        """With the cache-aware timing: the steps that wait now (the pipeline would rewrite the warm
        cached prefix and the next request is under the ceiling), or None: everything runs."""
        now = self.clock()
        if self.timing != "cache-aware" or not keeper.auto_compact or not self.tracker.warm(now):
            return None
        ceiling = await self.ceiling()
        if ceiling is None:
            return None
        tokens = await self.next_tokens(system, tools, keeper.conversation.history)
        if tokens >= ceiling:
            return None
        steps = self.priced(await keeper.preview(request))
        frontier = self.tracker.frontier
        breaking = [
            step
            for step in steps
            if step.changed_at is not None
            and frontier is not None
            and step.changed_at < frontier
            and (step.saved > 0 or step.step == "compact_history")
        ]
        if not breaking or self._pays_back(breaking):
            return None
        assert self.tracker.expires_at is not None
        return CompactionHeld(tuple(steps), self.tracker.expires_at, tokens, ceiling)

    def _pays_back(self, steps: Sequence[CompactionStep]) -> bool:
        """The lossless steps that would rewrite the warm prefix save enough, within the calls the
        session is likely to make, to pay for writing it again (core/usage/payback.py); a summary's
        saving is not counted: it waits for the ceiling unless the steps before it pay."""
        lossless = [step for step in steps if step.step != "compact_history" and step.saved > 0]
        invalidated = max((step.cache_invalidated_tokens or 0 for step in lossless), default=0)
        saved = sum(step.saved_tokens or 0 for step in lossless)
        calls = sum(1 for sample in self.timeline.samples if sample.kind != "summary")
        write, read = multipliers(self.price, self.ttl)
        return pays_back(invalidated, saved, expected_calls(calls), write, read)

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
            self._ratio = usage.prompt_figure / self._estimate
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
