"""The agent: one conversation with a model, its tools and its compaction pipeline.

The contract name (DESIGN.md) is importable from here: `Agent`.
"""

from __future__ import annotations

from core.agent.agent import Agent

__all__ = ["Agent"]
