"""Launch: an agent still to be built, and what a first frame shows of it before it exists.

Building an `Agent` imports the whole core (the pipeline, the tools, the sessions, the model):
most of the time a terminal app spends before its first frame. A `Launch` is the settings only; the
app draws its first frame from them (the workdir, the model's label, the limit, an empty history)
and then `build`s the agent, importing its modules in a thread so the event loop keeps answering
keys meanwhile. The archive comes with the agent (an empty history has nothing in it to open), so
its module is not loaded before the first frame either. Only a fresh session starts this way: a
resumed one is built first (its first frame shows the replayed history).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.config import Settings

if TYPE_CHECKING:
    from core.agent.agent import Agent


def model_label(settings: Settings) -> str:
    """What the app calls the model `settings` make: the model's name, or why the offline model runs."""
    if settings.use_offline:
        return "offline model (--offline)" if settings.offline else "offline model (no API key)"
    return settings.model


@dataclass(frozen=True)
class Launch:
    """The settings an agent is built from."""

    settings: Settings

    @classmethod
    def of(cls, settings: Settings) -> Launch:
        """A launch of `settings` (the workdir resolved, as `Agent.from_settings` resolves it)."""
        return cls(dataclasses.replace(settings, workdir=settings.workdir.resolve()))

    @property
    def workdir(self) -> Path:
        return self.settings.workdir

    @property
    def model_label(self) -> str:
        return model_label(self.settings)

    @property
    def offline(self) -> bool:
        return self.settings.use_offline

    async def build(self) -> Agent:
        """The agent: its modules imported in a worker thread, then built here (as `Agent.from_settings`)."""
        module = await asyncio.to_thread(importlib.import_module, "core.agent.agent")
        agent: Agent = module.Agent.from_settings(self.settings)
        return agent
