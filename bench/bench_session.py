"""What a compaction costs the session log, at 1,000 and 10,000 messages (issue 12).

Each compaction changes a few messages of a long history (micro_compact: 5 older tool results
become placeholders) or cuts its middle (snip at default settings). Two strategies log the same
changes of the same history, each into its own fresh session file, in the same run:
  (old)  `SessionLog.replace(history)`: what the agent wrote on every change until now, a
         snapshot of the whole history;
  (new)  `SessionLog.change(changes, history)`: a splice record with what changed (and a snapshot
         only once the splices since the last one outweigh it).
Figures per compaction: bytes the log grew by, and the time from the call to the bytes being on
disk (`await log.flush()`), median over the compactions of a run, median of the runs. Both files
must replay to the live history (checked).

Run: python bench/bench_session.py [RUNS]
"""

from __future__ import annotations

import asyncio
import copy
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.events import Splice
from core.history.store import History
from core.markers import placeholder, snip_marker
from core.sessions.log import SessionLog

Message = dict[str, Any]
COMPACTIONS = 12


def history(count: int, result_chars: int = 1_500) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "Read every module and list what each one exports."}]
    number = 0
    while len(messages) < count - 2:
        use = f"toolu_{number:06d}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": "Reading the next file."},
            {"type": "tool_use", "id": use, "name": "read_file", "input": {"path": f"src/m{number}.py"}},
        ]})
        text = (f"{number}: def handler(request): return render(request, '模板.html')  # ✓\n" * 40)[:result_chars]
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use, "content": text}]})
        number += 1
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Still reading."}]})
    return messages


def micro_changes(messages: History, round_: int) -> tuple[Splice, ...]:
    """Five older results (spread over the history) become placeholders, as micro_compact reports them."""
    changes = []
    results = [index for index in range(2, len(messages) - 10, 2)]
    for pick in range(5):
        index = results[(round_ * 5 + pick) * 7 % len(results)]
        old = messages[index]
        block = old["content"][0]
        new = {**old, "content": [{**block, "content": placeholder(f".task_outputs/tool-results/{block['tool_use_id']}.txt")}]}
        changes.append(Splice(index, 1, (new,)))
    return tuple(changes)


def snip_changes(messages: History) -> tuple[Splice, ...]:
    """The splice snip_compact reports at default settings: head 3, the marker, the newest 26."""
    tail_start = len(messages) - 26
    if messages[tail_start]["role"] == "user":
        tail_start -= 1  # keep the pair together, as snip does
    marker = {"role": "user", "content": snip_marker(tail_start - 3, ".transcripts/transcript_x.jsonl")}
    return (Splice(3, tail_start - 3, (marker,)),)


async def one_run(count: int, kind: str, strategy: str, folder: Path) -> tuple[list[int], list[float]]:
    live = History(copy.deepcopy(history(count)))
    log = SessionLog.create(folder, {"model": "bench"})
    log.replace(live, "resume")  # a session starts with its history (as a resumed one does)
    await log.flush()
    sizes: list[int] = []
    times: list[float] = []
    rounds = COMPACTIONS if kind == "micro" else 1
    for round_ in range(rounds):
        changes = micro_changes(live, round_) if kind == "micro" else snip_changes(live)
        live.apply(changes)
        before = log.path.stat().st_size
        start = time.perf_counter()
        if strategy == "old":
            log.replace(live, "prepare")
        else:
            log.change(changes, live, "prepare")
        await log.flush()
        times.append(time.perf_counter() - start)
        sizes.append(log.path.stat().st_size - before)
    await log.close()
    assert SessionLog.load(log.path) == live, f"{strategy} log does not replay to the live history"
    return sizes, times


def measure(count: int, kind: str, strategy: str, runs: int) -> tuple[float, float]:
    byte_runs, time_runs = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            sizes, times = asyncio.run(one_run(count, kind, strategy, Path(folder)))
        byte_runs.append(statistics.median(sizes))
        time_runs.append(statistics.median(times))
    return statistics.median(byte_runs), statistics.median(time_runs)


def main(runs: int = 3) -> None:
    print(f"Session log cost per compaction; median of {runs} runs "
          f"({COMPACTIONS} micro compactions per run; one snip)\n")
    header = (f"| {'history, compaction':<42} | {'old bytes':>11} | {'new bytes':>9} | {'bytes ratio':>11} "
              f"| {'old ms':>8} | {'new ms':>7} | {'time ratio':>10} |")
    print(header)
    print("|" + "|".join("-" * len(part) for part in header.split("|")[1:-1]) + "|")
    for count in (1_000, 10_000):
        for kind, label in (("micro", "5 results -> placeholders"), ("snip", "snip (default settings)")):
            old_bytes, old_time = measure(count, kind, "old", runs)
            new_bytes, new_time = measure(count, kind, "new", runs)
            print(f"| {f'{count:,} messages, {label}':<42} | {old_bytes:>11,.0f} | {new_bytes:>9,.0f} "
                  f"| {old_bytes / new_bytes:>10,.0f}x | {old_time * 1000:>8.2f} | {new_time * 1000:>7.2f} "
                  f"| {old_time / new_time:>9,.1f}x |")
    print("\nold: a snapshot of the whole history per change (what the agent wrote before); new: the splices. "
          "Both files replay to the live history: checked.")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
