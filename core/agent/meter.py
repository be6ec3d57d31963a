"""The context's figures: the history's size and tokens, the next request's size, the model's window.

The request's size is exact from count_tokens when the model can count, else the labelled tiktoken
estimate. What the next prepare would do is the schedule's (core/agent/schedule.py); the agent puts
the two together in its forecast.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.agent.state import ConversationState
from core.events import ContextMeasured
from core.history.tokens import TokenCounter
from core.model.base import Model
from core.model.counting import count_next_request, model_window
from core.usage.prices import Window
from core.values.samples import TokenCount


class ContextMeter:
    """Measures the conversation's context and what the next request will be."""

    def __init__(
        self,
        state: ConversationState,
        limit: int,
        model: Model,
        tokens: TokenCounter,
        system_prompt: str,
        tools: Sequence[dict[str, Any]],
    ) -> None:
        self.state = state
        self.limit = limit
        self.model = model
        self.tokens = tokens
        self.system_prompt = system_prompt
        self.tools = tools

    async def measure(self) -> ContextMeasured:
        """The figures of the history as it is now (tokens counted off the event loop)."""
        history = self.state.history
        tokens: int | None
        try:
            tokens = await self.tokens.count_async(history)
        except Exception:
            tokens = None
        return ContextMeasured(
            chars=history.chars,
            limit=self.limit,
            messages=len(history),
            tokens=tokens,
            input_tokens=self.state.last_input_tokens,
        )

    async def count_next_request(self, debounce: float = 0.0) -> TokenCount:
        """The size of the next request: exact from the model's count_tokens, else the labelled estimate."""
        return await count_next_request(
            self.model,
            self.tokens,
            system=self.system_prompt,
            messages=self.state.history,
            tools=list(self.tools),
            debounce=debounce,
        )

    async def window(self) -> Window:
        """The model's context window: the Models API's figure, else the table, else unknown."""
        return await model_window(self.model)
