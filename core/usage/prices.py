"""What a model call costs and how much it may hold: usage, prices per model, context windows.

Nothing here does I/O: the model (core/model/anthropic.py) fetches, the timeline prices each call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal


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


def _short(value: int) -> str:
    if value >= 1_000_000 and value % 1_000_000 == 0:
        return f"{value // 1_000_000}M"
    if value >= 1_000 and value % 1_000 == 0:
        return f"{value // 1_000}k"
    return f"{value:,}"
