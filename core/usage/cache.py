"""The prompt cache as ctxtui sees it: what the last request left cached, until when, and what each
change of the history costs it.

`CacheTracker` keeps the fingerprint of the last request that was answered (core/usage/fingerprint.py),
the tokens its cached prefix held (cache reads + writes of its usage: the whole request, since the
last breakpoint is the last block) and when that cache goes cold (the TTL from the start of the
request that last read or wrote it). Between two calls it follows every change of the history: the
place it touched and what made it (a compaction step, a steering action, or nothing of ours). That
gives two figures:

- what a change costs, before the next call: the cached tokens from the first block it touched to
  the end of the prefix (spread over the blocks in proportion to their JSON length, scaled to the
  last call's cached tokens), less what earlier changes since that call already gave up; nothing when
  the cache is cold; and its break-even in calls (DESIGN.md's formula);
- why the next call missed (`CacheMiss`): the first block where its fingerprint leaves the last
  request's, the cause, the tokens written again, and which change of ours put the difference there;
  and, once its usage is known (`settle`), a miss on the server's side that nothing of ours foresaw
  (the cache expired on the server's clock, was evicted, or was out of the API's lookback).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from core.usage.fingerprint import Position, PrefixPrint
from core.usage.prices import TTL_SECONDS, Price, Usage
from core.values.miss import CacheMiss

Clock = Callable[[], float]

LOOKBACK_BLOCKS = 20
"""The API finds an earlier cache entry at a breakpoint or up to this many blocks before one: a request
that adds this many blocks or more after the last one's cached prefix cannot read it."""

READ_SHARE = 0.9
"""A call foreseen to read the last request's whole cached prefix that read less than this share of
it (its usage's cache_read_input_tokens) lost that cache on the server's side: a miss."""


def break_even_calls(
    invalidated: int | None, saved_tokens: float, price: Price | None, ttl: str
) -> float | None:
    """**contract** `invalidated * (write - read) / (saved * read)`: the calls after which the tokens a
    step saves on every read have paid for writing the invalidated prefix again. None without a price
    (offline) or when nothing was saved."""
    if price is None or invalidated is None or saved_tokens <= 0 or price.cache_read <= 0:
        return None
    return invalidated * (price.write(ttl) - price.cache_read) / (saved_tokens * price.cache_read)


@dataclass
class _Change:
    position: Position
    by: str | None


