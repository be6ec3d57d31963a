"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from core.agent import Agent
from tests.support.fakeapi import FakeAnthropicServer


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropicServer]:
    """A started fake Anthropic Messages API on 127.0.0.1 (see tests/support/fakeapi.py); stopped afterwards."""
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def anthropic_env(fake_api: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropicServer:
    """Point ANTHROPIC_BASE_URL at the fake server with a dummy ANTHROPIC_API_KEY; returns the server."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    return fake_api


@pytest.fixture
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Anthropic key in the environment: the agent runs on the offline model (a test module
    opts in with `pytestmark = pytest.mark.usefixtures("no_api_key")`)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


@pytest.fixture
async def made() -> AsyncIterator[list[Agent]]:
    """A list a test appends the agents it makes to; each is closed (its session flushed) afterwards."""
    agents: list[Agent] = []
    yield agents
    for agent in agents:
        await agent.aclose()
