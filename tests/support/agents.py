"""Agents on the real anthropic SDK pointed at the loopback fake, for tests that build several.

`sdk_agents(workdir)` yields `make(**overrides)`: an `Agent.from_settings(settings_for(workdir, ...))`
given a permission policy (tests/support/permission.py), and closes every agent it made (flushing
their session logs) when the test ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from core.agent import Agent
from tests.support.fakeapi import settings_for
from tests.support.permission import Policy, give_policy

Build = Callable[..., Agent]
_UNSET: Any = object()


async def allow(tool: str, tool_input: dict[str, Any]) -> bool:
    """A policy that allows every call."""
    return True


@asynccontextmanager
async def sdk_agents(
    workdir: Path, *, policy: Policy | None = allow, defaults: dict[str, Any] | None = None,
    clock: Callable[[], float] | None = None,
) -> AsyncIterator[Build]:
    """`make(workdir=None, permission=<policy>, **overrides)`: settings are `defaults` then `overrides`;
    `clock`, when given, is the agent's economics clock (the fake cache's)."""
    agents: list[Agent] = []

    def make(workdir_: Path | None = None, permission: Policy | None = _UNSET, **overrides: Any) -> Agent:
        settings = settings_for(workdir_ or workdir, **{**(defaults or {}), **overrides})
        agent = give_policy(Agent.from_settings(settings), policy if permission is _UNSET else permission)
        if clock is not None:
            agent.state.clock = clock
        agents.append(agent)
        return agent

    try:
        yield make
    finally:
        for agent in agents:
            await agent.aclose()


__all__ = ["Build", "allow", "sdk_agents"]
