"""The main screen while a reply streams: a fast stream is painted as it streams, and streamed pieces
keep their order with the events around them (tui/screens/main.py `drive`, tui/messages.py `Streamed`).

The real app and the real agent, over a model that streams as fast as the event loop lets it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from core import events
from core.agent import Agent
from core.config import Settings
from core.model.base import ModelEvent, ModelResponse, TextChunk
from tests.support.pilot import settled, wait_for
from tui.app import CtxApp
from tui.widgets.chat_blocks import AssistantBlock
from tui.widgets.tool_block import ToolBlock


class FastModel:
    """Streams `count` words with nothing but `asyncio.sleep(0)` between them (a fast connection, or a
    burst the network delivered at once), and every `every` words notes how tall the reply stands
    on the screen so far (its laid-out height)."""

    name = "fast-stream"
    offline = True
    label = "test model (fast stream)"

    def __init__(self, count: int, every: int) -> None:
        self.count = count
        self.every = every
        self.app: CtxApp | None = None
        self.heights: list[int] = []

    def words(self) -> list[str]:
        return [f"word{index}" + ("\n\n" if index % 40 == 39 else " ") for index in range(self.count)]

    async def stream(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int
    ) -> AsyncIterator[ModelEvent]:
        words = self.words()
        for index, word in enumerate(words):
            await asyncio.sleep(0)
            if index % self.every == 0 and index and self.app is not None:
                self.heights.append(self.reply_height(self.app))
            yield TextChunk(word)
        yield ModelResponse(content=[{"type": "text", "text": "".join(words)}], stop_reason="end_turn",
                            usage={"input_tokens": 10, "output_tokens": self.count})

    @staticmethod
    def reply_height(app: CtxApp) -> int:
        blocks = [block for block in app.chat.transcript.query(AssistantBlock) if not block.has_class("welcome")]
        return blocks[-1].size.height if blocks else 0

    async def summarize(self, conversation_text: str, focus: str | None) -> str:
        return "summary"

    async def aclose(self) -> None:
        return None


@pytest.mark.slow
async def test_a_fast_stream_is_painted_while_it_streams(tmp_path: Path) -> None:
    """One message per chunk kept the screen's queue full, and Textual lays out and paints only when
    the screen is idle: the reply stood still for hundreds of words, then jumped. Now it grows as
    it streams: between almost every two probes 100 words apart, the reply on screen is taller."""
    model = FastModel(2_500, every=100)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True), model=model)  # type: ignore[arg-type]
    app = CtxApp(agent)
    model.app = app
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.built_agent is not None)
        await app.submit("stream please")
        await settled(pilot, app, 1)
        heights = model.heights
        grew = sum(later > earlier for earlier, later in pairwise(heights))
        assert len(heights) == 24 and grew >= 18, heights
        reply = [block for block in app.chat.transcript.query(AssistantBlock) if not block.has_class("welcome")]
        assert [block.source for block in reply] == ["".join(model.words())]
    await agent.aclose()


async def test_streamed_pieces_keep_their_order_with_the_events_around_them(tmp_path: Path) -> None:
    """Pieces that arrive faster than the screen takes them travel together, but never past another
    event: text before a tool call stays before it, one tool's output never lands in another's block."""
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)

    async def turn() -> AsyncGenerator[events.AgentEvent, None]:
        for piece in ("first ", "part "):
            yield events.TextDelta(piece)
        yield events.ToolCallStarted("toolu_1", "bash", {"command": "one"})
        for piece in ("one-a\n", "one-b\n"):
            yield events.ToolOutputDelta("toolu_1", piece)
        yield events.ToolCallStarted("toolu_2", "bash", {"command": "two"})
        yield events.ToolOutputDelta("toolu_2", "two-a\n")
        yield events.ToolOutputDelta("toolu_1", "one-c\n")
        yield events.ToolOutputDelta("toolu_2", "two-b\n")
        for piece in ("second ", "part"):
            yield events.TextDelta(piece)

    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.built_agent is not None)
        done = app.turns_completed
        app.main.drive(turn())
        await wait_for(pilot, lambda: app.turns_completed > done)
        await pilot.pause()
        shown = [block for block in app.chat.transcript.children
                 if isinstance(block, ToolBlock | AssistantBlock) and not block.has_class("welcome")]
        assert [type(block).__name__ for block in shown] == ["AssistantBlock", "ToolBlock", "ToolBlock", "AssistantBlock"]
        first, one, two, second = shown
        assert isinstance(first, AssistantBlock) and first.source == "first part "
        assert isinstance(second, AssistantBlock) and second.source == "second part"
        assert isinstance(one, ToolBlock) and one.live_output == "one-a\none-b\none-c\n"
        assert isinstance(two, ToolBlock) and two.live_output == "two-a\ntwo-b\n"
    await agent.aclose()
