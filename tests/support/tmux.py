"""A private tmux server for end-to-end tests in a real terminal, and waiting on what it shows."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

TMUX = shutil.which("tmux")
WIDTH, HEIGHT = 160, 48
# Marker text the demo puts on screen once compaction has fired (chat notices or tree labels).
COMPACTION_TEXT = ("tool_result_budget", "fit_tool_results", "micro_compact", "snip_compact", "✂ snip", "↩ placeholder")


class Tmux:
    """A private tmux server (own socket name and TMUX_TMPDIR) with one session."""

    def __init__(self, root: Path) -> None:
        self.socket = f"ctxtui-e2e-{uuid.uuid4().hex[:8]}"
        self.session = "ctxtui"
        # COLUMNS/LINES (pytest-xdist's workers have 80x24) would override the pane's size in the app.
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith("TMUX") and key not in ("COLUMNS", "LINES")}
        self.env.update(TERM="xterm-256color", TMUX_TMPDIR=str(root), LANG="C.UTF-8", LC_ALL="C.UTF-8")
        for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
            self.env.pop(key, None)

    def run(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        assert TMUX is not None
        return subprocess.run(
            [TMUX, "-L", self.socket, "-f", "/dev/null", *args],
            env=self.env, capture_output=True, text=True, timeout=10, check=check,
        )

    def start(self, command: str) -> None:
        self.run("new-session", "-d", "-s", self.session, "-x", str(WIDTH), "-y", str(HEIGHT), command, check=True)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session).stdout

    def styled_screen(self) -> str:
        """The pane with its colours and attributes as escape sequences (what shows a cursor line)."""
        return self.run("capture-pane", "-p", "-e", "-t", self.session).stdout

    def keep_pane_after_exit(self) -> None:
        """Keep the pane (dead, with its title and last screen) when the program ends."""
        self.run("set-option", "-t", self.session, "remain-on-exit", "on", check=True)

    def exited(self) -> bool:
        """The program ended in a pane kept by `keep_pane_after_exit` (every byte it wrote has been read)."""
        return self.run("display-message", "-p", "-t", self.session, "#{pane_dead}").stdout.strip() == "1"

    def pane_title(self) -> str:
        return self.run("display-message", "-p", "-t", self.session, "#{pane_title}").stdout

    def alive(self) -> bool:
        return self.run("has-session", "-t", self.session).returncode == 0

    def kill_server(self) -> None:
        self.run("kill-server")

    def type(self, *names: str, literal: bool = False) -> None:
        """Send keys to the session (`literal`: `names` are text, not key names)."""
        self.run("send-keys", "-t", self.session, *(["-l"] if literal else []), *names, check=True)


@contextlib.contextmanager
def ctxtui_in_tmux(flags: str = "--offline") -> Iterator[tuple[Tmux, Path]]:
    """`python -m tui.cli FLAGS` started in a private tmux server on an empty workdir; yields the server
    and the workdir, and removes both afterwards."""
    root = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))
    workdir = root / "work"
    workdir.mkdir()
    tmux = Tmux(root)
    try:
        tmux.start(f"{sys.executable} -m tui.cli {flags} --workdir {workdir}")
        yield tmux, workdir
    finally:
        tmux.kill_server()
        shutil.rmtree(root, ignore_errors=True)


def wait_until(condition: Callable[[], bool], timeout: float, what: str, tmux: Tmux) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            screen = tmux.screen() if tmux.alive() else "(session gone)"
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; screen:\n{screen}")
        time.sleep(0.2)
