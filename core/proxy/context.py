"""What the inspector asks about the conversation a proxy view shows, answered from the calls it was handed.

The inspector asks its `ContextSource` two things: after a change, a forecast (the history's figures
and the request's size in tokens), and once, the model's window. For the proxy there is no agent to
ask: the view hands `ProxyContext` each call of the conversation it shows (from the watch's events,
never by reading the watch back), and the answers come from that call. The request's size is the
API's own figure once the reply reported its usage (exact), else the tiktoken estimate of the whole
request (system prompt and tool schemas included), labelled as waiting for the reply.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from core.events import ContextMeasured, Forecast
from core.history.tokens import TokenCounter
from core.proxy.calls import ProxyCall
from core.proxy.openai import window_of
from core.usage.prices import Window, window_for
from core.values.samples import TokenCount


class ProxyContext:
    """The inspector's `ContextSource` for one conversation of the proxy (see the module docstring)."""

    def __init__(self, limit: int, counter: TokenCounter | None = None) -> None:
        self.limit = limit
        self.counter = counter or TokenCounter()
        self.call: ProxyCall | None = None
        """The call the view shows (the latest of its conversation); None before the first."""

    @property
    def running(self) -> bool:
        """No turn of ctxtui's runs here: every change is a new call to show."""
        return False

    def follow(self, call: ProxyCall | None) -> None:
        """The view now shows `call` (a new call of its conversation, the same call answered, or another
        conversation's latest)."""
        self.call = call

    async def forecast(self, debounce: float = 0.0) -> AsyncIterator[Forecast]:
        """The shown request's figures: its size in chars with the tiktoken estimate of its messages, then
        its size in tokens (the API's once answered)."""
        if debounce > 0:
            await asyncio.sleep(debounce)
        call = self.call
        if call is None:
            return
        messages = list(call.messages)
        estimate = await self.counter.count_async(messages)
        usage = call.usage
        yield ContextMeasured(
            chars=call.chars,
            limit=self.limit,
            messages=len(messages),
            tokens=estimate,
            input_tokens=usage.input_tokens if usage is not None else None,
        )
        if usage is not None:
            yield TokenCount(usage.prompt_tokens, "api")
            return
        extra = await asyncio.to_thread(self._request_extra, call)
        reason = "reply pending" if not call.finished else "no usage in the reply"
        yield TokenCount(estimate + extra, "estimate", reason)

    def _request_extra(self, call: ProxyCall) -> int:
        """Tokens (estimated) of what the request carries beside its messages: system prompt, tools."""
        total = 0
        for part in (call.system, call.tools):
            if part:
                text = part if isinstance(part, str) else json.dumps(part, default=str, ensure_ascii=False)
                total += self.counter.count_text(text)
        return total

    async def window(self) -> Window:
        """The window of the shown call's model (the table's figure; the proxy asks no API of its own)."""
        model = self.call.model if self.call is not None else None
        if self.call is not None and self.call.wire != "messages":
            known = window_of(model)  # OpenAI's models: a small table (core/proxy/openai.py)
            if known is not None:
                return known
        return window_for(model or "")
