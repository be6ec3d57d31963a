"""Why a model call did not reuse the previous request's cached prefix (`CacheMiss`, a contract).

A value type (core/values/): the tracker that finds it is core/usage/cache.py, and `core.events`
re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

MissCause = Literal[
    "first_call",
    "ttl_expired",
    "model_changed",
    "system_changed",
    "tools_changed",
    "messages_changed",
    "evicted",
    "lookback_exceeded",
]
MISS_CAUSES: tuple[MissCause, ...] = get_args(MissCause)
"""DESIGN.md's causes and two that only the usage shows (core/usage/cache.py, `CacheTracker.settle`):
"evicted": nothing of ours changed the prefix and by our clock its TTL had not run out, yet the call
read well below the last request's cached prefix (the server dropped it); "lookback_exceeded": the
same, where the request added more blocks after that prefix than the API looks back over from a
breakpoint (20), so the API could not find it. A usage-shown miss of a cache that may have gone
cold by our clock before the reply ended is "ttl_expired"."""

# The API's diagnostics.cache_miss_reason.type for each of our causes when both see the same thing
# (None: the API's comparison of request structure finds no divergence).
_API_TYPE: dict[str, str | None] = {
    "first_call": None,
    "ttl_expired": None,
    "model_changed": "model_changed",
    "system_changed": "system_changed",
    "tools_changed": "tools_changed",
    "messages_changed": "messages_changed",
    "evicted": None,
    "lookback_exceeded": None,
}
API_DIAGNOSES = frozenset({"model_changed", "system_changed", "tools_changed", "messages_changed"})
"""The API's reasons that name a divergence (the others, previous_message_not_found and unavailable,
say it could not compare)."""


@dataclass(frozen=True)
class CacheMiss:
    """**contract** Why a call did not reuse the previous request's whole cached prefix.

    `cause`: one of MISS_CAUSES. `by`: what of ours changed the prefix (a compaction step, "compact",
    or a steering action: "drop", "restore", "pin", "unpin", "undo"); None when nothing of ours did.
    `path`: the first place that differs from the previous request ("system", "tools",
    "messages.K" or "messages.K.content.J"). `tokens`: the previous request's cached prefix from
    `path` on (written again). `api_reason`: the API's `diagnostics.cache_miss_reason.type`.
    """

    cause: str
    by: str | None
    path: str | None
    tokens: int | None
    api_reason: str | None = None

    @property
    def agrees(self) -> bool | None:
        """Whether the API's diagnosis names the same divergence as ours (None: it named none)."""
        return agrees(self.cause, self.api_reason) if self.api_reason is not None else None

    def describe(self) -> str:
        """One line: the cause, where, what did it and the tokens written again (and the API's reason)."""
        text = self.cause.replace("_", " ")
        if self.path:
            text += f" at {self.path}"
        if self.by:
            text += f" by {self.by}"
        if self.tokens:
            text += f", {self.tokens:,} cached tokens written again"
        if self.api_reason:
            text += f" (API: {self.api_reason}{'' if self.agrees is not False else ', which disagrees'})"
        return text


@dataclass(frozen=True)
class PrefixChange:
    """The diff of a request from the previous one where its cached prefix was left: the place, and
    the block that was there and the one there now, each in a few words (untrusted text: data)."""

    path: str
    before: str
    after: str


def agrees(cause: str | None, api_reason: str | None) -> bool | None:
    """Whether our cause (None: no miss) and the API's answer agree, where the API answered: its
    reason's type, or None for "no divergence" (the response's `diagnostics` was null). None when its
    reason says nothing about the structure (previous_message_not_found, unavailable)."""
    if api_reason is not None and api_reason not in API_DIAGNOSES:
        return None
    ours = _API_TYPE.get(cause) if cause is not None else None
    return ours == api_reason


__all__ = ["API_DIAGNOSES", "MISS_CAUSES", "CacheMiss", "MissCause", "PrefixChange", "agrees"]


def tokens_text(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:,}"


def cache_cost_line(invalidated: int | None, break_even: float | None) -> str:
    """ "re-writes 31k cached tokens: pays back after 87 calls" (empty when nothing is known)."""
    if invalidated is None:
        return ""
    if invalidated == 0:
        return "re-writes no cached tokens"
    text = f"re-writes {tokens_text(invalidated)} cached tokens"
    if break_even is None:
        return f"{text}: saves nothing, never pays back"
    return f"{text}: pays back after {break_even:,.0f} call{'s' if round(break_even) != 1 else ''}"
