"""Eager against cache-aware compaction timing: one scripted 40-call session, priced (issue 19).

The same session runs twice, once per timing, through the real agent, the real anthropic SDK and
the loopback fake API (tests/support/fakeapi.py), whose prompt cache works by prefix with 5-minute
TTLs on a clock the script moves. The session: four turns of ten model calls, each call but the
last of a turn reading one file (3,000 to 9,000 characters), with pauses between the turns of 1, 8
and 2 minutes (the 8-minute one lets the cache go cold), and 20 seconds per call. The history
crosses the 50,000-character limit several times; the model's window is 40,000 tokens (the fake
refuses a request over it), so the cache-aware ceiling is 32,000 tokens: the waiting steps run
once because the cache went cold and once because the ceiling was reached.

Per timing: the total cost at claude-sonnet-5-5's prices (core/usage/prices.py), the cache hit
rate, the peak request in tokens, the steps that ran, and two checks: no request over the ceiling,
and nothing lost (every tool result's full text is in the final context or in the archive). Last, the
ratio of the two costs. The goal: cache-aware at least 15% cheaper.

Run: python bench/bench_cache.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.agent import Agent
from core.events import CompactionHeld, CompactionStep, PermissionRequested, ToolCallFinished
from core.model.base import SUMMARY_SYSTEM_PROMPT
from tests.support.fakeapi import (
    Exchange,
    FakeAnthropicServer,
    FakeClock,
    MessageReply,
    Response,
    settings_for,
    text_reply,
    tool_reply,
)

MODEL = "claude-sonnet-5-5"
WINDOW = 40_000
CEILING = int(WINDOW * 0.8)
TURNS = 4
CALLS_PER_TURN = 10
PAUSES = (60.0, 8 * 60.0, 120.0)  # between the turns
SECONDS_PER_CALL = 20.0
SIZES = (3_000, 6_000, 9_000, 4_500, 7_500)


@dataclass
class Timed(Response):
    """A scripted reply, after which the script's clock moves on (the time the call and its tool took)."""

    reply: MessageReply
    clock: FakeClock
    seconds: float

    def respond(self, exchange: Exchange) -> None:
        self.reply.respond(exchange)
        self.clock.advance(self.seconds)


