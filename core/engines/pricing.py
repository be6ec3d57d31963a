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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.history.sizes import dumps, list_chars
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
        return self.input_tokens + WRITE_SHARE.get(ttl, 1.25) * self.cache_write_tokens \
            + READ_SHARE * self.cache_read_tokens


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

    def chars(self, messages: Sequence[Any]) -> int:
        """`estimate_chars(messages)`, from each message's memoised JSON."""
        return list_chars([len(self.text(message)) for message in messages], len(messages))

    def tokens(self, value: Any) -> int:
        text = self.text(value)
        count = self._tokens.get(text)
        if count is None:
            count = self._tokens[text] = self.counter.count_text(text)
        return count


class PrefixCache:
    """The prompt cache of one replay, and its bill."""

    def __init__(self, counter: TokenCounter, price: Price | None, ttl: str = "5m", memo: Memo | None = None) -> None:
        self.counter = counter
        self.price = price
        self.ttl = ttl
        self.bill = Bill()
        self.memo = memo or Memo(counter)
        self._previous: list[str] = []
        self._expires: float | None = None

    def tokens_of(self, value: Any) -> int:
        return self.memo.tokens(value)

    def elements(self, system: Any, tools: Sequence[Any], messages: Sequence[Any]) -> list[str]:
        """The request in the cache's order (tools, system, messages), one JSON text per element."""
        text = self.memo.text
        return [text(tools if isinstance(tools, list) else list(tools)), text(system),
                *(text(message) for message in messages)]

    def cached_messages(self) -> int:
        """How many messages the previous request cached (its elements after tools and system)."""
        return max(0, len(self._previous) - 2)

    def warm(self, at: float | None) -> bool:
        """The cache still holds the previous request's prefix at time `at` (None: no clock, warm)."""
        return bool(self._previous) and (at is None or self._expires is None or at <= self._expires)

    def request(self, system: Any, tools: Sequence[Any], messages: Sequence[Any], output: int = 0,
                sampled: bool = True, at: float | None = None) -> int:
        """One request (an iteration of a call) at time `at`: what it reads from the cache and writes,
        priced with `output` tokens; returns the tokens it sent. `sampled`: a call's own size (not a
        compaction's)."""
        elements = self.elements(system, tools, messages)
        sizes = [self.memo.tokens(text) for text in elements]
        total = sum(sizes)
        shared = 0
        if self.warm(at):
            for before, now in zip(self._previous, elements, strict=False):
                if before is not now and before != now:
                    break
                shared += 1
        read = sum(sizes[:shared])
        usage = Usage(input_tokens=total, output_tokens=output) if total < MIN_CACHEABLE else \
            Usage(input_tokens=0, output_tokens=output, cache_read_tokens=read, cache_creation_tokens=total - read)
        self._previous = elements if total >= MIN_CACHEABLE else []
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
