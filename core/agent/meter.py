"""The context's figures: the history's size and tokens, the next request's size, the model's window.

`forecast` is what a view asks after a change (the one question it asks): the preview of the next
prepare and the history's figures when no turn runs (a turn yields its own), then the request's size,
exact from count_tokens when the model can count, else the labelled tiktoken estimate.

`plan` decides what the next prepare holds back, for the turn (`Agent._prepare`) and for the
forecast alike, so the forecast says what the call will really do under every engine: a server
engine leaves the client tool_result_budget only, the cache-aware timing may hold steps back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import Any

from core.agent.conversation import Conversation
from core.agent.economics import Economics
from core.agent.engine import EngineRunner
from core.agent.keeper import ContextKeeper
from core.events import CompactionHeld, CompactionStep, ContextMeasured, Forecast, NextCallPreview
from core.history.tokens import TokenCounter
from core.model.base import Model
from core.usage.counting import count_next_request, model_window
from core.usage.prices import Window
from core.usage.timeline import TokenCount


class ContextMeter:
    """Measures the conversation's context and what the next request will be."""

    def __init__(
        self,
        conversation: Conversation,
        keeper: ContextKeeper,
        economics: Economics,
        engine: EngineRunner,
        model: Model,
        tokens: TokenCounter,
        system_prompt: str,
        tools: Sequence[dict[str, Any]],
    ) -> None:
        self.conversation = conversation
        self.keeper = keeper
        self.economics = economics
        self.engine = engine
        self.model = model
        self.tokens = tokens
        self.system_prompt = system_prompt
        self.tools = tools
        self.last_input_tokens: int | None = None
        """The API's prompt tokens of the last reply (input, cache reads and writes); None offline."""

    async def measure(self) -> ContextMeasured:
        """The figures of the history as it is now (tokens counted off the event loop)."""
        history = self.conversation.history
        tokens: int | None
        try:
            tokens = await self.tokens.count_async(history)
        except Exception:
            tokens = None
        return ContextMeasured(
            chars=history.chars,
            limit=self.keeper.limit,
            messages=len(history),
            tokens=tokens,
            input_tokens=self.last_input_tokens,
        )

    async def count_next_request(self, debounce: float = 0.0) -> TokenCount:
        """The size of the next request: exact from the model's count_tokens, else the labelled estimate."""
        return await count_next_request(
            self.model,
            self.tokens,
            system=self.system_prompt,
            messages=self.conversation.history,
            tools=list(self.tools),
            debounce=debounce,
        )

    async def window(self) -> Window:
        """The model's context window: the Models API's figure, else the table, else unknown."""
        return await model_window(self.model)

    async def forecast(self, busy: Callable[[], bool], debounce: float = 0.0) -> AsyncIterator[Forecast]:
        """What the next call would be (see the module docstring); `busy` says whether a turn runs."""
        if debounce > 0:
            await asyncio.sleep(debounce)
        if not busy():
            preview = await self._preview(busy)
            if preview is not None:
                yield preview
                yield await self.measure()
        yield await self.count_next_request()

    async def _preview(self, busy: Callable[[], bool]) -> NextCallPreview | None:
        """The next prepare's steps, priced, the results they would shorten and what would wait for the
        cache (None if a turn began meanwhile)."""
        steps, held = await self.next_steps() if self.keeper.auto_compact else ([], None)
        if busy():
            return None
        return replace(
            self.keeper.next_call(steps, held, self.economics.timing), server=self.engine.forecast()
        )

    async def plan(self, request: str) -> tuple[bool, CompactionHeld | None]:
        """What the next prepare holds back: (hold, held). `hold`: only tool_result_budget runs, under
        a server engine (the server edits the rest) or while the cache-aware timing keeps the other
        steps waiting (`held` says which, and what they would cost now)."""
        if self.engine.hold:
            return True, None
        held = await self.economics.plan(self.keeper, request, self.system_prompt, self.tools)
        return held is not None, held

    async def next_steps(self) -> tuple[list[CompactionStep], CompactionHeld | None]:
        """What the next prepare would run now, each step priced, and what would wait for the cache."""
        request = self.conversation.request
        hold, held = await self.plan(request)
        return await self.economics.preview(self.keeper, request, hold), held
