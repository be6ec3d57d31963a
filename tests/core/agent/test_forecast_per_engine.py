"""The forecast of the next call says what that call will really do, under every engine (issue 30,
item 18): under a server engine the client runs tool_result_budget only (the server edits the rest),
so the preview (f4), the marks of what the next call shortens and the gauge's "next call" line name
no other client step. Online, against the loopback fake's model of the API's context management."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import CompactionStep, NextCallPreview, TurnFinished
from tests.support.fakeapi import FakeAnthropicServer, text_reply, tool_reply
from tests.support.permission import run

Build = Callable[..., Agent]
LIMIT = CompactionSettings(context_char_limit=20_000)
CLIENT_STEPS = ("snip_compact", "micro_compact", "fit_tool_results", "compact_history")
FILES = 12  # 240k chars: past the server's lowest compaction trigger (50k tokens)


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    agents: list[Agent] = []
    for number in range(FILES):
        (tmp_path / f"f{number}.txt").write_text(f"f{number} line of a file\n" * 1_000, encoding="utf-8")

    def make(**overrides: Any) -> Agent:
        values: dict[str, Any] = {"workdir": tmp_path, "model": "claude-test", "max_retries": 0,
                                  "request_timeout": 5.0, "compaction": LIMIT, "yes": True, "auto_compact": False}
        values.update(overrides)
        agent = Agent.from_settings(Settings(**values), allow_all=True)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()


async def read_all(agent: Agent, server: FakeAnthropicServer) -> None:
    server.script(*[tool_reply([(f"toolu_{number}", "read_file", {"path": f"f{number}.txt"})])
                    for number in range(FILES)], text_reply("read them all"))
    events = await run(agent, "read every file")
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None, events[-1]
    assert agent.chars > LIMIT.context_char_limit  # the client pipeline would shorten this history


async def forecast(agent: Agent) -> NextCallPreview:
    return next([item async for item in agent.forecast() if isinstance(item, NextCallPreview)].__iter__())


def names(steps: tuple[CompactionStep, ...] | list[CompactionStep]) -> set[str]:
    return {step.step for step in steps}


@pytest.mark.parametrize("engine", ["server-clear", "server-compact"])
async def test_under_a_server_engine_the_forecast_names_only_what_the_client_runs(
        build: Build, anthropic_env: FakeAnthropicServer, engine: str) -> None:
    agent = build(engine=engine, clear_trigger_tokens=3_000, compact_trigger_tokens=50_000)
    await read_all(agent, anthropic_env)
    agent.auto_compact = True
    if engine == "server-compact":
        assert anthropic_env.context.compactions >= 1  # the server compacted during the turn
    preview = await forecast(agent)
    assert not names(preview.steps) & set(CLIENT_STEPS), [step.describe() for step in preview.steps]
    assert preview.fired == () and preview.shortened == frozenset()
    assert not names(await agent.preview()) & set(CLIENT_STEPS)  # f4's preview
    assert await agent.recompact_warning() is None
    # and what the API does on its side
    assert preview.server == ("the API clears old tool results (all but the newest 3) once a request reaches "
                              "3,000 input tokens" if engine == "server-clear" else
                              "the API compacts the conversation once a request reaches 50,000 input tokens")


async def test_under_the_client_engine_the_same_history_forecasts_the_pipeline(
        build: Build, anthropic_env: FakeAnthropicServer) -> None:
    agent = build()
    await read_all(agent, anthropic_env)
    agent.auto_compact = True
    preview = await forecast(agent)
    assert {"micro_compact", "fit_tool_results"} & set(preview.fired)
    assert preview.shortened and preview.server is None

