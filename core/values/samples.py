"""The figures of one model call: `ContextSample` (what was sent, the steps before it, its usage and
cost, as the timeline records it: core/usage/timeline.py), `TokenCount` (the next request's size)
and `CostParts` (a call's cost, split as the bill is).

Figures come from the API when online and are the tiktoken estimate offline, and each says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.values.miss import CacheMiss, PrefixChange


@dataclass(frozen=True)
class CostParts:
    """What one call cost, in USD, split as the bill is: uncached input, cache writes, cache reads, output."""

    input: float = 0.0
    cache_write: float = 0.0
    cache_read: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.cache_write + self.cache_read + self.output


CountSource = Literal["api", "estimate"]


@dataclass(frozen=True)
class TokenCount:
    """The token size of the next request: exact from `count_tokens`, or the tiktoken estimate.

    `reason` says why an estimate stands in ("offline", "rate limited", the error) so the view can
    label it.
    """

    tokens: int
    source: CountSource
    reason: str = ""

    @property
    def exact(self) -> bool:
        return self.source == "api"

    @property
    def label(self) -> str:
        if self.exact:
            return "exact (count_tokens)"
        return f"estimated (tiktoken{', ' + self.reason if self.reason else ''})"


@dataclass(frozen=True)
class ContextSample:
    """One model call: what was sent (chars, tokens), the steps that ran before it, its usage and cost.

    `chars_before` is the history before the compaction that led to this call, `chars_after` what was
    sent (`estimate_chars` of the request's messages). `steps` are the compaction steps since the
    previous call, oldest first, `saved` the characters each one removed. Usage figures are None
    until the reply arrives, and stay None offline or when the call failed (`error`).

    The cache and cost truth (DESIGN.md, "Cache, thinking and cost truth"): `kind` is "turn" (a call
    of the turn loop) or "summary" (a compaction's summary call, whose chars are its prompt's);
    `cost_parts` splits `cost` into uncached input, cache writes (at `cache_ttl`'s price), cache reads
    and output; `cache_miss` says why the call did not read the previous request's whole cached
    prefix (None: it did, or the call failed), `prefix_change` where the request first left the
    previous one's and what changed there, and `api_miss_reason` what the API's diagnostics said
    (its reason's type, "none" when it found no divergence, None when it said nothing);
    `started_at` is when the request went out and `cache_expires_at` when the cache it read or
    wrote goes cold (epoch seconds); `hit_rate` the session's share of prompt tokens read from the
    cache after this call; `timing` the compaction timing in force and `held` the steps that
    waited for the cache before this call.
    """

    call: int
    chars_before: int
    chars_after: int
    steps: tuple[str, ...] = ()
    saved: tuple[int, ...] = ()
    messages: int = 0
    estimated_tokens: int | None = None
    input_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    offline: bool = False
    error: str | None = None
    kind: str = "turn"
    cache_miss: CacheMiss | None = None
    thinking_tokens: int | None = None
    cost_parts: CostParts | None = None
    cache_ttl: str | None = None
    api_miss_reason: str | None = None
    started_at: float | None = None
    cache_expires_at: float | None = None
    hit_rate: float | None = None
    timing: str | None = None
    held: tuple[str, ...] = ()
    prefix_change: PrefixChange | None = None

    @property
    def prompt_tokens(self) -> int | None:
        """The tokens sent (input + cache read + cache write), from usage; None when any is unknown."""
        if self.input_tokens is None or self.cache_read_tokens is None or self.cache_creation_tokens is None:
            return None
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    @property
    def tokens(self) -> int | None:
        """The best token figure of what was sent: the API's, else the estimate."""
        exact = self.prompt_tokens
        return exact if exact is not None else self.estimated_tokens
