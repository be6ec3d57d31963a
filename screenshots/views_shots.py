"""The screenshots of the cache's views and of the ledger's (run through make_screenshots.py:
`make_screenshots.py economics` or `make_screenshots.py ledger`).

  gauge-cache.png       online, cache-aware timing: the gauge's cache clock and hit rate, a step waiting
  timeline-misses.png   online, eager: bars coloured by cache read / write / uncached, the call after a
                        micro_compact selected (its miss and its diff from the previous request)
  step-cost.png         the same session's chat and compaction log: micro_compact's cost line
  dropped.png           offline: the ledger after a drop and two summaries, grouped by compaction
  facts.png             the same session's Facts view: the constraints the summaries left out

Online means the real SDK against tests/support/fakeapi.py on 127.0.0.1 (its prompt cache on a clock
of the script's), as the proxy's screenshots do; nothing goes to the network.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.model.offline import OfflineModel
from tui.app import CtxApp

Save = Callable[[App[Any], str], None]
Send = Callable[[Pilot[Any], CtxApp, str], Awaitable[None]]
SIZE = (160, 48)
MODEL = "claude-sonnet-5-5"
LIMIT = CompactionSettings(context_char_limit=9_000, keep_recent_results=1, micro_min_chars=50,
                           fit_preview_chars=400, persisted_preview_chars=500, large_result_char_limit=3_000)
RULES = "Some context first.\nNever touch prod.yaml. Only edit files under src/. Always run the tests before a commit."


@contextmanager
def pointed_at(base_url: str) -> Iterator[None]:
    """ANTHROPIC_BASE_URL and a dummy key for the SDK, for the block only."""
    saved = {name: os.environ.get(name) for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    os.environ.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="screenshot-key-not-real")
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def write_files(workdir: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (workdir / name).write_text((f"{name} holds this line\n" * 200)[:3_500], encoding="utf-8")


async def economics_views(workdir: Path, save: Save, send: Send, settle: Callable[..., Awaitable[None]]) -> None:
    """gauge-cache, timeline-misses, step-cost: two online sessions on the fake's prompt cache."""
    from tests.support.fakeapi import FakeAnthropicServer, FakeClock, settings_for, text_reply, tool_reply

    write_files(workdir)
    with FakeAnthropicServer() as fake, pointed_at(fake.base_url):
        clock = fake.use_clock(FakeClock())
        for timing in ("eager", "cache-aware"):
            fake.script(
                tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
                tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
                tool_reply([("toolu_c", "read_file", {"path": "c.txt"})]),
                text_reply("I read all three files."),
            )
            settings = settings_for(workdir, model=MODEL, compaction=LIMIT, compaction_timing=timing, yes=True,
                                    cache_ceiling_tokens=100_000)
            agent = Agent.from_settings(settings)
            agent.economics.clock = clock
            app = CtxApp(agent)
            async with app.run_test(size=SIZE) as pilot:
                app.gauge.clock = clock
                app.chat.input.cursor_blink = False
                await send(pilot, app, "read a.txt, b.txt and c.txt")
                clock.advance(48)
                await send(pilot, app, "thanks")
                await settle(pilot, app)
                if timing == "eager":
                    save(app, "step-cost")
                    await app.submit("/timeline")
                    view = app.main.timeline_view
                    missed = next(index for index, sample in enumerate(agent.timeline)
                                  if sample.cache_miss is not None and sample.cache_miss.by)
                    view.select(missed)
                    await settle(pilot, app)
                    save(app, "timeline-misses")
                else:
                    clock.advance(65)
                    await pilot.pause(1.2)  # the gauge's own timer repaints the clock
                    save(app, "gauge-cache")
            await agent.aclose()


async def ledger_views(workdir: Path, save: Save, send: Send, settle: Callable[..., Awaitable[None]]) -> None:
    """dropped + facts: rules typed, files read, a result dropped, two summaries that leave rules out."""
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True, yes=True), model=OfflineModel())
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        app.chat.input.cursor_blink = False
        await send(pilot, app, RULES)
        await send(pilot, app, "read src/module_01.py")
        await send(pilot, app, "read src/module_02.py")
        first = next(block["tool_use_id"] for message in agent.messages if isinstance(message["content"], list)
                     for block in message["content"] if block.get("type") == "tool_result")
        await app.submit(f"/drop {first}")
        await _compact(pilot, app, "Read module_01 and module_02; the user said: Only edit files under src/.")
        await send(pilot, app, "read src/module_03.py")
        await send(pilot, app, "read logs/test.log")
        await _compact(pilot, app, "Read module_03 and the test log.")
        await pilot.press(*["f9"] * 6)
        await app.submit("/dropped")
        await settle(pilot, app)
        save(app, "dropped")
        await app.submit("/facts")
        await settle(pilot, app)
        save(app, "facts")
    await agent.aclose()


async def _compact(pilot: Pilot[Any], app: CtxApp, summary: str) -> None:
    done = app.turns_completed
    app.main.start_compact(None, summary=summary)
    while app.turns_completed <= done:
        await pilot.pause(0.02)
