"""Numbers from the API or a file, checked where they enter: a token count or a cost is believed only
when it is one; anything else is None (unknown), never an exception later.

JSON can carry NaN, Infinity and 1e400 (Python's json reads them as floats), a negative or
fractional count, a string, true, an object; the SDK does not validate a reply's `usage`, and a
session log or a proxy recording is whatever sits on disk. `usage_figures` is the one way a `usage`
enters: an SDK reply (its `usage`, which the stream's message_delta updates), a proxy's reply, a
recording read back. `token_figure` checks one count (count_tokens, a sample of a session log),
`cost_figure` one amount in USD.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MAX_TOKENS = 100_000_000
"""The largest token count believed: a hundred times the largest context window, far above any call."""

MAX_COST = 1_000_000.0
"""The largest USD amount believed for one call or one session's sum."""

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
"""The four counts of a `usage`, under the API's names."""

UsageFigures = dict[str, int | None]
"""A checked `usage`: the four counts under the API's names (absent or null in the reply: 0, the API
leaves out what does not apply; anything but a count: None), and, when the API gave them as counts,
the nested `ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens` (usage.cache_creation) and
`thinking_tokens` (usage.output_tokens_details), flattened."""


def token_figure(value: Any) -> int | None:
    """`value` as a token count: a whole number from 0 to MAX_TOKENS (12.0 is 12); None for anything
    else (NaN, an infinity, a negative or fractional number, a string, a bool, null, a container)."""
    if type(value) is int:
        return value if 0 <= value <= MAX_TOKENS else None
    if type(value) is float and math.isfinite(value) and value.is_integer() and 0 <= value <= MAX_TOKENS:
        return int(value)
    return None


def cost_figure(value: Any) -> float | None:
    """`value` as an amount in USD: a finite number from 0 to MAX_COST; None for anything else."""
    if type(value) not in (int, float):
        return None
    amount = float(value)
    return amount if math.isfinite(amount) and 0 <= amount <= MAX_COST else None


def _field(source: Any, key: str) -> Any:
    """`source[key]` of a dict, or `source.key` of an SDK object (None when absent)."""
    if isinstance(source, Mapping):
        return source.get(key)
    return getattr(source, key, None)


def usage_figures(usage: Any) -> UsageFigures:
    """The checked figures of a `usage` (an SDK `Usage` object or a plain dict; see `UsageFigures`).
    A `usage` that is neither (a string, a list, a number) has all four counts unknown."""
    if not isinstance(usage, Mapping) and not hasattr(usage, "model_dump"):
        return dict.fromkeys(USAGE_KEYS)
    figures: UsageFigures = {}
    for key in USAGE_KEYS:
        value = _field(usage, key)
        figures[key] = 0 if value is None else token_figure(value)
    split = _field(usage, "cache_creation")
    for key in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"):
        value = token_figure(_field(split, key)) if split is not None else None
        if value is not None:
            figures[key] = value
    details = _field(usage, "output_tokens_details")
    thinking = token_figure(_field(details, "thinking_tokens")) if details is not None else None
    if thinking is not None:
        figures["thinking_tokens"] = thinking
    return figures


def unknown_figures(figures: UsageFigures) -> list[str]:
    """The names of the counts `usage_figures` found to be no count (to say so once)."""
    return [key for key, value in figures.items() if value is None]


__all__ = [
    "MAX_COST",
    "MAX_TOKENS",
    "USAGE_KEYS",
    "UsageFigures",
    "cost_figure",
    "token_figure",
    "unknown_figures",
    "usage_figures",
]