def file_text(index: int) -> str:
    size = SIZES[index % len(SIZES)]
    line = f"file {index:02d}: a line of the module under study, with some code in it = {index}\n"
    return (line * (size // len(line) + 1))[:size]


class Script:
    """The model's side of the session: call n of a turn reads file n; the last call answers."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> Response:
        if body.get("system") == SUMMARY_SYSTEM_PROMPT:
            return text_reply("Summary: files were read and studied; the work goes on.")
        call = self.calls
        self.calls += 1
        turn, step = divmod(call, CALLS_PER_TURN)
        if step == CALLS_PER_TURN - 1:
            return Timed(text_reply(f"Turn {turn + 1} done."), self.clock, SECONDS_PER_CALL)
        index = turn * CALLS_PER_TURN + step
        reply = tool_reply([(f"toolu_{index:02d}", "read_file", {"path": f"f{index:02d}.txt"})], text="Reading.")
        return Timed(reply, self.clock, SECONDS_PER_CALL)


@dataclass
class Result:
    timing: str
    cost: float
    hit_rate: float
    peak: int
    calls: int
    steps: Counter[str]
    held: int
    over_ceiling: int
    lost: list[str]
    errors: list[str]


def nothing_lost(workdir: Path, agent: Agent, outputs: dict[str, str]) -> list[str]:
    """The tool results whose full text is neither in the final context nor in the archive (a result
    file, or a transcript of a snip or a summary)."""
    in_context = json.dumps(list(agent.messages), ensure_ascii=False)
    archived = {path.read_text(encoding="utf-8") for path in (workdir / ".task_outputs" / "tool-results").glob("*")}
    transcripts = "".join(path.read_text(encoding="utf-8") for path in (workdir / ".transcripts").glob("*.jsonl"))
    lost = []
    for tool_use_id, text in outputs.items():
        escaped = json.dumps(text, ensure_ascii=False)[1:-1]
        if text in archived or escaped in in_context or escaped in transcripts:
            continue
        lost.append(tool_use_id)
    return lost


async def session(timing: str) -> Result:
    with tempfile.TemporaryDirectory(prefix="ctxtui-bench-cache-") as scratch, FakeAnthropicServer() as server:
        workdir = Path(scratch)
        reads = [step for turn in range(TURNS) for step in range(CALLS_PER_TURN - 1)]
        for index in range(len(reads)):
            (workdir / f"f{index:02d}.txt").write_text(file_text(index), encoding="utf-8")
        clock = server.use_clock(FakeClock())
        server.models[MODEL] = WINDOW
        server.enforce_window = True
        server.default = Script(clock)
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        os.environ["ANTHROPIC_API_KEY"] = "bench-key-not-real"
        agent = Agent.from_settings(settings_for(workdir, model=MODEL, compaction_timing=timing, thinking="off"),
                                    allow_all=True)
        agent.state.clock = clock
        steps: Counter[str] = Counter()
        outputs: dict[str, str] = {}
        held = 0
        errors: list[str] = []
        try:
            for turn in range(TURNS):
                async for event in agent.run_turn(f"Study the next files (part {turn + 1})."):
                    if isinstance(event, CompactionStep) and event.saved > 0:
                        steps[event.step] += 1
                    elif isinstance(event, CompactionHeld):
                        held += 1
                    elif isinstance(event, ToolCallFinished):
                        outputs[event.tool_use_id] = event.output
                    elif isinstance(event, PermissionRequested):
                        event.reply.set_result("once")
                if turn < len(PAUSES):
                    clock.advance(PAUSES[turn])
            samples = agent.timeline
            errors = [sample.error for sample in samples if sample.error]
            turns = [sample for sample in samples if sample.kind == "turn"]
            prompt = sum(sample.prompt_tokens or 0 for sample in turns)
            read = sum(sample.cache_read_tokens or 0 for sample in turns)
            lost = nothing_lost(workdir, agent, outputs)
            return Result(
                timing, sum(sample.cost or 0 for sample in samples), read / prompt if prompt else 0.0,
                max(sample.prompt_tokens or 0 for sample in turns), len(turns), steps, held,
                sum((sample.prompt_tokens or 0) > CEILING for sample in turns), lost, errors,
            )
        finally:
            await agent.aclose()


async def main() -> None:
    results = [await session("eager"), await session("cache-aware")]
    print(f"One scripted session: {TURNS} turns x {CALLS_PER_TURN} calls, pauses {', '.join(f'{p:g}s' for p in PAUSES)}, "
          f"{MODEL} prices, window {WINDOW:,} tokens (cache-aware ceiling {CEILING:,})")
    print(f"{'timing':<12} {'calls':>5} {'cost':>10} {'hit rate':>9} {'peak tokens':>12} {'over ceiling':>13} "
          f"{'lost':>5}  steps run")
    for result in results:
        steps = ", ".join(f"{name} x{count}" for name, count in sorted(result.steps.items())) or "-"
        print(f"{result.timing:<12} {result.calls:>5} ${result.cost:>9.4f} {100 * result.hit_rate:>8.1f}% "
              f"{result.peak:>12,} {result.over_ceiling:>13} {len(result.lost):>5}  {steps}"
              + (f"; held {result.held}x" if result.held else ""))
        for error in result.errors:
            print(f"  error: {error}")
    eager, aware = results
    ratio = aware.cost / eager.cost if eager.cost else float("nan")
    print(f"cost ratio cache-aware / eager: {ratio:.3f} ({100 * (1 - ratio):.1f}% cheaper; goal: at least 15%)")
    ok = ratio <= 0.85 and aware.over_ceiling == 0 and not aware.lost and not eager.lost
    print("goal met" if ok else "goal NOT met")


if __name__ == "__main__":
    asyncio.run(main())
