"""What a model call costs and how much it may hold: usage, prices per model, context windows.

Nothing here does I/O: the model (core/model/anthropic.py) fetches, the timeline prices each call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core.usage.figures import token_figure, usage_figures
from core.values.samples import CostParts

CacheTTL = Literal["5m", "1h"]
CACHE_TTLS: tuple[CacheTTL, ...] = ("5m", "1h")
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}


_COUNT_KEYS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_creation_tokens": "cache_creation_input_tokens",
}
"""`Usage`'s four count fields and the API's names for them."""
_PROMPT_PARTS = frozenset({"input_tokens", "cache_read_tokens", "cache_creation_tokens"})


@dataclass(frozen=True)
class Usage:
    """The API's `usage` of one call. `input_tokens` is the uncached part of the prompt only.

    `cache_write_1h_tokens` is the part of the cache writes made with the 1-hour TTL, when the API
    said (`usage.cache_creation.ephemeral_1h_input_tokens`); `thinking_tokens` the part of the output
    spent thinking (`usage.output_tokens_details.thinking_tokens`); None when the API did not say.
    `unknown` names the counts the API gave as no count (core/usage/figures.py): they are 0 here,
    None from `figure`, and a cost or a cache figure that needs one of them is unknown too.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_write_1h_tokens: int | None = None
    thinking_tokens: int | None = None
    unknown: frozenset[str] = frozenset()

    @classmethod
    def from_mapping(cls, usage: Mapping[str, Any]) -> Usage:
        """From a `usage` as the API writes it, or with its nested figures flattened: a null or missing
        count is 0 (it does not apply), one that is no count unknown (checked by `usage_figures`)."""
        figures = usage_figures(usage)
        for key in ("ephemeral_1h_input_tokens", "thinking_tokens"):  # already flattened
            value = token_figure(usage.get(key))
            if key not in figures and value is not None:
                figures[key] = value
        return cls.from_figures(figures)

    @classmethod
    def from_figures(cls, figures: Mapping[str, int | None]) -> Usage:
        """From checked figures (`usage_figures`, as `ModelResponse.usage` holds them): a missing count
        is 0, a None one unknown (the two optional splits None when missing)."""
        unknown = frozenset(
            name for name, key in _COUNT_KEYS.items() if key in figures and figures[key] is None
        )

        def count(key: str) -> int:
            value = figures.get(key)
            return value if type(value) is int else 0

        def given(key: str) -> int | None:
            value = figures.get(key)
            return value if type(value) is int else None

        return cls(
            input_tokens=count("input_tokens"),
            output_tokens=count("output_tokens"),
            cache_read_tokens=count("cache_read_input_tokens"),
            cache_creation_tokens=count("cache_creation_input_tokens"),
            cache_write_1h_tokens=given("ephemeral_1h_input_tokens"),
            thinking_tokens=given("thinking_tokens"),
            unknown=unknown,
        )

    def figure(self, name: str) -> int | None:
        """One of the four counts by field name (`input_tokens`, `cache_read_tokens`, ...); None when unknown."""
        return None if name in self.unknown else int(getattr(self, name))

    @property
    def complete(self) -> bool:
        """Every count is known (the cost and the prompt size can be told)."""
        return not self.unknown

    @property
    def prompt_tokens(self) -> int:
        """Every token of the prompt that was sent: uncached input plus cache reads and writes (an
        unknown part counts 0: `prompt_figure` is None then)."""
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    @property
    def prompt_figure(self) -> int | None:
        """`prompt_tokens` when its three parts are known, else None."""
        return None if self.unknown & _PROMPT_PARTS else self.prompt_tokens


@dataclass(frozen=True)
class Price:
    """USD per million tokens. `cache_write` is the 5-minute write (the default `ephemeral` TTL);
    `cache_write_1h` the 1-hour write (None: twice the input price, the pricing page's rule for
    every model it lists). `source` says where the figures come from (not part of equality).

    `long_prompt_tokens`/`long_prompt`: a model billed at other rates (every token of the call) when
    the prompt (input + cache reads + cache writes) is longer than that many tokens.
    """

    input: float
    output: float
    cache_write: float
    cache_read: float
    long_prompt_tokens: int | None = None
    long_prompt: Price | None = None
    cache_write_1h: float | None = None
    source: str = field(default="", compare=False)

    def write(self, ttl: str = "5m") -> float:
        """The cache write price for a TTL ("5m" or "1h")."""
        if ttl == "1h":
            return self.cache_write_1h if self.cache_write_1h is not None else 2 * self.input
        return self.cache_write

    def rates(self, usage: Usage) -> Price:
        """The rates this call pays: the long-prompt band when its prompt is over the threshold."""
        if self.long_prompt is not None and self.long_prompt_tokens is not None:
            if usage.prompt_tokens > self.long_prompt_tokens:
                return self.long_prompt
        return self

    def parts(self, usage: Usage, ttl: str = "5m") -> CostParts:
        """The USD cost of one call, by part. Cache writes are priced by the TTL they were made with:
        the API's 5m/1h split when it gave one, else every write at the TTL the request asked for."""
        rates = self.rates(usage)
        if usage.cache_write_1h_tokens is not None:
            long = min(usage.cache_write_1h_tokens, usage.cache_creation_tokens)
            writes = long * rates.write("1h") + (usage.cache_creation_tokens - long) * rates.write("5m")
        else:
            writes = usage.cache_creation_tokens * rates.write(ttl)
        return CostParts(
            input=usage.input_tokens * rates.input / 1_000_000,
            cache_write=writes / 1_000_000,
            cache_read=usage.cache_read_tokens * rates.cache_read / 1_000_000,
            output=usage.output_tokens * rates.output / 1_000_000,
        )

    def cost(self, usage: Usage, ttl: str = "5m") -> float:
        """The USD cost of one call with this usage (all four parts)."""
        return self.parts(usage, ttl).total


