"""The ledger and the fact check on long histories, each cost as a ratio to one json.dumps of the history.

At 1,000 and 10,000 messages (turns of: a request with a constraint, a read_file call, its result
with an error line, a reply), one conversation of the agent's:
  1. facts(): the whole report (one Fact per fact the conversation held; it grows with the history).
  2. per-turn update: one turn (4 messages, new facts among them) appended through the Conversation,
     which keeps the fact index from each change.
  3. ledger update per compaction: a micro-style step that replaces one old result by a placeholder,
     applied as the keeper applies it (the splice, its ledger entry, the fact index, the ledger);
     the result's error line is also quoted in a later reply, so it stays visible.
  4. the same, when the step takes the only copy of a fact first seen in the turn just added: the
     messages older than that turn were never searched for it, so they are, once in the fact's life,
     before it is called not visible (core/facts/index.py).
The goal: rows 2 and 3 are O(changed), so their ratio to json.dumps (O(n)) falls by about 10x from
1k to 10k; rows 1 and 4 are O(n) and their ratio stays flat. `growth` is ratio(10k) / ratio(1k).

Run: python bench/bench_facts.py
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.agent.conversation import Conversation
from core.events import Splice
from core.facts.entries import result_entry
from core.facts.ledger import Ledger
from core.markers import placeholder

Message = dict[str, Any]
SIZES = (1_000, 10_000)


def turn(number: int) -> list[Message]:
    use = f"toolu_{number:06d}"
    body = "".join(f"    line {line} of module {number}\n" for line in range(12))
    return [
        {"role": "user", "content": f"Look at src/mod_{number}.py next. Never touch config_{number}.yaml."},
        {"role": "assistant", "content": [
            {"type": "text", "text": f"Reading src/mod_{number}.py."},
            {"type": "tool_use", "id": use, "name": "read_file", "input": {"path": f"src/mod_{number}.py"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use,
                                      "content": f"{body}ValueError: bad value {number}\n"}]},
        {"role": "assistant", "content": [{"type": "text", "text": f"It raises ValueError: bad value {number - 1}."}]},
    ]


def history(count: int) -> list[Message]:
    messages: list[Message] = []
    number = 0
    while len(messages) < count:
        messages += turn(number)
        number += 1
    return messages[:count]


def best(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def dumps_time(messages: list[Message]) -> float:
    return best(lambda: json.dumps(messages, default=str, ensure_ascii=False), 15)


def compaction(conversation: Conversation, ledger: Ledger, index: int) -> None:
    """Replace the result at `index` by a placeholder, as the keeper applies a micro step."""
    history = conversation.history
    path = f".task_outputs/tool-results/{history[index]['content'][0]['tool_use_id']}.txt"
    entry, _ = result_entry("micro_compact", history, index, 0, path, True)
    old = history[index]
    block = {**old["content"][0], "content": placeholder(path)}
    change = ledger.adding(ledger.stamp([entry], 1))
    conversation.compacted((Splice(index, 1, ({**old, "content": [block]},)),), "prepare", ["micro_compact"], [path],
                           undoable=False, parts=[(1, change.added)], ledger=change)
    ledger.apply(change)


def measure(count: int) -> dict[str, float]:
    messages = history(count)
    conversation = Conversation(messages)
    ledger = Ledger()
    unit = dumps_time(list(conversation.history))
    figures = {"facts()": best(conversation.facts.report, 5) / unit}
    number = count
    def append_turn() -> None:
        nonlocal number
        for message in turn(number):
            conversation.append(message, "user")
        number += 1
    figures["per-turn update"] = best(append_turn, 20) / unit
    # results whose error line a later reply quotes (turn n's reply quotes n - 1): taking them keeps it visible
    quoted = iter(range(2, count - 8, 4))
    figures["ledger update per compaction"] = best(lambda: compaction(conversation, ledger, next(quoted)), 20) / unit
    # a turn just added: nothing quotes its error line, so the step takes its last copy, and the new
    # fact is searched for in the messages older than it (once in its life)
    times = []
    for _ in range(5):
        append_turn()
        index = len(conversation.history) - 2
        started = time.perf_counter()
        compaction(conversation, ledger, index)
        times.append(time.perf_counter() - started)
    figures["compaction that takes a new fact's last copy"] = min(times) / unit
    figures["json.dumps of the history (ms)"] = unit * 1000
    return figures


def main() -> None:
    results = {count: measure(count) for count in SIZES}
    rows = list(results[SIZES[0]])
    unit = "json.dumps of the history (ms)"
    print(f"{'ratio to one json.dumps of the history':48}" + "".join(f"{count:>14,}" for count in SIZES)
          + f"{'growth':>10}{'ms at ' + format(SIZES[-1], ','):>16}")
    for row in rows:
        values = [results[count][row] for count in SIZES]
        growth = values[-1] / values[0] if values[0] else float("nan")
        if row == unit:
            print(f"{row:48}" + "".join(f"{value:>14.3f}" for value in values) + f"{growth:>10.2f}")
            continue
        ms = values[-1] * results[SIZES[-1]][unit]
        print(f"{row:48}" + "".join(f"{value:>13.4f}x" for value in values) + f"{growth:>10.2f}{ms:>14.3f}ms")


if __name__ == "__main__":
    main()
