"""Case C of bench_prepare: one snip of a 10,000-message history at default settings (issue 12).

The history (~17 MB of JSON: a request, then read calls with ~3,000-char results) is at the default
`CompactionSettings`, so `prepare` snips it (trigger 50 -> keep 30): 9,970 messages go to a
transcript, and what stays is under the 50,000-char limit, so no other step fires.

Peers, on identical inputs (a fresh deep copy and a fresh workdir per run):
  (a) `Compactor.prepare` on a plain list, with a fresh Compactor (nothing measured before: the
      cold case, what `ctxtui inspect`, the bench's other cases and a first call see);
  (b) `SeedPipeline.prepare` from bench_prepare.py, the port of the seed / upstream reference;
  (c) `Compactor.prepare_changes` on a `core.history.store.History` whose sizes the agent already knows
      (the warm case: what `Agent` calls before a model call).
Both results must be the same history (the transcript's name aside), and both transcripts the same
bytes (checked each run). Ratios are reference time / ctxtui time (>= 1: ctxtui at least as fast),
the median over runs of each run's ratio (the peers of a run run back to back); times are medians.

Run: python bench/bench_snip.py [RUNS]
"""

from __future__ import annotations

import asyncio
import copy
import gc
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_prepare import REQUEST, SeedPipeline, size_of, stub_summarize, tool_pair

from core.archive import Archive
from core.compaction import CompactionSettings, Compactor
from core.history.store import History

Message = dict[str, Any]
MESSAGES = 10_000
SETTINGS = CompactionSettings()
_MARKER = re.compile(r"\A\[(\d+) messages archived at (\S+)\]\Z")


def history_c() -> list[Message]:
    """10,000 messages, about 17 MB: the request, 4,999 read calls with 3,000-char results, a last reply."""
    messages: list[Message] = [{"role": "user", "content": REQUEST}]
    for number in range(4_999):
        messages.extend(tool_pair(f"toolu_c_{number:05d}", 3_000))
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Still reading."}]})
    assert len(messages) == MESSAGES
    return messages


def normalised(messages: list[Message], workdir: Path) -> tuple[list[Message], bytes]:
    """The history with its snip marker's path taken out, and the bytes of the transcript it names."""
    out: list[Message] = []
    transcript = b""
    for message in messages:
        content = message.get("content")
        match = _MARKER.match(content) if isinstance(content, str) else None
        if match:
            transcript = (workdir / match.group(2)).read_bytes()
            message = {**message, "content": f"[{match.group(1)} messages archived at TRANSCRIPT]"}
        out.append(message)
    assert transcript, "no snip marker in the result"
    return out, transcript


def timed_seed(base: list[Message]) -> tuple[float, list[Message], bytes]:
    messages = copy.deepcopy(base)
    with tempfile.TemporaryDirectory() as tmp:
        pipeline = SeedPipeline(Path(tmp), SETTINGS)
        gc.collect()
        start = time.perf_counter()
        result = pipeline.prepare(messages, REQUEST)
        elapsed = time.perf_counter() - start
        return (elapsed, *normalised(result, Path(tmp)))


async def _core(messages: list[Message], workdir: Path, warm: bool) -> tuple[float, list[Message]]:
    compactor = Compactor(Archive(workdir), summarize=stub_summarize, settings=SETTINGS)
    if warm:
        history = History(messages)
        compactor.estimate_chars(history)  # the agent has measured it as it grew
        gc.collect()
        start = time.perf_counter()
        changes = await compactor.prepare_changes(history, REQUEST)
        history.apply(changes)
        return time.perf_counter() - start, list(history)
    gc.collect()
    start = time.perf_counter()
    result = await compactor.prepare(messages, REQUEST)
    return time.perf_counter() - start, result


def timed_core(base: list[Message], warm: bool = False) -> tuple[float, list[Message], bytes]:
    messages = copy.deepcopy(base)
    with tempfile.TemporaryDirectory() as tmp:
        elapsed, result = asyncio.run(_core(messages, Path(tmp), warm))
        return (elapsed, *normalised(result, Path(tmp)))


def main(runs: int = 5) -> None:
    base = history_c()
    print(f"Case C: {len(base):,} messages, {size_of(base):,} chars, default settings "
          f"(snip {SETTINGS.snip_trigger_messages} -> {SETTINGS.snip_target_messages}); median of {runs} runs\n")
    seed_times, cold_times, warm_times = [], [], []
    for _ in range(runs):
        seed_time, seed_result, seed_transcript = timed_seed(base)
        cold_time, cold_result, cold_transcript = timed_core(base)
        warm_time, warm_result, warm_transcript = timed_core(base, warm=True)
        assert seed_result == cold_result == warm_result, "case C: the pipelines disagree"
        assert seed_transcript == cold_transcript == warm_transcript, "case C: the transcripts differ"
        archived = _MARKER.match(seed_result[3]["content"])
        assert archived and int(archived.group(1)) == len(base) - len(seed_result) + 1, "case C: miscounted"
        seed_times.append(seed_time)
        cold_times.append(cold_time)
        warm_times.append(warm_time)
    seed, cold, warm = (statistics.median(times) for times in (seed_times, cold_times, warm_times))
    # each run's three peers ran back to back: the median of the per-run ratios shrugs off load that
    # other processes put on the machine between runs
    cold_ratio = statistics.median(s / c for s, c in zip(seed_times, cold_times, strict=True))
    warm_ratio = statistics.median(s / w for s, w in zip(seed_times, warm_times, strict=True))
    label = 58
    print(f"| {'case C: one snip, 9,970 messages archived':<{label}} | {'time':>11} | {'ratio':>7} |")
    print(f"|{'-' * (label + 2)}|{'-' * 13}|{'-' * 9}|")
    print(f"| {'reference (seed port), plain list':<{label}} | {seed * 1000:8.1f} ms | {'1.00x':>7} |")
    print(f"| {'Compactor.prepare, plain list, fresh Compactor (cold)':<{label}} | {cold * 1000:8.1f} ms "
          f"| {cold_ratio:6.2f}x |")
    print(f"| {'Compactor.prepare_changes, History already sized (agent)':<{label}} | {warm * 1000:8.1f} ms "
          f"| {warm_ratio:6.2f}x |")
    print(f"\n{len(base) - len(seed_result) + 1:,} messages archived; {size_of(seed_result):,} chars after; "
          "identical histories and transcripts: yes (goal: ratios >= 1.00x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
