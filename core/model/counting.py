"""The token size of the next request, and the model's window: exact from the API when it can be had.

`count_next_request` asks the model's `count_tokens` (system, tools and messages as they will be
sent) and falls back to the tiktoken estimate, labelled with the reason, when the model cannot count
(offline), is rate limited (429), fails, or answers something that is not a plausible count (not a
whole number, below 1, or far above what a request of this size can hold: `most_tokens`). A UI runs
it in a worker after the history changes, debounced: `debounce` seconds of sleep first, so a newer
change cancels an older count (Textual's `exclusive=True` worker does the cancelling).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from core.history.sizes import estimate_chars
from core.history.store import History
from core.history.tokens import TokenCounter
from core.model.base import Model, ModelError
from core.text import one_line
from core.usage.prices import Window, window_for
from core.values.samples import TokenCount


def estimate_request(tokens: TokenCounter, system: str, messages: Sequence[Any], tools: Sequence[Any]) -> int:
    """The tiktoken estimate of a whole request: messages (cached per message), system and tools."""
    extra = tokens.count_text(system) if system else 0
    if tools:
        extra += tokens.count_text(json.dumps(list(tools), default=str, ensure_ascii=False))
    return tokens.count(messages) + extra


PER_CHAR = 4  # generous: a token covers at least one character of the request's JSON
OVERHEAD_TOKENS = 100_000  # and more than any system text the API adds around a request


def most_tokens(system: str, messages: Sequence[Any], tools: Sequence[Any]) -> int:
    """The largest count_tokens answer believable for this request; anything above is a bad answer,
    not a count (a huge number would be shown as exact and make the gauge lie)."""
    chars = messages.chars if isinstance(messages, History) else estimate_chars(messages)
    chars += len(system) + (len(json.dumps(list(tools), default=str, ensure_ascii=False)) if tools else 0)
    return PER_CHAR * chars + OVERHEAD_TOKENS


async def count_next_request(
    model: Model,
    tokens: TokenCounter,
    *,
    system: str,
    messages: Sequence[Any],
    tools: Sequence[Any],
    debounce: float = 0.0,
) -> TokenCount:
    """The exact size of the next request when the model can count it, else the labelled estimate."""
    if debounce > 0:
        await asyncio.sleep(debounce)
    snapshot, tool_list = list(messages), list(tools)
    counter = getattr(model, "count_tokens", None)
    reason = "offline" if getattr(model, "offline", False) else "the model cannot count"
    if counter is not None:
        try:
            exact = await counter(system=system, messages=snapshot, tools=tool_list)
        except ModelError as error:
            reason = (
                "count_tokens rate limited (429)"
                if error.kind == "rate_limit"
                else f"count_tokens failed: {error}"
            )
        else:
            if exact is not None:
                most = most_tokens(system, messages, tool_list)
                if type(exact) is int and 1 <= exact <= most:
                    return TokenCount(exact, "api")
                reason = f"count_tokens answered {one_line(repr(exact), 40)}, implausible for this request"
    # A History is counted as it is (its tally costs the new messages only); a snapshot would be a plain list.
    counted = messages if isinstance(messages, History) else snapshot
    estimate = await asyncio.to_thread(estimate_request, tokens, system, counted, tool_list)
    return TokenCount(estimate, "estimate", reason)


async def model_window(model: Model, setting: int | None = None) -> Window:
    """The model's window: the API's figure, else the table in core/usage/prices.py, else `setting`."""
    asker = getattr(model, "context_window", None)
    api_tokens: int | None = None
    if asker is not None and not getattr(model, "offline", False):
        try:
            api_tokens = await asker()
        except ModelError:
            api_tokens = None
    return window_for(model.name, api_tokens, setting)


__all__ = ["count_next_request", "estimate_request", "model_window", "most_tokens"]
