"""The replay's prompt cache, modelled by prefix, and its bill (compare.py).

Every request caches its whole prefix (a breakpoint on its last block, as ctxtui sends them) for the
TTL; the next request reads what it shares with the previous one from the start (tools, system,
then message by message) and writes the rest. A request under the minimum cacheable length is
uncached input. Calls are taken to come within the TTL of each other (a recording's gaps are not
modelled). Tokens are tiktoken's, counted once per distinct element.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.history.sizes import dumps
from core.history.tokens import TokenCounter
from core.usage.prices import Price, Usage

MIN_CACHEABLE = 1_024  # tokens: a shorter prefix is not cached (the API's minimum for most models)


@dataclass
class Bill:
    """What a replay's calls read, wrote and cost."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    sizes: list[int] = field(default_factory=list)  # tokens the model read per call


class PrefixCache:
    """The prompt cache of one replay, and its bill."""

    def __init__(self, counter: TokenCounter, price: Price | None, ttl: str = "5m") -> None:
        self.counter = counter
        self.price = price
        self.ttl = ttl
        self.bill = Bill()
        self._previous: list[str] = []
        self._tokens: dict[str, int] = {}

    def tokens_of(self, value: Any) -> int:
        text = value if isinstance(value, str) else dumps(value)
        if text not in self._tokens:
            self._tokens[text] = self.counter.count_text(text)
        return self._tokens[text]

    def elements(self, system: Any, tools: Sequence[Any], messages: Sequence[Any]) -> list[str]:
        """The request in the cache's order (tools, system, messages), one JSON text per element."""
        return [dumps(list(tools)), dumps(system), *(dumps(message) for message in messages)]

    def request(self, system: Any, tools: Sequence[Any], messages: Sequence[Any], output: int = 0,
                sampled: bool = True) -> int:
        """One request (an iteration of a call): what it reads from the cache and writes, priced with
        `output` tokens; returns the tokens it sent. `sampled`: a call's own size (not a compaction's)."""
        elements = self.elements(system, tools, messages)
        sizes = [self.tokens_of(text) for text in elements]
        total = sum(sizes)
        shared = 0
        for before, now in zip(self._previous, elements, strict=False):
            if before != now:
                break
            shared += 1
        read = sum(sizes[:shared]) if self._previous else 0
        usage = Usage(input_tokens=total, output_tokens=output) if total < MIN_CACHEABLE else \
            Usage(input_tokens=0, output_tokens=output, cache_read_tokens=read, cache_creation_tokens=total - read)
        self._previous = elements if total >= MIN_CACHEABLE else []
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
