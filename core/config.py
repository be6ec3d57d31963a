"""Run-time settings: where to work, which model, how patient to be. Read from flags and env."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from core.compaction import CompactionSettings

DEFAULT_MODEL = "claude-sonnet-4-5"


def default_model() -> str:
    """ANTHROPIC_MODEL if set, else a current Sonnet model."""
    return os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL


def api_key_configured() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


@dataclass
class Settings:
    """Everything the agent needs to start."""

    workdir: Path = field(default_factory=Path.cwd)
    model: str = field(default_factory=default_model)
    offline: bool = False
    yes: bool = False
    resume: bool = False
    max_tokens: int = 8_000
    bash_timeout: float = 120.0
    tool_output_limit: int = 200_000
    read_line_limit: int = 2_000
    request_timeout: float = 120.0
    max_retries: int = 2
    retry_after_cap: float = 10.0
    offline_chunk_delay: float = 0.0
    compaction: CompactionSettings = field(default_factory=CompactionSettings)

    @property
    def use_offline(self) -> bool:
        """Offline when asked to, or when no API key is configured."""
        return self.offline or not api_key_configured()

    @property
    def state_dir(self) -> Path:
        """Where sessions are kept (inside the workdir)."""
        return self.workdir / ".ctxtui"
