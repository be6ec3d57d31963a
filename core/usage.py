"""What a model call cost and how big its context was: usage, prices, windows, the per-call timeline.

Figures come from the API when online (`usage` after every call, `count_tokens` before the next) and
are the tiktoken estimate offline, and each says which it is. Nothing here does I/O: the model
(core/model/anthropic.py) fetches, the agent records one `ContextSample` per model call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from core.text import one_line, visible

# --- usage ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """The API's `usage` of one call. `input_tokens` is the uncached part of the prompt only."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    @classmethod
    def from_mapping(cls, usage: Mapping[str, Any]) -> Usage:
        """From a `ModelResponse.usage` dict (API key names); missing or null figures are 0."""

        def figure(key: str) -> int:
            value = usage.get(key)
            return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0

        return cls(
            input_tokens=figure("input_tokens"),
            output_tokens=figure("output_tokens"),
            cache_read_tokens=figure("cache_read_input_tokens"),
            cache_creation_tokens=figure("cache_creation_input_tokens"),
        )

    @property
    def prompt_tokens(self) -> int:
        """Every token of the prompt that was sent: uncached input plus cache reads and writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens


# --- prices ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """USD per million tokens. `cache_write` is the 5-minute write (the default `ephemeral` TTL).

    `long_prompt_tokens`/`long_prompt`: a model billed at other rates (every token of the call) when
    the prompt (input + cache reads + cache writes) is longer than that many tokens.
    """

    input: float
    output: float
    cache_write: float
    cache_read: float
    long_prompt_tokens: int | None = None
    long_prompt: Price | None = None

    def cost(self, usage: Usage) -> float:
        """The USD cost of one call with this usage."""
        rates = self
        if self.long_prompt is not None and self.long_prompt_tokens is not None:
            if usage.prompt_tokens > self.long_prompt_tokens:
                rates = self.long_prompt
        return (
            usage.input_tokens * rates.input
            + usage.output_tokens * rates.output
            + usage.cache_creation_tokens * rates.cache_write
            + usage.cache_read_tokens * rates.cache_read
        ) / 1_000_000


# Prices in USD per million tokens: input, output, 5-minute cache write, cache read.
# Source: Anthropic's pricing page (platform.claude.com/docs/en/about-claude/pricing, "Model pricing")
# and the model overview pages (platform.claude.com/docs/en/models/<model>/overview), as read in
# Nov 2026. Fable 5.2 ($8/$40, $10 write, $0.20 read) and the Sonnet 5.5 cache-read cut to $0.10 on
# 2026-10-07 come from release notes that quote the pricing page; Mythos shares Fable's prices (the
# Fable overview pages say so). Haiku 5.5 has two bands: prompts over 100,000 tokens pay the second.
_HAIKU_5_5_LONG = Price(input=0.50, output=2.50, cache_write=0.625, cache_read=0.05)
PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(8.0, 40.0, 10.0, 0.20),
    "claude-mythos-5-2": Price(8.0, 40.0, 10.0, 0.20),
    "claude-fable-5-1": Price(10.0, 50.0, 12.50, 0.25),
    "claude-mythos-5-1": Price(10.0, 50.0, 12.50, 0.25),
    "claude-fable-5": Price(10.0, 50.0, 12.50, 1.00),
    "claude-mythos-5": Price(10.0, 50.0, 12.50, 1.00),
    "claude-opus-5-5": Price(4.0, 20.0, 5.0, 0.20),
    "claude-opus-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-8": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-7": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-6": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-sonnet-5-5": Price(2.0, 10.0, 2.50, 0.10),
    "claude-sonnet-5": Price(2.0, 10.0, 2.50, 0.20),
    "claude-sonnet-4-6": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-5": Price(3.0, 15.0, 3.75, 0.30),
    "claude-haiku-5-5": Price(0.10, 0.50, 0.125, 0.01, long_prompt_tokens=100_000, long_prompt=_HAIKU_5_5_LONG),
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.10),
}

# Context windows in tokens, used when the Models API cannot be asked (`max_input_tokens`).
# Source: the "Context window" line of each model's overview page (platform.claude.com/docs/en/
# models/<model>/overview), Nov 2026: 1M for the Fable, Mythos, Opus 4.6+ and Sonnet 4.6+ models and
# Haiku 5.5; 200K for Opus 4.5, Sonnet 4.5 (1M only as a beta) and Haiku 4.5.
WINDOWS: dict[str, int] = {
    **{
        name: 1_000_000
        for name in (
            "claude-fable-5-2", "claude-mythos-5-2", "claude-fable-5-1", "claude-mythos-5-1",
            "claude-fable-5", "claude-mythos-5", "claude-opus-5-5", "claude-opus-5", "claude-opus-4-8",
            "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-5-5", "claude-sonnet-5",
            "claude-sonnet-4-6", "claude-haiku-5-5",
        )
    },
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
}

_SNAPSHOT = re.compile(r"-\d{8}$")  # claude-haiku-4-5-20251001 -> claude-haiku-4-5


def _family(model: str) -> str:
    """The table key for a model name: dated snapshots and `[1m]` suffixes map to their alias."""
    name = model.strip().lower().removesuffix("[1m]")
    return _SNAPSHOT.sub("", name)


def price_for(model: str, override: Price | None = None) -> Price | None:
    """The price of `model`: the override (a setting) if given, else the table; None if unknown."""
    if override is not None:
        return override
    return PRICES.get(_family(model))


WindowSource = Literal["api", "table", "setting", "unknown"]


@dataclass(frozen=True)
class Window:
    """The model's context window in tokens and where the figure came from."""

    tokens: int | None
    source: WindowSource

    @property
    def label(self) -> str:
        if self.tokens is None:
            return "window unknown"
        return f"{_short(self.tokens)} window ({self.source})"


