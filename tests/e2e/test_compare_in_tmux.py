"""`ctxtui inspect FILE --compare` in a real 80x24 terminal (tmux) opens the compare view; the same
command with its output piped prints the text table (tests/core/engines/test_compare.py)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.tmux import TMUX, Tmux, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
]
SESSION = Path(__file__).parents[1] / "fixtures" / "engines" / "proxy_recording.jsonl"


@pytest.mark.timeout(90)
def test_compare_in_a_terminal_opens_the_view_and_q_quits() -> None:
    root = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))
    tmux = Tmux(root)
    try:
        tmux.start(f"{sys.executable} -m tui.cli inspect {SESSION} --compare --workdir {root}")
        tmux.run("resize-window", "-t", tmux.session, "-x", "80", "-y", "24", check=True)
        wait_until(lambda: "cheapest:" in tmux.screen(), 60, "the compare table", tmux)
        lines = tmux.screen().splitlines()
        assert [line.split()[0] for line in lines if line.startswith(("client ", "server-"))] == \
            ["client", "client", "server-clear", "server-compact"]
        assert any("cut before" in line or "no cut" in line for line in lines)
        tmux.run("send-keys", "-t", tmux.session, "q", check=True)
        wait_until(lambda: not tmux.alive(), 10, "the app to exit after q", tmux)
    finally:
        tmux.kill_server()
        shutil.rmtree(root, ignore_errors=True)
