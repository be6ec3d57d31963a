"""Answering `PermissionRequested` in tests the way a consumer of `run_turn` does.

A test gives an agent a policy: an async `(tool, input) -> bool` function (True allows the call once),
or None to deny every request. `run(agent, text)` then drives one turn and answers each request with
that policy, as the TUI's dialog or headless `--yes` would.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from core.agent import Agent
from core.events import AgentEvent, PermissionRequested

Policy = Callable[[str, dict[str, Any]], Awaitable[bool]]

_POLICIES: weakref.WeakKeyDictionary[Agent, Policy | None] = weakref.WeakKeyDictionary()


def give_policy(agent: Agent, policy: Policy | None) -> Agent:
    _POLICIES[agent] = policy
    return agent


async def answer(event: AgentEvent, policy: Policy | None) -> None:
    if isinstance(event, PermissionRequested) and not event.reply.done():
        allowed = policy is not None and await policy(event.tool, event.input)
        event.reply.set_result("once" if allowed else "deny")


async def answered(agent: Agent, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
    """Pass `events` through, answering every permission request with the agent's policy."""
    policy = _POLICIES.get(agent)
    async for event in events:
        await answer(event, policy)
        yield event


async def run(agent: Agent, text: str) -> list[AgentEvent]:
    return [event async for event in answered(agent, agent.run_turn(text))]