@dataclass
class CacheTracker:
    """The cached prefix of the last answered request and the changes made to the history since."""

    ttl: str = "5m"
    base: PrefixPrint | None = None
    base_tokens: int | None = None  # cache read + write of that call: its cached prefix, in tokens
    expires_at: float | None = None  # when that cache goes cold (None: nothing cached)
    frontier: Position | None = None  # everything before it is what the last request sent
    changes: list[_Change] = field(default_factory=list)
    read_tokens: int = 0  # over the session's answered calls, for the hit rate
    prompt_tokens: int = 0

    # --- the state -----------------------------------------------------------------------------------

    def warm(self, now: float) -> bool:
        """The last request's cache can still be read at `now`."""
        return self.expires_at is not None and now < self.expires_at

    @property
    def hit_rate(self) -> float | None:
        """The share of the session's prompt tokens that were read from the cache (None before any usage)."""
        return self.read_tokens / self.prompt_tokens if self.prompt_tokens else None

    def tokens_per_char(self) -> float | None:
        if self.base is None or not self.base_tokens or not self.base.chars:
            return None
        return self.base_tokens / self.base.chars

    def cached_from(self, position: Position, now: float) -> int | None:
        """The last request's cached tokens from the message block at `position` to the end (0 when
        the cache is cold or nothing was cached; None when nothing is known: offline, no call yet)."""
        if self.base is None or self.base_tokens is None:
            return None
        ratio = self.tokens_per_char()
        if ratio is None or not self.warm(now):
            return 0
        return round(self.base.chars_from(self.base.index_of(position)) * ratio)

    # --- changes between two calls -----------------------------------------------------------------

    def cost(
        self, position: Position | None, saved_chars: int, price: Price | None, now: float
    ) -> tuple[int | None, float | None]:
        """(cache_invalidated_tokens, break_even_calls) of a change at `position` that saved
        `saved_chars`, given the changes made since the last call (which this does not record)."""
        if self.base is None or self.base_tokens is None or price is None:
            return None, None
        invalidated = 0
        if position is not None and self.frontier is not None and position < self.frontier:
            lost = self.cached_from(position, now) or 0
            already = self.cached_from(self.frontier, now) or 0
            invalidated = max(0, lost - already)
        ratio = self.tokens_per_char() or 0.0
        return invalidated, break_even_calls(invalidated, saved_chars * ratio, price, self.ttl)

    def change(self, position: Position | None, by: str | None) -> None:
        """The history changed from `position` on (None: nothing changed) because of `by` (before any
        answered request there is nothing cached to follow)."""
        if position is None or self.base is None:
            return
        self.changes.append(_Change(position, by))
        if self.frontier is None or position < self.frontier:
            self.frontier = position

    def copy(self) -> CacheTracker:
        """A copy to follow changes that have not happened (a preview): the prints are shared (they
        never change), the changes copied."""
        twin = copy.copy(self)
        twin.changes = list(self.changes)
        return twin

    # --- a call ------------------------------------------------------------------------------------

    def miss(self, request: PrefixPrint, now: float) -> CacheMiss | None:
        """Why `request`, going out at `now`, cannot read the last request's whole cached prefix
        (None: it can, or nothing was cached to lose)."""
        base = self.base
        if base is None:
            return CacheMiss("first_call", None, None, None)
        if request.model != base.model:
            return CacheMiss("model_changed", None, None, self.base_tokens)
        index = base.first_difference(request)
        block = base.block_at(index) if index is not None else None
        path = block.path if block is not None else None
        if not self.base_tokens or self.expires_at is None:
            return None  # the last request cached nothing (too short to cache): nothing to lose
        if not self.warm(now):
            return CacheMiss("ttl_expired", None, path, self.base_tokens)
        if index is None or block is None:
            return None
        ratio = self.tokens_per_char() or 0.0
        tokens = round(base.chars_from(index) * ratio)
        cause = f"{block.section}_changed"
        by = self._culprit(block.position) if block.section == "messages" else None
        return CacheMiss(cause, by, path, tokens)

    def settle(
        self, request: PrefixPrint, foreseen: CacheMiss | None, read: int | None, ended: float
    ) -> CacheMiss | None:
        """The call's miss once its usage says what it read. `foreseen` is `miss` at the start, which
        sees only our side (our changes, our clock); a call foreseen to read the last request's whole
        cached prefix that read well below it (`read`, None when the usage gave no count) lost the
        cache on the server's side, though nothing of ours changed the prefix. Its cause:
        "ttl_expired" when by our clock the cache may have gone cold before the reply ended (`ended`:
        the server's clock runs on its own); "lookback_exceeded" when the request added more blocks
        after that prefix than the API looks back over from its breakpoint (LOOKBACK_BLOCKS); else
        "evicted": the server dropped it before its TTL. Its tokens: the part of the prefix not read."""
        expected = self.base_tokens
        if foreseen is not None or read is None or self.base is None or not expected:
            return foreseen
        if read >= READ_SHARE * expected:
            return None
        if self.expires_at is not None and ended >= self.expires_at:
            cause = "ttl_expired"
        elif len(request.blocks) - len(self.base.blocks) >= LOOKBACK_BLOCKS:
            cause = "lookback_exceeded"
        else:
            cause = "evicted"
        return CacheMiss(cause, None, None, expected - read)

    def _culprit(self, position: Position) -> str | None:
        """The change of ours that put the first difference at `position`: the nearest one at or
        before it (the latest of equals); None when none did (the user's turn, a resume)."""
        best: _Change | None = None
        for change in self.changes:
            if change.position <= position and (best is None or change.position >= best.position):
                best = change
        return best.by if best is not None else None

    def answered(self, request: PrefixPrint, usage: Usage, started: float) -> None:
        """A call was answered: its request is the new base, its usage says what the cache holds
        (nothing is known of it when the usage gave a cache figure as no count)."""
        known = (
            usage.figure("cache_read_tokens") is not None
            and usage.figure("cache_creation_tokens") is not None
        )
        cached = usage.cache_read_tokens + usage.cache_creation_tokens if known else None
        self.base, self.base_tokens = request, cached
        self.expires_at = started + TTL_SECONDS.get(self.ttl, 300.0) if cached else None
        self.frontier, self.changes = (request.messages, 0), []
        if usage.prompt_figure is not None:
            self.read_tokens += usage.cache_read_tokens
            self.prompt_tokens += usage.prompt_figure

    def reset(self) -> None:
        """A new session: nothing is known of any cache."""
        ttl = self.ttl
        self.__init__(ttl=ttl)  # type: ignore[misc]


__all__ = ["LOOKBACK_BLOCKS", "READ_SHARE", "CacheTracker", "Clock", "break_even_calls"]
