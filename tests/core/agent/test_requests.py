"""How a request enters the history: after a failed turn, and when it alone is larger than the context."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from core.agent import Agent
from core.archive import Archive
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import CompactionStep, ErrorEvent, Notice, TurnFinished
from core.history import pairing_problems
from core.history.sizes import request_chars
from core.markers import UNANSWERED_MARK
from core.model.base import ModelError, ModelEvent, ModelResponse, TextChunk


class FlakyModel:
    """Fails the calls whose number is in `failing`, else answers with the text it was asked."""

    name = "flaky"
    label = "flaky test model"
    offline = True

    def __init__(self, failing: set[int]) -> None:
        self.failing = failing
        self.calls = 0
        self.seen: list[list[dict[str, Any]]] = []

    async def stream(self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     max_tokens: int) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        self.seen.append([dict(message) for message in messages])
        if self.calls in self.failing:
            raise ModelError("the API is down (test)", "api")
        text = f"answer {self.calls}"
        yield TextChunk(text)
        yield ModelResponse([{"type": "text", "text": text}], "end_turn")

    async def summarize(self, conversation_text: str, focus: str | None) -> str:
        return "summary"

    async def aclose(self) -> None:
        pass


def make(made: list[Agent], tmp_path: Path, model: Any, **compaction: Any) -> Agent:
    settings = Settings(workdir=tmp_path, offline=True, compaction=CompactionSettings(**compaction))
    agent = Agent.from_settings(settings, model=model)
    made.append(agent)
    return agent


async def run(agent: Agent, text: str) -> list[Any]:
    return [event async for event in agent.run_turn(text)]


async def test_a_new_request_after_a_failed_turn_marks_the_unanswered_one(made: list[Agent], tmp_path: Path) -> None:
    model = FlakyModel(failing={1})
    agent = make(made, tmp_path, model)
    first = await run(agent, "list the files")
    assert first[-1].error
    await run(agent, "show the README instead")
    sent = model.seen[-1]
    plain_requests = [m for m in sent if m["role"] == "user" and isinstance(m["content"], str)
                      and not m["content"].startswith(UNANSWERED_MARK)]
    assert [m["content"] for m in plain_requests] == ["show the README instead"]
    assert sent[0]["content"] == f"{UNANSWERED_MARK}\nlist the files"  # kept, nothing lost, clearly marked
    assert sent[-1] == {"role": "user", "content": "show the README instead"}
    assert agent.messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "answer 2"}]}
    assert pairing_problems(agent.messages) == []


async def test_the_same_request_sent_again_is_kept_once(made: list[Agent], tmp_path: Path) -> None:
    model = FlakyModel(failing={1})
    agent = make(made, tmp_path, model)
    await run(agent, "list the files")
    events = await run(agent, "list the files")
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    assert model.seen[-1] == [{"role": "user", "content": "list the files"}]


async def test_a_request_larger_than_the_limit_is_warned_about_before_the_call(
    made: list[Agent], tmp_path: Path
) -> None:
    model = FlakyModel(failing=set())
    agent = make(made, tmp_path, model, context_char_limit=5_000)
    huge = "x" * 20_000
    events = await run(agent, huge)
    warnings = [e for e in events if isinstance(e, Notice) and e.kind == "warning"]
    assert len(warnings) == 1 and "5,000" in warnings[0].message
    first_call = next(i for i, e in enumerate(events) if type(e).__name__ == "TextDelta")
    assert events.index(warnings[0]) < first_call


async def test_a_request_larger_than_the_limit_is_said_once_and_logs_no_empty_step(
    made: list[Agent], tmp_path: Path
) -> None:
    """As the new user saw it: the oversize notice, then a `compact_history 60,035 -> 60,035` step that
    changed nothing (after a summary call thrown away). Now: the notice only."""
    model = FlakyModel(failing=set())
    summaries: list[str] = []

    async def summarize(conversation_text: str, focus: str | None) -> str:
        summaries.append(conversation_text)
        return "summary"

    model.summarize = summarize  # type: ignore[method-assign]
    agent = make(made, tmp_path, model, context_char_limit=5_000)
    huge = "y" * 6_000
    events = await run(agent, huge)
    said = [e for e in events if isinstance(e, Notice | CompactionStep | ErrorEvent)]
    # its size as every view gives it: its message's chars in the context (core.history.sizes.request_chars)
    assert len(said) == 1 and isinstance(said[0], Notice) and f"{request_chars(huge):,} chars" in said[0].message
    assert summaries == [] and model.calls == 1  # no summary asked for, one call for the reply
    assert agent.timeline[-1].steps == ()
    await agent.aclose()
    assert agent.session is not None
    records = [json.loads(line) for line in agent.session.path.read_text(encoding="utf-8").splitlines()]
    assert not [record for record in records if "compact_history" in json.dumps(record)]


async def test_a_long_request_can_be_archived_for_the_model_to_read(made: list[Agent], tmp_path: Path) -> None:
    agent = make(made, tmp_path, FlakyModel(failing=set()), context_char_limit=5_000)
    huge = "line of a pasted log\n" * 2_000
    short = await agent.archive_request(huge)
    assert len(short) < 5_000
    path = short.split(" is saved whole at ")[1].split(". Read it")[0]
    assert await Archive(tmp_path).read_text(path) == huge
    events = await run(agent, short)
    assert not [e for e in events if isinstance(e, Notice) and e.kind == "warning"]