# Prices in USD per million tokens: input, output, 5-minute cache write, cache read. The 1-hour write
# is left to `Price.write("1h")`, twice the input price: every row's "1h cache writes" figure on the
# pricing page is exactly that (Fable 5.2 $16, Sonnet 5.5 $4, Haiku 5.5 $0.20 and $1.00 in its long
# band, Sonnet 4.5 long context $12 were checked). Sources, as read in Nov 2026:
#  [pricing]   the pricing page, platform.claude.com/docs/en/about-claude/pricing ("Model pricing":
#              base input, 5m and 1h cache writes, cache hits, output; the multipliers 1.25x / 2x /
#              0.1x, with the exceptions it footnotes) and its "Long context pricing" section;
#  [overview]  the model's overview page, platform.claude.com/docs/en/models/<model>/overview;
#  [notes]     release notes of price trackers quoting the pricing page, where the page in our corpus
#              predates a change: Fable 5.2 (released 2026-11-09: $8/$40, $10 5m, $16 1h, $0.20 read),
#              the Sonnet 5.5 cache-read cut to $0.10 (2026-10-07), Haiku 5.5's two bands (2026-10-07).
# Mythos rows share their Fable generation's prices (the Fable overview pages say so).
_HAIKU_5_5_LONG = Price(input=0.50, output=2.50, cache_write=0.625, cache_read=0.05)
# Sonnet 4 and 4.5 with the 1M-context beta: a prompt over 200k tokens pays these on every token
# ([pricing], "Long context pricing"); the 4.6+ models serve their whole window at one rate.
_SONNET_4_LONG = Price(input=6.0, output=22.50, cache_write=7.50, cache_read=0.60)
PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(8.0, 40.0, 10.0, 0.20, source="notes (Fable 5.2 release)"),
    "claude-mythos-5-2": Price(8.0, 40.0, 10.0, 0.20, source="notes (as Fable 5.2)"),
    "claude-fable-5-1": Price(10.0, 50.0, 12.50, 0.25, source="pricing (read 0.025x)"),
    "claude-mythos-5-1": Price(10.0, 50.0, 12.50, 0.25, source="pricing"),
    "claude-fable-5": Price(10.0, 50.0, 12.50, 1.00, source="pricing"),
    "claude-mythos-5": Price(10.0, 50.0, 12.50, 1.00, source="pricing"),
    "claude-opus-5-5": Price(4.0, 20.0, 5.0, 0.20, source="overview"),
    "claude-opus-5": Price(5.0, 25.0, 6.25, 0.50, source="pricing, overview"),
    "claude-opus-4-8": Price(5.0, 25.0, 6.25, 0.50, source="pricing"),
    "claude-opus-4-7": Price(5.0, 25.0, 6.25, 0.50, source="pricing"),
    "claude-opus-4-6": Price(5.0, 25.0, 6.25, 0.50, source="pricing"),
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50, source="pricing"),
    "claude-opus-4-1": Price(15.0, 75.0, 18.75, 1.50, source="pricing"),
    "claude-opus-4": Price(15.0, 75.0, 18.75, 1.50, source="pricing"),
    "claude-sonnet-5-5": Price(
        2.0, 10.0, 2.50, 0.10, source="overview; read cut to $0.10 on 2026-10-07 (notes)"
    ),
    "claude-sonnet-5": Price(2.0, 10.0, 2.50, 0.20, source="overview"),
    "claude-sonnet-4-6": Price(3.0, 15.0, 3.75, 0.30, source="pricing"),
    "claude-sonnet-4-5": Price(
        3.0, 15.0, 3.75, 0.30, 200_000, _SONNET_4_LONG, source="pricing, long context"
    ),
    "claude-sonnet-4": Price(3.0, 15.0, 3.75, 0.30, 200_000, _SONNET_4_LONG, source="pricing, long context"),
    "claude-haiku-5-5": Price(
        0.10,
        0.50,
        0.125,
        0.01,
        long_prompt_tokens=100_000,
        long_prompt=_HAIKU_5_5_LONG,
        source="notes (two bands by prompt length)",
    ),
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.10, source="pricing"),
    "claude-haiku-3-5": Price(0.80, 4.0, 1.0, 0.08, source="pricing"),
}

# Context windows in tokens, used when the Models API cannot be asked (`max_input_tokens`).
# Source: the "Context window" line of each model's overview page (platform.claude.com/docs/en/
# models/<model>/overview), Nov 2026: 1M for the Fable, Mythos, Opus 4.6+ and Sonnet 4.6+ models and
# Haiku 5.5; 200K for Opus 4.5 and older, Sonnet 4.5 and 4 (1M only as a beta) and Haiku 4.5.
WINDOWS: dict[str, int] = {
    **{
        name: 1_000_000
        for name in (
            "claude-fable-5-2",
            "claude-mythos-5-2",
            "claude-fable-5-1",
            "claude-mythos-5-1",
            "claude-fable-5",
            "claude-mythos-5",
            "claude-opus-5-5",
            "claude-opus-5",
            "claude-opus-4-8",
            "claude-opus-4-7",
            "claude-opus-4-6",
            "claude-sonnet-5-5",
            "claude-sonnet-5",
            "claude-sonnet-4-6",
            "claude-haiku-5-5",
        )
    },
    **{
        name: 200_000
        for name in (
            "claude-opus-4-5",
            "claude-opus-4-1",
            "claude-opus-4",
            "claude-sonnet-4-5",
            "claude-sonnet-4",
            "claude-haiku-4-5",
            "claude-haiku-3-5",
        )
    },
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
