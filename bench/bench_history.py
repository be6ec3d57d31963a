"""Flat at any size: the core's per-turn costs on long histories, each printed as a ratio (issue 12).

Rows (each against a peer measured in the same run):
  1. token count before a model call, warm: one turn (4 messages) appended to 10,000 and 100,000
     messages, then `agent.measure()`; the ratio 100k / 10k (flat = about 1).
  2. per-turn prepare, one Compactor, 2k / 10k / 50k messages (snip and the limit out of the way,
     so nothing fires): what the agent calls before each model call; the ratio 50k / 2k.
  3. size after a copy-on-write edit in the middle of 101,000 messages, against one json.dumps of
     the history (ratio below 1: cheaper than serialising once).
  4. memory after the history is replaced by one message, after 600 turns at default settings
     (snip every turn, tokens counted every turn): MiB still held, against the live history's JSON.

Run: python bench/bench_history.py [--repo PATH]   (PATH: another checkout to measure, e.g. main)
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

Message = dict[str, Any]


def turn(number: int, result_chars: int = 400) -> list[Message]:
    use = f"toolu_{number:06d}"
    return [
        {"role": "user", "content": f"read src/file_{number}.py and fix the bug"},
        {"role": "assistant", "content": [
            {"type": "text", "text": f"Reading src/file_{number}.py."},
            {"type": "tool_use", "id": use, "name": "read_file", "input": {"path": f"src/file_{number}.py"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use, "content": f"line of file {number}\n" * (result_chars // 20)}
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": f"Fixed file {number}."}]},
    ]


def history(count: int) -> list[Message]:
    messages: list[Message] = []
    number = 0
    while len(messages) < count:
        messages += turn(number)
        number += 1
    return messages[:count]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.3f} ms"


def make_agent(workdir: Path, messages: list[Message], **compaction: Any) -> Any:
    from core.agent import Agent
    from core.archive import Archive
    from core.compaction import CompactionSettings, Compactor
    from core.config import Settings
    from core.model.offline import OfflineModel
    from core.tools import ToolBox, Workspace

    model = OfflineModel()
    settings = CompactionSettings(**compaction)
    compactor = Compactor(Archive(workdir), summarize=model.summarize, settings=settings)
    return Agent(model, ToolBox(Workspace(workdir)), compactor, settings=Settings(workdir=workdir, offline=True),
                 messages=messages)


async def token_count(workdir: Path, count: int, turns: int = 15) -> float:
    agent = make_agent(workdir, history(count))
    await agent.measure()  # warm: every message counted once
    times = []
    for number in range(turns):
        agent.messages.extend(turn(10_000_000 + number))
        start = time.perf_counter()
        await agent.measure()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def prepare_per_turn(workdir: Path, count: int, turns: int = 30) -> float:
    from core.archive import Archive
    from core.compaction import CompactionSettings, Compactor

    settings = CompactionSettings(context_char_limit=10**12, snip_trigger_messages=10**9, snip_target_messages=30)
    compactor = Compactor(Archive(workdir), settings=settings)
    try:
        from core.history.store import History

        messages: list[Message] = History(history(count))
    except ImportError:  # a checkout without the history's owner
        messages = history(count)
    run = getattr(compactor, "prepare_changes", None) or compactor.prepare
    await run(messages, "fix the bug")
    times = []
    for number in range(turns):
        messages.extend(turn(20_000_000 + number))
        start = time.perf_counter()
        await run(messages, "fix the bug")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def size_after_edit(count: int = 101_000, repeats: int = 5) -> tuple[float, float]:
    from core.archive import Archive
    from core.compaction import Compactor

    compactor = Compactor(Archive(Path(tempfile.mkdtemp())))
    try:
        from core.history.store import History

        messages: list[Message] = History(history(count))
    except ImportError:
        messages = history(count)
    compactor.estimate_chars(messages)  # warm
    edits, dumps = [], []
    for number in range(repeats):
        middle = count // 2 + number * 4 + 2
        edited = copy.copy(messages[middle])
        edited["content"] = [{**edited["content"][0], "content": f"[Earlier tool result saved at x{number}.txt]"}]
        start = time.perf_counter()
        messages[middle] = edited  # the copy-on-write edit a compaction step makes
        size = compactor.estimate_chars(messages)
        edits.append(time.perf_counter() - start)
        start = time.perf_counter()
        exact = len(json.dumps(messages, default=str, ensure_ascii=False))
        dumps.append(time.perf_counter() - start)
        assert size == exact, (size, exact)
    return statistics.median(edits), statistics.median(dumps)


async def memory_after_replacement(workdir: Path, turns: int = 600) -> tuple[float, int]:
    """MiB held (above the start) once the history is replaced by one message, and that message's JSON."""
    gc.collect()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    agent = make_agent(workdir, [])
    for number in range(turns):
        for message in turn(number, result_chars=2_000):
            agent.messages.append(message)
        compacted = await agent.compactor.prepare(agent.messages, "fix the bug")
        agent.messages[:] = compacted
        await agent.measure()
    agent.messages[:] = [{"role": "user", "content": "[Compacted] the summary"}]
    await agent.measure()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    live = len(json.dumps(agent.messages))
    await agent.aclose()
    return held / 2**20, live


async def main(repo: Path) -> None:
    sys.path.insert(0, str(repo))
    import core

    print(f"ctxtui history bench: {Path(core.__file__).parent.parent} (Python {sys.version.split()[0]})")
    with tempfile.TemporaryDirectory(prefix="ctxtui-bench-") as tmp:
        root = Path(tmp)
        for name in ("t10", "t100", "p2", "p10", "p50", "mem"):
            (root / name).mkdir()
        tokens_10k = await token_count(root / "t10", 10_000)
        tokens_100k = await token_count(root / "t100", 100_000)
        prep = {count: await prepare_per_turn(root / f"p{count // 1000}", count) for count in (2_000, 10_000, 50_000)}
        edit, dump = size_after_edit()
        held, live = await memory_after_replacement(root / "mem")
    rows = [
        ("token count before a call, warm: 10,000 msgs", ms(tokens_10k), ""),
        ("                                 100,000 msgs", ms(tokens_100k),
         f"{tokens_100k / tokens_10k:5.2f}x of 10k (goal <= 2x)"),
        ("per-turn prepare: 2,000 msgs", ms(prep[2_000]), ""),
        ("                  10,000 msgs", ms(prep[10_000]), f"{prep[10_000] / prep[2_000]:5.2f}x of 2k"),
        ("                  50,000 msgs", ms(prep[50_000]), f"{prep[50_000] / prep[2_000]:5.2f}x of 2k (goal <= 2x)"),
        ("size after an edit in the middle of 101,000 msgs", ms(edit),
         f"{edit / dump:7.4f}x of one json.dumps ({ms(dump).strip()})"),
        ("memory held after 600 turns, history replaced by 1", f"{held:8.2f} MiB",
         f"live history: {live} chars of JSON"),
    ]
    width = max(len(row[0]) for row in rows)
    for name, value, ratio in rows:
        print(f"{name:<{width}}  {value}  {ratio}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    asyncio.run(main(parser.parse_args().repo))
