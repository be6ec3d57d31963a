"""How fast each trajectory importer reads a 5 MB file (parse and convert, as `read_trajectory` does).

Each file is made from a real fixture (tests/fixtures/trajectories) by repeating its turns, with the
call ids made unique per copy, until it holds at least SIZE bytes:
  atif       Harbor's Terminus 2 trajectory: its agent steps (a call and its result each)
  codex      the codemie-code rollout: its records after the session header
  openhands  the multi-SWE-bench evaluation record's history: its agent actions and observations
Prints, for each, the file size, the best of RUNS reads, the time per MB and the calls read, and the
ratio against its peer measured in the same run: reading the same file and only parsing its JSON
(`json.loads` of the whole file, or of each line for JSONL), the floor any importer pays.

Run: python bench/bench_import.py [RUNS] [SIZE_MB]
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.trajectories import read_trajectory

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "trajectories"


def fixture(kind: str, name: str) -> str:
    data = (FIXTURES / kind / name).read_bytes()
    return (gzip.decompress(data) if name.endswith(".gz") else data).decode("utf-8")


def renamed(value: Any, copy: int, keys: tuple[str, ...]) -> Any:
    """`value` with every string under one of `keys` suffixed by the copy number (unique call ids)."""
    text = json.dumps(value)
    for key in keys:
        text = text.replace(f'"{key}": "', f'"{key}": "{copy}-')
    return json.loads(text)


def grow(header: list[Any], body: list[Any], size: int, keys: tuple[str, ...]) -> list[Any]:
    items = list(header)
    body_size = len(json.dumps(body))
    for copy in range(size // body_size + 1):
        items.extend(renamed(body, copy, keys))
    return items


def atif_file(folder: Path, size: int) -> Path:
    document = json.loads(fixture("atif", "terminus_2_hello-world-context-summarization.trajectory.json"))
    steps = document["steps"]
    body = [step for step in steps if step["source"] == "agent"]
    document["steps"] = grow(steps[:1], body, size, ("tool_call_id",))
    path = folder / "trajectory.json"
    path.write_text(json.dumps(document))
    return path


def codex_file(folder: Path, size: int) -> Path:
    records = [json.loads(line) for line in fixture(
        "codex", "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz").splitlines()]
    path = folder / "rollout-bench.jsonl"
    lines = grow(records[:1], records[1:], size, ("call_id",))
    path.write_text("".join(json.dumps(record) + "\n" for record in lines))
    return path


def openhands_file(folder: Path, size: int) -> Path:
    record = json.loads(fixture("openhands", "multi_swe_bench_output.first-line.jsonl.gz"))
    history = record["history"]
    body = [event for event in history if event["source"] == "agent" and event.get("action") != "system"]
    path = folder / "trajectory.json"
    path.write_text(json.dumps(grow(history[:4], body, size, ("tool_call_id", "id"))))
    return path


def parse_only(path: Path) -> object:
    """The peer: read the file and parse its JSON, nothing else."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def best(runs: int, work: Callable[[], object]) -> tuple[float, object]:
    timings, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = work()
        timings.append(time.perf_counter() - started)
    return min(timings), result


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    size = int(float(sys.argv[2] if len(sys.argv) > 2 else 5) * 1024 * 1024)
    makers = {"atif": atif_file, "codex": codex_file, "openhands": openhands_file}
    with tempfile.TemporaryDirectory() as scratch:
        for name, make in makers.items():
            folder = Path(scratch) / name
            folder.mkdir()
            path = make(folder, size)
            megabytes = path.stat().st_size / 1024 / 1024
            seconds, trajectory = best(runs, partial(read_trajectory, path))
            floor, _ = best(runs, partial(parse_only, path))
            calls = getattr(trajectory, "calls", 0)
            print(f"{name:<10} {megabytes:6.2f} MB  {seconds * 1000:8.1f} ms  "
                  f"{seconds * 1000 / megabytes:7.1f} ms/MB  {calls:6d} calls   "
                  f"parse only {floor * 1000:6.1f} ms: {seconds / floor:4.1f}x")


if __name__ == "__main__":
    main()
