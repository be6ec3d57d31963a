"""Run-time settings: where to work, which model, how patient to be. Read from flags and env."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from core.compaction import CompactionSettings

DEFAULT_MODEL = "claude-sonnet-5-5"  # the newest Sonnet the installed SDK lists


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


ENV_PREFIX = "CTXTUI_"


def _convert(name: str, raw: str, current: Any) -> Any:
    try:
        return float(raw) if isinstance(current, float) else int(raw.replace("_", ""))
    except ValueError as error:
        raise ValueError(f"{name} needs a number, got {raw!r}") from error


def compaction_settings(overrides: list[str] | None = None, environ: dict[str, str] | None = None) -> CompactionSettings:
    """CompactionSettings from CTXTUI_<FIELD> environment variables, then `FIELD=VALUE` overrides.

    Raises ValueError with a one-line message for an unknown field or a bad value.
    """
    environ = dict(os.environ) if environ is None else environ
    base = CompactionSettings()
    names = {item.name for item in fields(CompactionSettings)}
    values: dict[str, Any] = {}
    for name in names:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw:
            values[name] = _convert(ENV_PREFIX + name.upper(), raw, getattr(base, name))
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in names:
            known = ", ".join(sorted(names))
            raise ValueError(f"--set takes FIELD=VALUE with FIELD one of: {known}")
        values[key] = _convert(key, raw.strip(), getattr(base, key))
    return replace(base, **values)
