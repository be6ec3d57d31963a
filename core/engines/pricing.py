"""The replay's prompt cache, modelled by prefix, and its bill (compare.py, replay.py).

Every request caches its whole prefix (a breakpoint on its last block, as ctxtui sends them) for the
TTL; the next request reads what it shares with the previous one from the start (tools, system,
then message by message) and writes the rest. A request under the minimum cacheable length is
uncached input. A request more than the TTL after the one before it finds the cache cold (each
read or write refreshes it, as the API's does); calls with no time are taken to come within the TTL.
Tokens are tiktoken's, counted once per distinct element.

Linear in what a replay sends: each message's JSON and tokens are computed once per message object
(the pipeline copies only what it changes, so an unchanged message is the same object in the next
request), and a `Memo` can be shared by every engine replaying the same calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from operator import is_
from typing import Any

from core.history.sizes import dumps
from core.history.tokens import TokenCounter
from core.usage.prices import Price, Usage

MIN_CACHEABLE = 1_024  # tokens: a shorter prefix is not cached (the API's minimum for most models)
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
WRITE_SHARE = {"5m": 1.25, "1h": 2.0}  # a cache write in input-token equivalents, by TTL
READ_SHARE = 0.1  # a cache read in input-token equivalents


@dataclass
class Bill:
    """What a replay's calls read, wrote and cost."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    sizes: list[int] = field(default_factory=list)  # tokens the model read per call

    def billed_input(self, ttl: str = "5m") -> float:
        """Input-token equivalents at the cache's prices: uncached + writes x 1.25 (5m) + reads x 0.1."""
        return (
            self.input_tokens
            + WRITE_SHARE.get(ttl, 1.25) * self.cache_write_tokens
            + READ_SHARE * self.cache_read_tokens
        )


class Memo:
    """Each value's JSON text and token count, computed once per object (and once per distinct text).

    Keyed by the object's identity, holding the object so that the key cannot be reused."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._by_id: dict[int, tuple[Any, str]] = {}
        self._tokens: dict[str, int] = {}

    def text(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        found = self._by_id.get(id(value))
        if found is None or found[0] is not value:
            found = (value, dumps(value))
            self._by_id[id(value)] = found
        return found[1]

    def tokens(self, value: Any) -> int:
        text = self.text(value)
        count = self._tokens.get(text)
        if count is None:
            count = self._tokens[text] = self.counter.count_text(text)
        return count


def same_prefix(before: Sequence[Any], now: Sequence[Any]) -> int:
    """How many leading items of `now` are the very objects `before` holds there (compared in C)."""
    if all(map(is_, before, now)):  # the usual case, checked at C speed
        return min(len(before), len(now))
    return len(list(takewhile(bool, map(is_, before, now))))


class Running:
    """Running sums of a per-message figure over a list that changes little from one call to the
    next: the sums of the messages the last list shares (by identity) are reused, so a call costs
    what changed, not the whole list again."""

    def __init__(self, figure: Callable[[Any], int]) -> None:
        self.figure = figure
        self._items: list[Any] = []
        self._sums: list[int] = []

    def sums(self, messages: Sequence[Any]) -> list[int]:
        """The running sums of `messages` (`sums[i]`: messages 0..i)."""
        kept = same_prefix(self._items, messages)
        sums = self._sums[:kept]
        total = sums[-1] if sums else 0
        for message in messages[kept:]:
            total += self.figure(message)
            sums.append(total)
        self._items, self._sums = list(messages), sums
        return sums

    def total(self, messages: Sequence[Any]) -> int:
        sums = self.sums(messages)
        return sums[-1] if sums else 0


class PrefixCache:
    """The prompt cache of one replay, and its bill."""

    def __init__(
        self, counter: TokenCounter, price: Price | None, ttl: str = "5m", memo: Memo | None = None
    ) -> None:
        self.counter = counter
        self.price = price
        self.ttl = ttl
        self.bill = Bill()
        self.memo = memo or Memo(counter)
        self._tokens = Running(self.memo.tokens)
        self._head: tuple[str, str] | None = (
            None  # the cached request's tools and system (None: nothing cached)
        )
        self._messages: list[Any] = []  # the cached request's messages
        self._expires: float | None = None

    def tokens_of(self, value: Any) -> int:
        return self.memo.tokens(value)

    def cached_messages(self) -> int:
        """How many messages the previous request cached."""
        return len(self._messages) if self._head is not None else 0

    def warm(self, at: float | None) -> bool:
        """The cache still holds the previous request's prefix at time `at` (None: no clock, warm)."""
        return self._head is not None and (at is None or self._expires is None or at <= self._expires)

    def _shared(self, messages: Sequence[Any]) -> int:
        """The leading messages of a request the cached one holds: the same objects, then equal texts."""
        shared = same_prefix(self._messages, messages)
        text = self.memo.text
        while shared < min(len(self._messages), len(messages)) and text(self._messages[shared]) == text(
            messages[shared]
        ):
            shared += 1
        return shared

    def request(
        self,
        system: Any,
        tools: Sequence[Any],
        messages: Sequence[Any],
        output: int = 0,
        sampled: bool = True,
        at: float | None = None,
    ) -> int:
        """One request (an iteration of a call) at time `at`: what it reads from the cache and writes,
        priced with `output` tokens; returns the tokens it sent. `sampled`: a call's own size (not a
        compaction's)."""
        head = (self.memo.text(tools if isinstance(tools, list) else list(tools)), self.memo.text(system))
        head_tokens = self.memo.tokens(head[0]) + self.memo.tokens(head[1])
        sums = self._tokens.sums(messages)
        total = head_tokens + (sums[-1] if sums else 0)
        read = 0
        if self.warm(at) and self._head == head:
            shared = self._shared(messages)
            read = head_tokens + (sums[shared - 1] if shared else 0)
        usage = (
            Usage(input_tokens=total, output_tokens=output)
            if total < MIN_CACHEABLE
            else Usage(
                input_tokens=0,
                output_tokens=output,
                cache_read_tokens=read,
                cache_creation_tokens=total - read,
            )
        )
        if total >= MIN_CACHEABLE:
            self._head, self._messages = head, list(messages)
        else:
            self._head, self._messages = None, []
        if at is not None:
            self._expires = at + TTL_SECONDS.get(self.ttl, 300.0)
        self.charge(usage)
        if sampled:
            self.bill.sizes.append(total)
        return total

    def charge(self, usage: Usage) -> None:
        """Add one call's usage to the bill (priced when the model's price is known)."""
        self.bill.input_tokens += usage.input_tokens
        self.bill.cache_read_tokens += usage.cache_read_tokens
        self.bill.cache_write_tokens += usage.cache_creation_tokens
        self.bill.output_tokens += usage.output_tokens
        if self.price is not None:
            self.bill.cost += self.price.parts(usage, self.ttl).total
