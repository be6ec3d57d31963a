"""The agent: one conversation with a model, its tools and its compaction pipeline.

The contract name (DESIGN.md) is importable from here: `Agent`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.agent.agent import Agent

__getattr__ = lazy_exports(
    __name__,
    {
        "Agent": "core.agent.agent",
    },
)

__all__ = ["Agent"]