def window_for(model: str, api_tokens: int | None = None, setting: int | None = None) -> Window:
    """The window: from the Models API when it answered, else the table, else the setting."""
    if api_tokens:
        return Window(api_tokens, "api")
    table = WINDOWS.get(_family(model))
    if table is not None:
        return Window(table, "table")
    if setting:
        return Window(setting, "setting")
    return Window(None, "unknown")


# --- the next request's size ----------------------------------------------------------------------

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


# --- the timeline ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextSample:
    """One model call: what was sent (chars, tokens), the steps that ran before it, its usage and cost.

    `chars_before` is the history before the compaction that led to this call, `chars_after` what was
    sent (`estimate_chars` of the request's messages). `steps` are the compaction steps since the
    previous call, oldest first, `saved` the characters each one removed. Usage figures are None
    until the reply arrives, and stay None offline or when the call failed (`error`).
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

    @property
    def prompt_tokens(self) -> int | None:
        """The tokens sent (input + cache read + cache write), from usage; None when unknown."""
        if self.input_tokens is None:
            return None
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_creation_tokens or 0)

    @property
    def tokens(self) -> int | None:
        """The best token figure of what was sent: the API's, else the estimate."""
        exact = self.prompt_tokens
        return exact if exact is not None else self.estimated_tokens


def _short(value: int) -> str:
    if value >= 1_000_000 and value % 1_000_000 == 0:
        return f"{value // 1_000_000}M"
    if value >= 1_000 and value % 1_000 == 0:
        return f"{value // 1_000}k"
    return f"{value:,}"


