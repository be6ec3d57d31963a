"""The gauge's cache lines: when the prompt cache goes cold, the session's hit rate, the compaction
timing in force and what waits for the cache.

Everything comes from what the events carried: the last call's `ContextSample` (its
`cache_expires_at`, `hit_rate`, `timing`) and the forecast's `NextCallPreview` or a turn's
`CompactionHeld` (the steps that wait). The time left is measured against a clock the gauge
passes in (its timer repaints every second), never by asking the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.events import CompactionStep
    from core.values.samples import ContextSample


def clock_text(seconds: float) -> str:
    """184.2 -> '3:04', 3725 -> '1:02:05' (whole seconds, rounded down)."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def cache_clock_line(sample: ContextSample | None, now: float) -> str:
    """'cache warm: cold in 4:12 (5m TTL) · hit rate 87%', 'cache cold for 1:02 · hit rate 87%', or ''
    when no call has read or written the cache yet (offline, or before the first reply)."""
    if sample is None or sample.cache_expires_at is None:
        return ""
    left = sample.cache_expires_at - now
    ttl = f" ({sample.cache_ttl} TTL)" if sample.cache_ttl else ""
    state = (
        f"cache warm: cold in {clock_text(left)}{ttl}" if left > 0 else f"cache cold for {clock_text(-left)}"
    )
    if sample.hit_rate is not None:
        state += f" · hit rate {sample.hit_rate:.0%}"
    return state


def timing_line(timing: str | None, held: Sequence[CompactionStep]) -> str:
    """'timing: cache-aware · waiting for the cache: micro_compact (re-writes 4.1k cached tokens now)';
    'timing: eager'; '' when no timing is known yet."""
    if timing is None:
        return ""
    line = f"timing: {timing}"
    if held:
        names = " + ".join(dict.fromkeys(step.step for step in held))
        invalidated = sum(step.cache_invalidated_tokens or 0 for step in held)
        from core.values.miss import cache_cost_line

        cost = cache_cost_line(invalidated, None).removesuffix(": saves nothing, never pays back")
        line += f" · waiting for the cache: {names} ({cost} if run now)"
    elif timing == "cache-aware":
        line += " · nothing waits"
    return line
