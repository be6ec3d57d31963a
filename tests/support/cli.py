"""Running the real `ctxtui` command as a subprocess, with or without an API key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.fakeapi import FakeAnthropicServer

CTXTUI = Path(sys.executable).with_name("ctxtui")
STEP_LINE = re.compile(
    r"^\[(?P<step>[a-z_]+)\] (?P<before>[\d,]+) -> (?P<after>[\d,]+) chars, "
    r"(?P<affected>\d+) message\(s\) affected, files: (?P<files>.+)$"
)


def command() -> list[str]:
    return [str(CTXTUI)] if CTXTUI.exists() else [sys.executable, "-m", "tui.cli"]


def env_without_key(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def ctxtui(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(), *args], env=env if env is not None else env_without_key(),
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def api_env(server: FakeAnthropicServer, key: str = "test-key-not-real") -> dict[str, str]:
    return env_without_key(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY=key)
