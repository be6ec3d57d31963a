"""How the agent's parts talk during a plain turn: hops back into agent.py and pipeline runs.

A "plain turn" here: the cache is warm (an earlier turn read three files over the real SDK against the
loopback fake API, on a fake clock), the person sends one more request and the model answers in text;
then the view asks for the forecast, as the TUI does after every turn. Counted, per timing:

- hops: calls of a function defined in core/agent/agent.py made from another module of core/agent/
  (a part calling back into the agent: a lambda it was handed, a method of the agent);
- part calls: calls from one part's module of core/agent/ into another part's (neither agent.py, nor the
  state the parts share: state.py and conversation.py): the web of
  parts that hold each other;
- dry runs: `Compactor.dry_run` calls (the pipeline run to see what it would do);
- prepares: real pipeline runs (`Compactor.prepare_events`).

Prints one line per timing and phase. No timing is measured: these are counts, the same on every run.
Run: .venv/bin/python bench/bench_shape.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.agent import Agent
from core.compaction import CompactionSettings
from core.compaction.pipeline import Compactor
from tests.support.fakeapi import FakeAnthropicServer, FakeClock, settings_for, text_reply, tool_reply

ROOT = Path(__file__).resolve().parents[1]
AGENT_FILE = str(ROOT / "core" / "agent" / "agent.py")
PARTS = str(ROOT / "core" / "agent") + "/"
STATE = ("state.py", "conversation.py")  # the conversation's state, which the parts share: not a part
LIMIT = CompactionSettings(
    context_char_limit=9_000,
    keep_recent_results=1,
    micro_min_chars=50,
    fit_preview_chars=400,
    persisted_preview_chars=500,
    large_result_char_limit=3_000,
)


class Counts:
    def __init__(self) -> None:
        self.counter: Counter[str] = Counter()
        self.frames: list[FrameType] = []  # kept alive, so that their ids stay unique
        self.seen: set[int] = set()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_code.co_filename
        caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
        if not callee.startswith(PARTS) or not caller.startswith(PARTS) or callee == caller:
            return
        if id(frame) in self.seen:
            return  # a resumed generator is no new call
        self.seen.add(id(frame))
        self.frames.append(frame)
        if callee == AGENT_FILE:
            self.counter["hops"] += 1
        elif caller != AGENT_FILE and Path(callee).name not in STATE and Path(caller).name not in STATE:
            self.counter["part calls"] += 1


def wrap(counts: Counts) -> None:
    dry, prepare = Compactor.dry_run, Compactor.prepare_events

    async def dry_run(self: Compactor, *args: Any, **kwargs: Any) -> Any:
        counts.counter["dry runs"] += 1
        return await dry(self, *args, **kwargs)

    def prepare_events(self: Compactor, *args: Any, **kwargs: Any) -> Any:
        counts.counter["prepares"] += 1
        return prepare(self, *args, **kwargs)

    Compactor.dry_run = dry_run  # type: ignore[method-assign]
    Compactor.prepare_events = prepare_events  # type: ignore[method-assign]


async def measure(timing: str, counts: Counts) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropicServer() as server:
        workdir = Path(tmp)
        for name in ("a.txt", "b.txt", "c.txt"):
            (workdir / name).write_text((f"{name} holds this line\n" * 200)[:3_500])
        import os

        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        os.environ["ANTHROPIC_API_KEY"] = "test-key-not-real"
        clock = server.use_clock(FakeClock())
        settings = settings_for(
            workdir, model="claude-sonnet-5-5", compaction=LIMIT, compaction_timing=timing,
            cache_ceiling_tokens=100_000, yes=True,
        )
        agent = Agent.from_settings(settings)
        agent.state.clock = clock
        server.script(
            tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
            tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
            tool_reply([("toolu_c", "read_file", {"path": "c.txt"})]),
            text_reply("read all three"),
            text_reply("plain answer"),
        )
        async for _ in agent.run_turn("read a, b and c"):
            pass
        async for _ in agent.forecast():
            pass
        counts.counter.clear()
        counts.seen.clear()
        counts.frames.clear()
        sys.setprofile(counts.profile)
        async for _ in agent.run_turn("and now?"):
            pass
        sys.setprofile(None)
        out["plain turn"] = Counter(counts.counter)
        counts.counter.clear()
        counts.seen.clear()
        counts.frames.clear()
        sys.setprofile(counts.profile)
        async for _ in agent.forecast():
            pass
        sys.setprofile(None)
        out["forecast after it"] = Counter(counts.counter)
        await agent.aclose()
    return out


def main() -> None:
    counts = Counts()
    wrap(counts)
    for timing in ("eager", "cache-aware"):
        for phase, counter in asyncio.run(measure(timing, counts)).items():
            figures = ", ".join(f"{key} {counter[key]}" for key in ("hops", "part calls", "dry runs", "prepares"))
            print(f"{timing:12} {phase:18} {figures}")


if __name__ == "__main__":
    main()
