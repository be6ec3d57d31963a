"""The three readers that were quadratic, against their old behaviour in the same run (issue 18 item 10).

  claude_code   a Claude Code session whose reply is written as N records sharing one message id,
                then N tool-result records: `read_claude_code` (merges in place) against the old
                merge (a new list per record), N = 4,000 and 8,000 records each.
  pins          resuming a history of N read calls with every result and request pinned:
                `pin_targets` (one pass) against `pin_target` per pin (pins x messages), N = 600 and 1,200.
  parse_marker  a 50 kB and a 100 kB text that starts like a summary and is full of its headings:
                `parse_marker` (a constant number of scans) against the format's regex (which
                backtracked), and a one-pass linear peer (`str.count` of the heading) for scale.

Each figure is the best of RUNS runs. The ratios that matter: how each grows from n to 2n (about 2
for linear work, 4 for quadratic) and old/new at the larger size.

Run: python bench/bench_readers.py [RUNS]
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.compaction.steering import pin_target, pin_targets
from core.history.messages import user_pin_key
from core.markers import parse_marker
from core.sessions import claude_code
from core.sessions.claude_code import read_claude_code

Message = dict[str, Any]


def best(runs: int, work: Callable[[], object]) -> float:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return min(timings)


def row(name: str, small: float, large: float, old_small: float, old_large: float) -> None:
    print(f"{name:<13} new {small * 1000:10.3f} -> {large * 1000:10.3f} ms (x{large / small:4.1f})   "
          f"old {old_small * 1000:10.1f} -> {old_large * 1000:10.1f} ms (x{old_large / old_small:4.1f})   "
          f"old/new at 2n: {old_large / large:7.1f}")


# --------------------------------------------------------------------------- claude_code


def claude_code_file(folder: Path, records: int) -> Path:
    lines = [{"type": "user", "uuid": "u0", "parentUuid": None, "message": {"role": "user", "content": "go"}}]
    parent = "u0"
    for number in range(records):
        lines.append({"type": "assistant", "uuid": f"a{number}", "parentUuid": parent, "message": {
            "id": "msg_one", "role": "assistant",
            "content": [{"type": "tool_use", "id": f"toolu_{number}", "name": "Read", "input": {"n": number}}]}})
        parent = f"a{number}"
    for number in range(records):
        lines.append({"type": "user", "uuid": f"r{number}", "parentUuid": parent, "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": "ok"}]}})
        parent = f"r{number}"
    path = folder / f"claude_{records}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def old_merge_into(merged: Message, message: Message) -> None:
    """The merge before the fix: a new list per record (and the 'only results?' check walked it too)."""
    claude_code._only_tool_results(merged)
    merged["content"] = [*claude_code._as_blocks(merged["content"]), *claude_code._as_blocks(message["content"])]


def bench_claude_code(runs: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        paths = [claude_code_file(Path(scratch), count) for count in (4_000, 8_000)]
        new = [best(runs, lambda path=path: read_claude_code(path)) for path in paths]
        linear_merge = claude_code._merge_into
        claude_code._merge_into = old_merge_into  # type: ignore[assignment]
        try:
            old = [best(runs, lambda path=path: read_claude_code(path)) for path in paths]
        finally:
            claude_code._merge_into = linear_merge  # type: ignore[assignment]
    row("claude_code", *new, *old)


# --------------------------------------------------------------------------- pins


def pinned_history(pairs: int) -> tuple[list[Message], list[str]]:
    messages: list[Message] = []
    keys: list[str] = []
    for number in range(pairs):
        request: Message = {"role": "user", "content": f"read file {number}"}
        tool_id = f"toolu_{number:06d}"
        messages += [request,
                     {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "read_file",
                                                        "input": {"path": f"f{number}.txt"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "x"}]},
                     {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
        keys += [tool_id, str(user_pin_key(request))]
    return messages, keys


def bench_pins(runs: int) -> None:
    cases = [pinned_history(count) for count in (600, 1_200)]
    new = [best(runs, lambda case=case: pin_targets(*case)) for case in cases]
    old = [best(runs, lambda case=case: [pin_target(case[0], key) for key in case[1]]) for case in cases]
    row("pins", *new, *old)


# --------------------------------------------------------------------------- parse_marker


OLD_SUMMARY_RE = re.compile(
    r"\A\[(?P<title>Compacted|Reactive compact)\]\n\nCurrent user request:\n(?P<request>.*)\n\n"
    r"Conversation summary \(reference only\):\n(?P<summary>.*)\n\nFull transcript: (?P<path>[^\n]+)\Z",
    re.DOTALL,
)
HEADING = "\n\nConversation summary (reference only):\n"


def bench_markers(runs: int) -> None:
    texts = ["[Compacted]\n\nCurrent user request:\n" + HEADING * (size // len(HEADING)) for size in (50_000, 100_000)]
    new = [best(runs, lambda text=text: parse_marker(text)) for text in texts]
    old = [best(max(1, runs // 3), lambda text=text: OLD_SUMMARY_RE.match(text)) for text in texts]
    peer = [best(runs, lambda text=text: text.count(HEADING)) for text in texts]
    row("parse_marker", *new, *old)
    print(f"{'':<13} linear peer (str.count) {peer[0] * 1000:7.2f} -> {peer[1] * 1000:7.2f} ms "
          f"(x{peer[1] / peer[0]:4.1f}); parse_marker / peer at 2n: {new[1] / peer[1]:5.1f}")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    bench_claude_code(runs)
    bench_pins(runs)
    bench_markers(runs)


if __name__ == "__main__":
    main()
