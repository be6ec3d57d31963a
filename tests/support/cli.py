"""Running the real `ctxtui` command, as a subprocess (with or without an API key) or in this process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def clean_cli_env(config_home: Path, monkeypatch: Any) -> None:
    """No config file, no CTXTUI_* or ANTHROPIC_* variable of the person running the tests reaches an
    in-process `main([...])`."""
    for name in list(os.environ):
        if name.startswith(("CTXTUI_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))


def run_main(capsys: Any, *args: str) -> tuple[int, str, str]:
    """`ctxtui ARGS` in this process: the exit code, stdout and stderr."""
    from tui.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
