"""`ctxtui replay PATH...`: real trajectories replayed through every engine (core/engines/replay.py).

A table for people (stdout), one JSON object with `--output-format json`, a progress bar on stderr
while it runs when stderr is a terminal, and one line on stderr for each file it could not read (it is
skipped; the rest is replayed). Exit 0 when something was replayed, 2 when nothing could be.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from core.text import plural, visible

EXIT_OK, EXIT_USAGE = 0, 2


def add_replay_parser(commands: Any) -> None:
    """The `replay` sub-command's flags."""
    from core.engines import REPLAY_ENGINES as ENGINES

    replay = commands.add_parser(
        "replay",
        help="replay real agent trajectories through every engine: what each saves and loses",
        description="Replay every model call of each trajectory (SWE-agent / mini-swe-agent, ATIF, Codex CLI, "
        "OpenHands, or any history file `inspect` reads) through each engine, priced with the prompt cache "
        "modelled by prefix; print per engine the billed input, cost, peak, steps, the share saved against "
        "`none` with a bootstrap 95% interval, the regret and where every anchor ended.",
    )
    replay.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="files, or folders searched for them"
    )
    replay.add_argument(
        "--engines",
        default=",".join(ENGINES),
        metavar="E,...",
        help=f"the engines to replay, comma-separated (default: all: {','.join(ENGINES)})",
    )
    replay.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    replay.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="trajectories replayed at once, one process each (default: one per core)",
    )
    replay.add_argument(
        "--output-format",
        choices=("table", "text", "json"),
        default="table",
        help="table (default; text is the same) or json (one object)",
    )
    replay.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a setting every engine replays with, e.g. --set keep_recent_results=5 (repeatable)",
    )
    replay.add_argument(
        "--model",
        default=argparse.SUPPRESS,
        help="price as this model where a trajectory's own model has no known price",
    )
    replay.add_argument("--workdir", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def parse_engines(text: str) -> list[str]:
    """The engines named in `text`, in the order given; ValueError (one line) for an unknown one."""
    from core.engines import REPLAY_ENGINES as ENGINES

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ENGINES]
    if unknown or not names:
        raise ValueError(
            f"--engines: unknown engine {visible(unknown[0]) if unknown else '(none given)'}; "
            f"choose from {', '.join(ENGINES)}"
        )
    return list(dict.fromkeys(names))


class Progress:
    """A one-line bar on stderr, redrawn in place, when stderr is a terminal; silent otherwise."""

    def __init__(self, what: str = "replay", unit: str = "files", stream: Any = None) -> None:
        self.what, self.unit = what, unit
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.drawn = -1.0

    def __call__(self, done: int, total: int) -> None:
        if not self.live or not total:
            return
        now = time.monotonic()
        if done < total and now - self.drawn < 0.1:
            return  # at most ten redraws a second
        self.drawn = now
        width = 30
        filled = width * done // total
        self.stream.write(
            f"\r{self.what} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {self.unit}, "
            f"{now - self.started:.0f} s"
        )
        if done == total:
            self.stream.write("\r\x1b[K")
        self.stream.flush()


def run_replay(args: argparse.Namespace, settings: Any) -> int:
    """Replay the paths with `settings`; print the table or the JSON."""
    import json

    from core.engines.replay import find_files, replay_many, summarise

    try:
        engines = parse_engines(args.engines)
    except ValueError as error:
        print(f"ctxtui: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if "none" not in engines:
        engines.insert(0, "none")  # the baseline every share is taken against
    files, problems = find_files(args.paths)
    for line in problems:
        print(f"ctxtui replay: {visible(line)}", file=sys.stderr)
    if not files:
        print("ctxtui replay: error: nothing to replay", file=sys.stderr)
        return EXIT_USAGE
    records, unreadable = replay_many(
        files, settings, engines, workers=max(0, args.workers), progress=Progress()
    )
    for line in unreadable:
        print(f"ctxtui replay: skipped {visible(line)}", file=sys.stderr)
    if not records:
        print("ctxtui replay: error: no file could be replayed", file=sys.stderr)
        return EXIT_USAGE
    data = summarise(records, engines, seed=args.seed)
    if args.output_format == "json":
        print(json.dumps(data, ensure_ascii=True), flush=True)
    else:
        sys.stdout.write(table(data) + "\n")
        sys.stdout.flush()
    return EXIT_OK


def _tokens(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.0f}"


def table(data: dict[str, Any]) -> str:
    """The replay as a table for people (under 120 columns): one row per engine, the steps each fired
    below it, then what the columns mean."""
    header = (
        f"{'engine':<19}{'billed in':>10}{'saved vs none [95% CI]':>25}{'cost $':>9}{'peak':>8}"
        f"{'mean':>8}{'regret':>15}{'anchors kept/rec/lost':>24}"
    )
    lines = [
        f"{plural(data['trajectories'], 'trajectory', 'trajectories')}, {plural(data['calls'], 'call')}",
        header,
        "-" * len(header),
    ]
    fired = []
    for name, row in data["engines"].items():
        saved = row["saved_vs_none"]
        share = (
            f"{saved['share'] * 100:+.1f}% [{saved['ci95'][0] * 100:+.1f}, {saved['ci95'][1] * 100:+.1f}]"
            if saved["share"] is not None
            else "-"
        )
        regret = row["regret"]
        regret_text = (
            f"{regret['referenced_later']}/{regret['removed']} {regret['share'] * 100:.0f}%"
            if regret["removed"]
            else "0/0"
        )
        anchors = row["anchors"]
        cost = f"{row['cost_usd']:.2f}" if row["cost_usd"] is not None else "-"
        where = f"{anchors['kept']}/{anchors['recoverable']}/{anchors['lost']}"
        lines.append(
            f"{name:<19}{_tokens(row['billed_input_tokens']):>10}{share:>25}{cost:>9}"
            f"{_tokens(row['peak_tokens']):>8}{_tokens(row['mean_tokens']):>8}{regret_text:>15}{where:>24}"
        )
        if row["steps"]:
            steps = ", ".join(
                f"{step.removeprefix('server:')} {count}" for step, count in row["steps"].items()
            )
            fired.append(f"  {name + ':':<20}{steps}")
    lines += ["steps (calls before which each saved something):", *(fired or ["  none fired"])]
    lines += [
        "billed in: input tokens at the cache's prices (uncached + 1.25 x writes + 0.1 x reads, 5-minute TTL);",
        "saved: 1 - billed / billed(none), 95% interval over 1,000 bootstrap resamples of the trajectories;",
        "regret: removed tool results whose anchors (paths, identifiers, error lines) the agent used later;",
        "anchors: in the last request / only on disk or in the client's history / nowhere.",
        "An open-loop replay: the agent's later moves are the recorded ones, whatever an engine removed.",
    ]
    return "\n".join(lines)
