"""First paint in a real terminal (tmux 160x48), against a minimal Textual app started the same way (issue 12).

For each program: start it in a fresh tmux session of a private tmux server, then read the pane
with `capture-pane` every few milliseconds until the program's first frame is there (a text only
that frame shows). ctxtui runs offline, and once more with ANTHROPIC_API_KEY set (the Anthropic
model: its SDK must not load before the first frame). Median of 5 runs each, interleaved.

Run: python bench/bench_first_paint.py [REPO]      (REPO: another checkout to start ctxtui from)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 160, 48
MINIMAL = """
from textual.app import App, ComposeResult
from textual.widgets import Footer, Static

class Minimal(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("minimal app ready")
        yield Footer()

Minimal().run()
"""


class Tmux:
    def __init__(self, root: Path) -> None:
        self.socket = f"ctxtui-bench-{uuid.uuid4().hex[:8]}"
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("TMUX")}
        self.env.update(TERM="xterm-256color", TMUX_TMPDIR=str(root), LANG="C.UTF-8", LC_ALL="C.UTF-8")
        for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
            self.env.pop(key, None)
        self.tmux = shutil.which("tmux") or "tmux"

    def run(self, *args: str) -> str:
        done = subprocess.run([self.tmux, "-L", self.socket, "-f", "/dev/null", *args], env=self.env,
                              capture_output=True, text=True, timeout=10)
        return done.stdout

    def first_paint(self, command: str, marker: str, env: dict[str, str] | None = None) -> float:
        session = f"s{uuid.uuid4().hex[:6]}"
        extra = [arg for key, value in (env or {}).items() for arg in ("-e", f"{key}={value}")]
        start = time.perf_counter()
        self.run("new-session", "-d", "-s", session, "-x", str(WIDTH), "-y", str(HEIGHT), *extra, command)
        try:
            while marker not in self.run("capture-pane", "-p", "-t", session):
                if time.perf_counter() - start > 20:
                    raise TimeoutError(f"no first frame from {command!r}")
                time.sleep(0.005)
            return time.perf_counter() - start
        finally:
            self.run("kill-session", "-t", session)

    def close(self) -> None:
        self.run("kill-server")


def main(repo: Path = ROOT, runs: int = 5) -> None:
    with tempfile.TemporaryDirectory(prefix="ctxtui-paint-") as tmp:
        root = Path(tmp)
        (root / "work").mkdir()
        script = root / "minimal.py"
        script.write_text(MINIMAL, encoding="utf-8")
        python = sys.executable
        ours = f"cd {repo} && {python} -m tui.cli --offline --workdir {root / 'work'}"
        online = f"cd {repo} && {python} -m tui.cli --workdir {root / 'work'}"
        tmux = Tmux(root)
        times: dict[str, list[float]] = {"minimal": [], "ctxtui": [], "online": []}
        try:
            for _ in range(runs):
                times["minimal"].append(tmux.first_paint(f"{python} {script}", "minimal app ready"))
                times["ctxtui"].append(tmux.first_paint(ours, "ctxtui-paint-"))
                try:
                    times["online"].append(
                        tmux.first_paint(online, "ctxtui-paint-", {"ANTHROPIC_API_KEY": "sk-bench-not-used"})
                    )
                except TimeoutError:
                    print("ctxtui with ANTHROPIC_API_KEY set: no first frame within 60 s")
        finally:
            tmux.close()
    minimal = statistics.median(times["minimal"])
    print(f"first paint in tmux {WIDTH}x{HEIGHT}, median of {runs}, ctxtui from {repo} (Python {sys.version.split()[0]})")
    print(f"minimal Textual app                    {minimal * 1000:8.0f} ms")
    for key, label in (("ctxtui", "ctxtui --offline"), ("online", "ctxtui, ANTHROPIC_API_KEY set")):
        if not times[key]:
            continue
        value = statistics.median(times[key])
        print(f"{label:<38} {value * 1000:8.0f} ms   {value / minimal:5.2f}x of minimal (goal <= 1.5x)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
