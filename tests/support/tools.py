"""Helpers of the tool tests: a ToolBox on a directory, and watching the processes bash starts
(through /proc: a zombie waiting to be reaped counts as ended)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.tools import ToolBox, Workspace


def make_tools(root: Path, **kwargs: Any) -> ToolBox:
    return ToolBox(Workspace(root), **kwargs)


def _state_and_group(pid: int | str) -> tuple[str, int] | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2 :].split()
    return fields[0], int(fields[2])


def alive(pid: int) -> bool:
    """Whether `pid` runs."""
    found = _state_and_group(pid)
    return found is not None and found[0] != "Z"


def live_group_members(pgid: int) -> list[int]:
    """Pids of the processes in group `pgid` that still run."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _state_and_group(entry)) is not None:
            state, group = found
            if group == pgid and state != "Z":
                members.append(int(entry))
    return members


async def eventually(predicate: Callable[[], bool], within: float = 5.0) -> bool:
    """Poll `predicate` until it holds (True) or `within` seconds have passed (its last answer)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return bool(predicate())


def read_pid(path: Path) -> int | None:
    """The pid a command wrote to `path`, or None while it is missing or half written."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return int(text) if text.endswith("\n") and text.strip().isdigit() else None


async def wait_for_pid_file(path: Path) -> int:
    assert await eventually(lambda: read_pid(path) is not None), "pid file never written"
    pid = read_pid(path)
    assert pid is not None
    return pid
