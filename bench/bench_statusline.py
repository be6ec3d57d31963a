"""How long `ctxtui statusline` takes on a 10 MB Claude Code transcript, against peers in the same run.

Claude Code runs the status line after each message, at most every 300 ms; the goal is under 100 ms
once the transcript has been seen (its figures cached under `.ctxtui/statusline/`). The transcript
is made of user turns, tool calls with 4 KB results and assistant replies with usage, and one
compaction boundary, until it holds SIZE_MB. Timed, as processes started the way Claude Code starts
them (status JSON on stdin):
  first read      `ctxtui statusline` with no cache: the whole file is read
  once seen       the same again (nothing appended)
  appended        after one more turn was appended (only the new bytes are read)
  python -c pass  the interpreter's own start, the floor of any Python status line
  cat             `cat` of the status JSON, the floor of any command at all
Prints the median of RUNS starts of each.

Run: python bench/bench_statusline.py [RUNS] [SIZE_MB]
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _record(kind: str, uuid: str, parent: str | None, message: dict, when: datetime) -> dict:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "bench",
        "timestamp": when.isoformat().replace("+00:00", "Z"),
        "message": message,
    }


def _turn(index: int, parent: str | None, when: datetime) -> list[dict]:
    user = _record("user", f"u{index}", parent, {"role": "user", "content": f"step {index}"}, when)
    call = _record(
        "assistant",
        f"a{index}",
        user["uuid"],
        {
            "id": f"msg_{index}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "tool_use", "id": f"t{index}", "name": "Read", "input": {"path": "a.py"}}],
            "usage": {
                "input_tokens": 3,
                "cache_read_input_tokens": 20_000 + 40 * index,
                "cache_creation_input_tokens": 900,
                "output_tokens": 50,
            },
        },
        when,
    )
    result = _record(
        "user",
        f"r{index}",
        call["uuid"],
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{index}", "content": "x" * 4000}],
        },
        when,
    )
    return [user, call, result]


def make_transcript(path: Path, size: int) -> None:
    start = datetime.now(UTC) - timedelta(hours=2)
    with path.open("w") as handle:
        written, index, parent = 0, 0, None
        while written < size:
            if index == 200:
                boundary = {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": "b",
                    "parentUuid": None,
                    "logicalParentUuid": parent,
                    "compactMetadata": {"trigger": "auto", "preTokens": 160_000},
                    "timestamp": (start + timedelta(seconds=index)).isoformat().replace("+00:00", "Z"),
                }
                handle.write(json.dumps(boundary) + "\n")
                parent = "b"
            for record in _turn(index, parent, start + timedelta(seconds=index)):
                line = json.dumps(record) + "\n"
                handle.write(line)
                written += len(line)
                parent = record["uuid"]
            index += 1


def _median_ms(command: list[str], stdin: bytes, runs: int, cwd: Path) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, cwd=cwd, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    size_mb = float(sys.argv[2]) if len(sys.argv) > 2 else 10
    ctxtui = Path(sys.executable).parent / "ctxtui"
    command = [str(ctxtui), "statusline"] if ctxtui.exists() else [sys.executable, "-m", "tui.launcher"]
    with tempfile.TemporaryDirectory(prefix="ctxtui-bench-statusline-") as scratch:
        folder = Path(scratch)
        transcript = folder / "session.jsonl"
        make_transcript(transcript, int(size_mb * 1024 * 1024))
        status = json.dumps(
            {
                "session_id": "bench",
                "transcript_path": str(transcript),
                "model": {"id": "claude-sonnet-4-5-20250929", "display_name": "Sonnet 4.5"},
                "workspace": {"current_dir": str(folder), "project_dir": str(folder)},
                "cost": {"total_cost_usd": 1.5},
            }
        ).encode()
        first = _median_ms(command, status, 1, folder)
        line = subprocess.run(command, input=status, capture_output=True, cwd=folder).stdout.decode()
        seen = _median_ms(command, status, runs, folder)
        appended_times = []
        for index in range(runs):
            with transcript.open("a") as handle:
                for record in _turn(10_000 + index, None, datetime.now(UTC)):
                    handle.write(json.dumps(record) + "\n")
            appended_times.append(_median_ms(command, status, 1, folder))
        appended = statistics.median(appended_times)
        python = _median_ms([sys.executable, "-c", "pass"], b"", runs, folder)
        cat = _median_ms([shutil.which("cat") or "cat"], status, runs, folder)
        size = transcript.stat().st_size
    print(f"transcript: {size / 1024 / 1024:.1f} MB; median of {runs} starts (first read: one)")
    print(f"  line: {line.strip()}")
    print(f"  first read      {first:7.1f} ms")
    print(f"  once seen       {seen:7.1f} ms   ({seen / python:.1f}x python -c pass)   goal < 100 ms")
    print(f"  appended        {appended:7.1f} ms")
    print(f"  python -c pass  {python:7.1f} ms")
    print(f"  cat             {cat:7.1f} ms")


if __name__ == "__main__":
    main()
