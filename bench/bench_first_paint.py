"""First paint in a real terminal (tmux 160x48), against a minimal Textual app started the same way (issue 12).

Each program starts in a fresh session of a private tmux server; the pane is read with
`capture-pane` every few milliseconds until the program's first full frame is there: for ctxtui the
title bar (the workdir), the prompt, the gauge, the message tree's title and the footer all at once; for the
minimal app its text and its footer. ctxtui runs offline, and once more with ANTHROPIC_API_KEY set
(the Anthropic model: its SDK must not load before the first frame; ANTHROPIC_BASE_URL points at a
closed loopback port, so nothing leaves the machine).

The runs are interleaved, in an order that rotates every round, after one unmeasured warm-up round;
the figures are medians, and the ratio is ctxtui's median over the minimal app's, both measured in
the same run; the best of each program's runs is compared too (the issue's measure, goal 1.2x). Python's bytecode cache is on for every program (PYTHONPYCACHEPREFIX in a temporary
directory, warmed by the first round), as it is for an installed ctxtui; `--as-is` keeps the
environment's own setting instead (with PYTHONDONTWRITEBYTECODE=1 ctxtui's own modules, unlike
Textual's, are then compiled from source at every start). Each ctxtui run starts with a config file
(`theme = ...`, as the palette writes it) and no session, in a fresh workdir.

Run: python bench/bench_first_paint.py [--runs N] [--as-is] [REPO]   (REPO: another checkout to start ctxtui from)
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 160, 48
TIMEOUT = 30.0
GOAL = 1.2
"""ctxtui's first frame at most this many times the minimal app's (issue 34: best of several runs)."""
MINIMAL = """
from textual.app import App, ComposeResult
from textual.widgets import Footer, Static

