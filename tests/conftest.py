"""Shared pytest fixtures."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

# The suite runs in several processes (pytest-xdist) that each import and assertion-rewrite every
# module, and starts the real command well over a hundred times: with PYTHONDONTWRITEBYTECODE set (as in
# many container images) every one of them would compile the project from source again, on every run.
# The tests write the bytecode to __pycache__ (ignored by git) as a plain `python` would; the command
# they start only reads it.
sys.dont_write_bytecode = False

from core.agent import Agent  # noqa: E402 (after the line above)
from tests.support.fakeapi import FakeAnthropicServer  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def own_user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each test process (each pytest-xdist worker) gets its own empty XDG config, data, state and cache
    folders, under its own pytest temp folder: a test that saves a setting (the palette's theme) or
    reads the config file never meets another worker's file, nor the config of the person running the
    tests. The real command started as a subprocess (or in tmux) inherits them. A test that needs a
    config file sets XDG_CONFIG_HOME itself (monkeypatch), as before.

    No COLUMNS or LINES either: pytest-xdist's workers have COLUMNS=80 and LINES=24, which a serial run
    has not; Textual and rich take them as the terminal's size."""
    root = tmp_path_factory.mktemp("user-dirs")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("COLUMNS", raising=False)
        patch.delenv("LINES", raising=False)
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            folder = root / name.removeprefix("XDG_").removesuffix("_HOME").lower()
            folder.mkdir()
            patch.setenv(name, str(folder))
        yield root


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
