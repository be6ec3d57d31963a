"""What compaction saves and loses on real agent work: 100 SWE-bench Verified runs of mini-swe-agent.

The trajectories: SWE-agent/mini-swe-agent at commit ec0e8e849fea5b1619deb1753007201000904672 (a
pull-request ref, MIT), `output/deepseek_chat_test_1-100/<instance>/<instance>.traj.json`; their git
blob checksums are in bench/swe100.sha1, and every file read is checked against them. Get them with

    git clone --filter=blob:none https://github.com/SWE-agent/mini-swe-agent /tmp/mini-swe-agent
    git -C /tmp/mini-swe-agent fetch origin ec0e8e849fea5b1619deb1753007201000904672
    python bench/bench_replay.py --extract /tmp/mini-swe-agent      # -> bench/data/swe100/

Modes (each prints what it measured; nothing here is asserted):

  (default)     the table of `ctxtui replay` over every trajectory, every engine, with intervals;
                `--json FILE` also writes the contract's JSON
  --scaling     the replay of the first 25, 50 and 100 files (by name): seconds, MB, seconds per MB
                (linear work keeps that last figure flat), and the same with one worker
  --sweep       the client pipeline under a grid of settings (recent results kept, the limit, the
                micro target: how large a batch is masked at once, the timing): billed input against
                regret, and the frontier (no other row bills less at no higher regret)

Run: python bench/bench_replay.py [--data DIR] [--scaling | --sweep] [--workers N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.config import Settings
from core.engines.replay import ENGINES, Variant, replay_many, summarise
from tui.cli.replay import table

HERE = Path(__file__).resolve().parent
CHECKSUMS = HERE / "swe100.sha1"
DEFAULT_DATA = HERE / "data" / "swe100"
COMMIT = "ec0e8e849fea5b1619deb1753007201000904672"


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def expected() -> dict[str, str]:
    """file name -> git blob sha1, from bench/swe100.sha1."""
    found = {}
    for line in CHECKSUMS.read_text().splitlines():
        digest, path = line.split(maxsplit=1)
        found[Path(path).name] = digest
    return found


def extract(repo: Path, data: Path) -> None:
    """Write each trajectory of the commit into `data`, checked against its checksum."""
    data.mkdir(parents=True, exist_ok=True)
    bad = 0
    for line in CHECKSUMS.read_text().splitlines():
        digest, path = line.split(maxsplit=1)
        done = subprocess.run(["git", "-C", str(repo), "show", f"{COMMIT}:{path}"], capture_output=True, check=False)
        if done.returncode != 0 or git_blob_sha1(done.stdout) != digest:
            print(f"missing or different: {path}", file=sys.stderr)
            bad += 1
            continue
        (data / Path(path).name).write_bytes(done.stdout)
    print(f"extracted {len(expected()) - bad} of {len(expected())} into {data}")


def verified(data: Path) -> list[Path]:
    """The trajectories in `data` whose content matches its checksum (others are named and left out)."""
    files = []
    sums = expected()
    for name, digest in sorted(sums.items()):
        path = data / name
        if not path.is_file():
            print(f"not there: {name}", file=sys.stderr)
        elif git_blob_sha1(path.read_bytes()) != digest:
            print(f"checksum differs, left out: {name}", file=sys.stderr)
        else:
            files.append(path)
    return files


def settings() -> Settings:
    """The defaults (the seed's), with no config file or environment of the person running this."""
    return Settings(offline=True)


def run_table(files: list[Path], workers: int, out: Path | None) -> None:
    started = time.perf_counter()
    records, problems = replay_many(files, settings(), ENGINES, workers=workers)
    elapsed = time.perf_counter() - started
    for line in problems:
        print(f"skipped {line}", file=sys.stderr)
    data = summarise(records, ENGINES)
    print(table(data))
    print(f"\n{len(files)} files, {sum(path.stat().st_size for path in files) / 1e6:.1f} MB, all six engines "
          f"in {elapsed:.1f} s ({workers or 'one per core'} workers)")
    if out is not None:
        out.write_text(json.dumps(data, indent=1))


def run_scaling(files: list[Path], workers: int) -> None:
    print(f"{'files':>6}{'MB':>8}{'seconds':>10}{'s per MB':>10}{'1 worker s':>12}{'s per MB':>10}")
    for count in (25, 50, 100):
        chosen = files[:count]
        size = sum(path.stat().st_size for path in chosen) / 1e6
        times = []
        for chosen_workers in (workers, 1):
            started = time.perf_counter()
            replay_many(chosen, settings(), ENGINES, workers=chosen_workers)
            times.append(time.perf_counter() - started)
        print(f"{len(chosen):>6}{size:>8.1f}{times[0]:>10.1f}{times[0] / size:>10.3f}{times[1]:>12.1f}"
              f"{times[1] / size:>10.3f}")


def grid() -> list[Variant]:
    """The sweep's rows: (label, engine, settings)."""
    base = settings()
    rows: list[Variant] = []
    for timing in ("client", "client-cache-aware"):
        for keep in (3, 5, 8):
            for limit in (50_000, 80_000, 120_000):
                for ratio in (0.8, 0.5):
                    compaction = replace(base.compaction, keep_recent_results=keep, context_char_limit=limit,
                                         micro_target_ratio=ratio)
                    label = f"{timing} keep={keep} limit={limit // 1000}k target={ratio}"
                    rows.append((label, timing, replace(base, compaction=compaction)))
    return rows


def frontier(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The rows no other row beats: none bills less at a regret no higher (and one of the two lower)."""
    kept = []
    for label, row in rows.items():
        billed, regret = row["billed_input_tokens"], row["regret"]["share"]
        beaten = any(other["billed_input_tokens"] <= billed and other["regret"]["share"] <= regret
                     and (other["billed_input_tokens"] < billed or other["regret"]["share"] < regret)
                     for name, other in rows.items() if name != label)
        if not beaten:
            kept.append(label)
    return sorted(kept, key=lambda label: rows[label]["billed_input_tokens"])


def paired(records: list[dict[str, Any]], label: str, default: str, seed: int = 0,
           resamples: int = 1_000) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """`label` against `default` over the same resampled trajectories: the points of billed input (as a
    share of `none`'s) it saves more, and the points of regret it has more; each (value, 2.5%, 97.5%)."""
    import random

    def figures(picks: list[int]) -> tuple[float, float]:
        none = sum(records[i]["engines"]["none"]["billed_input_tokens"] for i in picks) or 1.0
        ours, theirs = ([records[i]["engines"][name] for i in picks] for name in (label, default))
        saved = (sum(row["billed_input_tokens"] for row in theirs) - sum(row["billed_input_tokens"] for row in ours))
        regret = [sum(row["referenced_later"] for row in rows) / max(1, sum(row["removed"] for row in rows))
                  for rows in (ours, theirs)]
        return 100 * saved / none, 100 * (regret[0] - regret[1])

    rng = random.Random(seed)
    count = len(records)
    samples = [figures([rng.randrange(count) for _ in range(count)]) for _ in range(resamples)]
    point = figures(list(range(count)))
    out = []
    for index in (0, 1):
        values = sorted(sample[index] for sample in samples)
        out.append((point[index], values[int(0.025 * (resamples - 1))], values[int(0.975 * (resamples - 1))]))
    return out[0], out[1]


def run_sweep(files: list[Path], workers: int, out: Path | None) -> None:
    variants = [("none", "none", settings()), *grid()]
    started = time.perf_counter()
    records, _ = replay_many(files, settings(), workers=workers, variants=variants)
    labels = [label for label, _, _ in variants]
    data = summarise(records, labels)
    rows = {label: row for label, row in data["engines"].items() if label != "none"}
    print(f"{'setting':<52}{'billed in':>10}{'saved [95% CI]':>24}{'regret':>8}{'lost':>6}  frontier")
    best = set(frontier(rows))
    default = "client keep=3 limit=50k target=0.8"
    for label, row in sorted(rows.items(), key=lambda item: item[1]["billed_input_tokens"]):
        saved = row["saved_vs_none"]
        mark = "*" if label in best else ""
        if label == default:
            mark += " (the seed's default)"
        print(f"{label:<52}{row['billed_input_tokens'] / 1e6:>9.2f}M"
              f"{saved['share'] * 100:>+9.1f}% [{saved['ci95'][0] * 100:+.1f}, {saved['ci95'][1] * 100:+.1f}]"
              f"{row['regret']['share'] * 100:>7.1f}%{row['anchors']['lost']:>6}  {mark}")
    seed = rows[default]
    better = [label for label, row in rows.items() if label != default
              and row["billed_input_tokens"] <= seed["billed_input_tokens"]
              and row["regret"]["share"] < seed["regret"]["share"]]
    print(f"\n{len(rows)} settings over {data['trajectories']} trajectories in {time.perf_counter() - started:.0f} s;"
          f" * = on the frontier of billed input against regret.")
    print("\nSettings that bill no more than the seed's default at a lower regret, against it on the same "
          "trajectories\n(paired bootstrap, 1,000 resamples: points of billed input saved, points of regret):")
    ranked = sorted(better, key=lambda label: rows[label]["billed_input_tokens"])
    eager = [label for label in ranked if label.startswith("client ")][:2]
    for label in [*ranked[:6], *(label for label in eager if label not in ranked[:6])]:
        saved, regret = paired(records, label, default)
        print(f"  {label:<52} saves {saved[0]:+.1f} [{saved[1]:+.1f}, {saved[2]:+.1f}]   "
              f"regret {regret[0]:+.2f} [{regret[1]:+.2f}, {regret[2]:+.2f}]")
    if not better:
        print("  none")
    if out is not None:
        out.write_text(json.dumps(data, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--extract", type=Path, metavar="REPO", help="write the trajectories from a clone")
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    if args.extract:
        extract(args.extract, args.data)
        return 0
    if not args.data.is_dir():
        print(f"no trajectories at {args.data}: see this script's docstring (--extract) for how to get them")
        return 1
    files = verified(args.data)
    if not files:
        print(f"no trajectory in {args.data} matches bench/swe100.sha1")
        return 1
    if args.scaling:
        run_scaling(files, args.workers)
    elif args.sweep:
        run_sweep(files, args.workers, args.json)
    else:
        run_table(files, args.workers, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