class Minimal(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("minimal app ready")
        yield Footer()

Minimal().run()
"""
MINIMAL_MARKERS = ("minimal app ready", "palette")
CTXTUI_MARKERS = ("Message the agent", "Context", "chars (", "Messages ·", "Quit")
"""The prompt's placeholder, the gauge's title and first line, the tree's title, the footer's first key
(plus the workdir): the whole frame, footer included, as the minimal app's markers include its footer."""


class Tmux:
    """A private tmux server (its own socket) in a clean environment."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.socket = f"ctxtui-bench-{uuid.uuid4().hex[:8]}"
        self.env = dict(env, TMUX_TMPDIR=str(root))
        self.tmux = shutil.which("tmux") or "tmux"
        # the server, kept up by an idle session; a program that dies leaves its pane (and its last words)
        self.run("new-session", "-d", "-s", "keeper", "sleep 3600")
        self.run("set-option", "-g", "remain-on-exit", "on")

    def run(self, *args: str) -> str:
        done = subprocess.run([self.tmux, "-L", self.socket, "-f", "/dev/null", *args], env=self.env,
                              capture_output=True, text=True, timeout=10)
        return done.stdout

    def first_paint(self, command: str, markers: tuple[str, ...], env: dict[str, str]) -> float:
        """Seconds from starting `command` until every marker is on the pane at once."""
        session = f"s{uuid.uuid4().hex[:6]}"
        extra = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        start = time.perf_counter()
        self.run("new-session", "-d", "-s", session, "-x", str(WIDTH), "-y", str(HEIGHT), *extra, command)
        try:
            while True:
                pane = self.run("capture-pane", "-p", "-t", session)
                if all(marker in pane for marker in markers):
                    return time.perf_counter() - start
                dead = self.run("display-message", "-p", "-t", session, "#{pane_dead}").strip() == "1"
                if dead or time.perf_counter() - start > TIMEOUT:
                    why = "it exited" if dead else f"nothing within {TIMEOUT:.0f} s"
                    raise RuntimeError(f"no first frame from {command!r}: {why}; the pane:\n{pane.rstrip()}")
                time.sleep(0.01)
        finally:
            self.run("kill-session", "-t", session)

    def close(self) -> None:
        self.run("kill-server")


@dataclass
class Program:
    label: str
    command: str
    """A shell command; `{workdir}` is replaced by a fresh directory for each run."""
    markers: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)

    def start(self, tmux: Tmux, root: Path) -> float:
        # a fresh workdir per run (no session to resume, nothing archived), made before the clock starts
        workdir = tempfile.mkdtemp(prefix="ctxtui-paint-", dir=root)
        return tmux.first_paint(self.command.replace("{workdir}", shlex.quote(workdir)), self.markers, self.env)


def clean_environment(root: Path, as_is: bool) -> dict[str, str]:
    """The environment every program starts in: no tmux or Anthropic variables, a fixed terminal and
    locale, a config dir of its own and (unless `as_is`) a bytecode cache in `root`."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("TMUX", "ANTHROPIC_", "CTXTUI_"))}
    env.update(TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8", XDG_CONFIG_HOME=str(root / "config"))
    if not as_is:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


def programs(repo: Path, root: Path) -> list[Program]:
    python = shlex.quote(sys.executable)
    script = root / "minimal.py"
    script.write_text(MINIMAL, encoding="utf-8")
    config = root / "config" / "ctxtui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('theme = "textual-dark"\n', encoding="utf-8")

    def ctxtui(flags: str) -> str:
        return f"cd {shlex.quote(str(repo))} && exec {python} -m tui.cli {flags} --workdir {{workdir}}"

    return [
        Program("minimal Textual app", f"cd {shlex.quote(str(repo))} && exec {python} {shlex.quote(str(script))}",
                MINIMAL_MARKERS),
        Program("ctxtui --offline", ctxtui("--offline"), ("ctxtui-paint-", *CTXTUI_MARKERS)),
        Program("ctxtui, ANTHROPIC_API_KEY set", ctxtui(""), ("ctxtui-paint-", *CTXTUI_MARKERS),
                {"ANTHROPIC_API_KEY": "sk-bench-not-used", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}),
    ]


def main(repo: Path = ROOT, runs: int = 9, as_is: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="ctxtui-paint-bench-") as tmp:
        root = Path(tmp)
        env = clean_environment(root, as_is)
        tmux = Tmux(root, env)
        measured = programs(repo, root)
        try:
            for program in measured:  # warm-up: the bytecode cache, the page cache
                program.start(tmux, root)
            for round_ in range(runs):
                shift = round_ % len(measured)
                for program in measured[shift:] + measured[:shift]:
                    program.times.append(program.start(tmux, root))
        finally:
            tmux.close()
    minimal = measured[0]
    base = statistics.median(minimal.times)
    cache = "as the environment has it" if as_is else "warm (PYTHONPYCACHEPREFIX)"
    print(f"first paint in tmux {WIDTH}x{HEIGHT}, median of {runs} interleaved runs, ctxtui from {repo}")
    print(f"(Python {sys.version.split()[0]}, bytecode cache {cache})")
    print(f"{minimal.label:<32} {base * 1000:7.0f} ms   range {min(minimal.times) * 1000:.0f}-{max(minimal.times) * 1000:.0f}")
    best = min(minimal.times)
    print(f"{'':<32} best {best * 1000:4.0f} ms")
    for program in measured[1:]:
        value = statistics.median(program.times)
        ratios = sorted(ours / peer for ours, peer in zip(program.times, minimal.times, strict=True))
        print(f"{program.label:<32} {value * 1000:7.0f} ms   {value / base:5.2f}x of minimal (goal <= {GOAL}x); "
              f"per-round ratios {ratios[0]:.2f}-{ratios[-1]:.2f}")
        print(f"{'':<32} best {min(program.times) * 1000:4.0f} ms   {min(program.times) / best:5.2f}x of the minimal "
              "app's best (the issue's measure: best of the runs)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", type=Path, default=ROOT, help="the checkout to start ctxtui from")
    parser.add_argument("--runs", type=int, default=9, help="measured rounds (default 9)")
    parser.add_argument("--as-is", action="store_true", help="keep the environment's bytecode setting")
    arguments = parser.parse_args()
    main(arguments.repo.resolve(), arguments.runs, arguments.as_is)
