"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakeapi import FakeAnthropicServer


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropicServer]:
    """A started fake Anthropic Messages API on 127.0.0.1 (see tests/fakeapi.py); stopped afterwards."""
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def anthropic_env(fake_api: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropicServer:
    """Point ANTHROPIC_BASE_URL at the fake server with a dummy ANTHROPIC_API_KEY; returns the server."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    return fake_api
