"""What a bash command may inherit and how all of it is stopped.

Secrets are scrubbed from the environment (the output of `env` lands in the history, the session
log and the archive). Every process a command starts carries a run tag in its environment, so one
that left the process group (`setsid`, a daemon) is still found in /proc and killed with the rest.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from collections.abc import Mapping

RUN_TAG_VARIABLE = "CTXTUI_TOOL_RUN"

_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "APIKEY",
        "CREDENTIAL",
        "CREDENTIALS",
        "COOKIE",
    }
)
_SECRET_SUFFIXES = ("_API_KEY", "_KEY", "_ACCESS_KEY", "_ACCESS_KEY_ID", "_AUTH", "_DSN")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable is likely to hold a secret: every ANTHROPIC_* variable, and any
    name with a word such as TOKEN, SECRET, PASSWORD or CREDENTIALS, or ending in _KEY / _API_KEY."""
    upper = name.upper()
    if upper.startswith("ANTHROPIC_") or upper == "ANTHROPIC":
        return True
    words = set(upper.replace("-", "_").split("_"))
    return bool(words & _SECRET_WORDS) or upper.endswith(_SECRET_SUFFIXES) or upper in {"KEY", "API_KEY"}


def tool_environment(environ: Mapping[str, str], tag: str) -> dict[str, str]:
    """`environ` without secrets, plus the run tag."""
    clean = {name: value for name, value in environ.items() if not is_secret_name(name)}
    clean[RUN_TAG_VARIABLE] = tag
    return clean


def new_run_tag() -> str:
    return secrets.token_hex(12)


def _tagged(tag: str) -> list[int]:
    """Pids of our own live processes whose environment carries the run tag (Linux /proc)."""
    needle = f"{RUN_TAG_VARIABLE}={tag}".encode()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def kill_tree(pgid: int, tag: str) -> None:
    """SIGKILL the command's process group, then every process that still carries its run tag
    (a `setsid` child, a daemonised grandchild), repeating while new ones turn up."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    for _ in range(10):
        found = _tagged(tag)
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
