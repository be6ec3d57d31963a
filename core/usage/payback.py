"""When the cache-aware timing lets compaction rewrite a warm cached prefix: when it pays back.

A step that changes the history at some block makes the next request write the cached prefix from
there on again, instead of reading it: `invalidated` tokens cost `write - read` more, once. From then
on every call reads `saved` tokens fewer, `read` less each. The step pays back when the calls the
session is still likely to make cover that cost: `invalidated * (write - read) <= saved * read * calls`,
that is when its break-even (`core.usage.cache.break_even_calls`) is at most `calls`.

How many calls a session is still likely to make is not known while it runs. The estimate used: as
many as it has made so far (a session that has run for n calls is, on the evidence, about halfway),
and at least `MIN_EXPECTED_CALLS`. ctxtui's replay of real trajectories measured this rule against
eager compaction and against waiting for a cold cache (README, "Measured on real agent work").
"""

from __future__ import annotations

from core.usage.prices import Price

MIN_EXPECTED_CALLS = 10
DEFAULT_WRITE = 1.25  # a 5-minute cache write, in input-token prices, where no price is known
DEFAULT_READ = 0.1  # a cache read, likewise


def expected_calls(calls_so_far: int, floor: int = MIN_EXPECTED_CALLS) -> float:
    """The calls a session that has made `calls_so_far` is still likely to make."""
    return float(max(calls_so_far, floor))


def multipliers(price: Price | None, ttl: str) -> tuple[float, float]:
    """(write, read) as multiples of the input price: the model's own, else the API's usual ones."""
    if price is None or price.input <= 0 or price.cache_read <= 0:
        return DEFAULT_WRITE * (2.0 / 1.25 if ttl == "1h" else 1.0), DEFAULT_READ
    return price.write(ttl) / price.input, price.cache_read / price.input


def pays_back(invalidated: float, saved: float, calls: float, write: float, read: float) -> bool:
    """A change that makes `invalidated` cached tokens be written again and saves `saved` tokens on
    every later read pays for itself within `calls` calls."""
    if saved <= 0:
        return False
    return invalidated * (write - read) <= saved * read * calls