def describe_sample(sample: ContextSample) -> str:
    """The one-line context line of a call, as `ctxtui -p -v` prints it on stderr."""
    parts = [f"[call {sample.call}]"]
    if sample.chars_before != sample.chars_after:
        parts.append(f"{sample.chars_before:,} -> {sample.chars_after:,} chars")
    else:
        parts.append(f"{sample.chars_after:,} chars")
    if sample.steps:
        steps = ", ".join(
            f"{step} -{saved:,}" for step, saved in zip(sample.steps, sample.saved, strict=False)
        )
        parts.append(f"after {steps}")
    if sample.prompt_tokens is not None:
        parts.append(
            f"{sample.prompt_tokens:,} tokens (input {sample.input_tokens or 0:,}, "
            f"cache read {sample.cache_read_tokens or 0:,}, cache write {sample.cache_creation_tokens or 0:,})"
        )
        parts.append(f"output {sample.output_tokens or 0:,}")
    elif sample.estimated_tokens is not None:
        parts.append(f"~{sample.estimated_tokens:,} tokens (tiktoken estimate)")
    if sample.cost is not None:
        parts.append(f"${sample.cost:.4f}")
    elif sample.offline:
        parts.append("no cost offline")
    if sample.error:
        parts.append(f"failed: {visible(one_line(sample.error, 200))}")
    return " · ".join(parts)


@dataclass
class Timeline:
    """The agent's record of its model calls: `start` when a request goes out, `finish` after it.

    `note_step` collects the compaction steps between two calls; `note_before` keeps the history size
    before the first of them (what the call after them is compared with).
    """

    price: Price | None = None
    offline: bool = False
    samples: list[ContextSample] = field(default_factory=list)
    _steps: list[tuple[str, int]] = field(default_factory=list, init=False, repr=False)
    _before: int | None = field(default=None, init=False, repr=False)
    _open: bool = field(default=False, init=False, repr=False)

    def note_before(self, chars: int) -> None:
        """The history size before compaction; only the first since the last call counts."""
        if self._before is None:
            self._before = chars

    def note_step(self, step: str, saved: int) -> None:
        self._steps.append((step, saved))

    def start(self, chars: int, messages: int, estimated_tokens: int | None = None) -> ContextSample:
        """A request of `chars` characters (`messages` messages) goes out now."""
        steps = tuple(step for step, _ in self._steps)
        saved = tuple(amount for _, amount in self._steps)
        before = self._before if self._before is not None else chars
        self._steps, self._before = [], None
        sample = ContextSample(
            call=len(self.samples) + 1,
            chars_before=before,
            chars_after=chars,
            steps=steps,
            saved=saved,
            messages=messages,
            estimated_tokens=estimated_tokens,
            offline=self.offline,
        )
        self.samples.append(sample)
        self._open = True
        return sample

    def finish(self, usage: Mapping[str, Any] | None, error: str | None = None) -> ContextSample:
        """The newest call ended: its usage (None when it failed) and cost."""
        sample = self.samples[-1]
        self._open = False
        if usage is None or self.offline:
            done = replace(sample, error=error)
        else:
            figures = Usage.from_mapping(usage)
            done = replace(
                sample,
                input_tokens=figures.input_tokens,
                cache_read_tokens=figures.cache_read_tokens,
                cache_creation_tokens=figures.cache_creation_tokens,
                output_tokens=figures.output_tokens,
                cost=self.price.cost(figures) if self.price is not None else None,
                error=error,
            )
        self.samples[-1] = done
        return done

    def abandon(self, reason: str) -> ContextSample | None:
        """The newest call never ended (the turn was cancelled or closed): say so on its sample."""
        return self.finish(None, reason) if self._open else None

    @property
    def session_cost(self) -> float | None:
        """The cost of every priced call so far; None when nothing could be priced."""
        return session_cost(self.samples)


def session_cost(samples: Sequence[ContextSample]) -> float | None:
    """The summed cost of `samples` (None when none has a cost)."""
    costs = [sample.cost for sample in samples if sample.cost is not None]
    return sum(costs) if costs else None


__all__ = [
    "PRICES",
    "WINDOWS",
    "ContextSample",
    "Price",
    "Timeline",
    "TokenCount",
    "Usage",
    "Window",
    "describe_sample",
    "price_for",
    "session_cost",
    "window_for",
]
