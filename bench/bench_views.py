"""What it costs to keep the breakdown and the timeline current as one message is added.

History: 5,000 messages (user text, assistant text + tool_use, tool results of ~1-4 KB, a few
markers), about 8 MB of JSON. Each case adds one message and brings the figures up to date:

  (a) full walk: the contract function `breakdown`, as a view that re-derives the categories from
      the whole history on every change would do (it keeps no cache, so nothing outlives the history)
  (b) Breakdown.apply: the accumulator, updated from the HistoryChanged splice (one message walked)
  (c) Breakdown.largest: the top-5 items of one category (over the cached parts, no JSON walked)
  (d) Timeline.start + finish: one ContextSample recorded, with a 5,000-sample timeline behind it

Every figure is the median of repeated runs in this process; (b) must equal (a) (checked).
Run: .venv/bin/python bench/bench_views.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.events import Splice
from core.history.categories import Breakdown, breakdown
from core.markers import placeholder, snip_marker
from core.usage.timeline import Timeline

Message = dict[str, Any]
SIZE = 5_000


def history(count: int) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "Study the repository and report."}]
    number = 0
    while len(messages) < count:
        number += 1
        tool_id = f"toolu_{number:06d}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Reading file {number} next — to compare its handlers."},
            {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": f"src/m{number}.py"}},
        ]})
        if number % 25 == 0:
            content = placeholder(f".task_outputs/tool-results/{tool_id}.txt")
        else:
            content = f"def handler_{number}(request):\n    return respond(request)  # ünïcode\n" * (20 + number % 60)
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": content}]})
    messages[3] = {"role": "user", "content": snip_marker(40, ".transcripts/transcript_1.jsonl")}
    return messages[:count]


def median_seconds(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    messages = history(SIZE)
    new: Message = {"role": "assistant", "content": [{"type": "text", "text": "One more answer to add."}]}
    grown = [*messages, new]

    def full_walk() -> dict[str, int]:
        return breakdown(grown)

    expected = full_walk()

    tracker = Breakdown(messages)

    def accumulate() -> tuple[dict[str, int], float]:
        """Apply the one-message splice to a copy of the tracker's state before the change; time only that."""
        copy = Breakdown()
        copy._parts, copy._totals = list(tracker._parts), list(tracker._totals)
        started = time.perf_counter()
        copy.apply([Splice(len(messages), 0, (new,))])
        elapsed = time.perf_counter() - started
        return copy.totals, elapsed

    assert accumulate()[0] == expected, "the accumulator disagrees with a full walk"

    full = median_seconds(full_walk, 5)
    apply_time = statistics.median(accumulate()[1] for _ in range(200))
    largest = median_seconds(lambda: tracker.largest("tool_result", 5), 20)

    timeline = Timeline()
    for number in range(SIZE):
        timeline.start(40_000 + number, messages=number)
        timeline.finish({"input_tokens": 100, "output_tokens": 10})

    def one_sample() -> None:
        timeline.start(50_000, messages=SIZE)
        timeline.finish({"input_tokens": 100, "output_tokens": 10})

    sample_time = median_seconds(one_sample, 200)

    chars = sum(expected.values())
    print(f"history: {SIZE:,} messages, {chars:,} chars of JSON; one message added")
    print(f"(a) full walk, breakdown()      {full * 1e3:9.3f} ms")
    print(f"(b) Breakdown.apply(splice)     {apply_time * 1e6:9.1f} us   {full / apply_time:8.0f}x faster than (a)")
    print(f"(c) Breakdown.largest(top 5)    {largest * 1e3:9.3f} ms   {full / largest:8.0f}x faster than (a)")
    print(f"(d) Timeline.start + finish     {sample_time * 1e6:9.1f} us   (5,000 samples behind it)")


if __name__ == "__main__":
    main()
