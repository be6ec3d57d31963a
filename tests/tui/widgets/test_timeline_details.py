"""The timeline's detail lines (tokens, cache, cost, "before it:") are shown whole at 120x40 and
160x48 (issue 18): they wrap, the view's height counts them, and the views scroll when they need more
room. The real app, online against the loopback fake API (the cost and cache figures make the
longest lines), as the new user ran it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from core.agent import Agent
from core.compaction import CompactionSettings
from tests.support.fakeapi import FakeAnthropicServer, settings_for, text_reply, tool_reply
from tests.support.pilot import settled, wait_for
from tui.app import CtxApp
from tui.widgets.timeline import TimelineView


def words(text: str) -> list[str]:
    return text.split()


def shown_rows(view: TimelineView) -> list[str]:
    """What the view paints, row by row (its own rendering, at its size)."""
    return [view.render_line(y).text for y in range(view.size.height)]


@pytest.mark.parametrize("size", [(120, 40), (160, 48)])
async def test_every_detail_line_is_shown_whole(
    anthropic_env: FakeAnthropicServer, tmp_path: Path, size: tuple[int, int]
) -> None:
    for number in (1, 2, 3):
        (tmp_path / f"f{number}.txt").write_text(
            "".join(f"line {index} of file {number}, the quick brown fox\n" for index in range(60)), encoding="utf-8")
        anthropic_env.script(tool_reply([(f"toolu_{number}", "read_file", {"path": f"f{number}.txt"})]),
                             text_reply(f"read file {number}"))
    settings = settings_for(tmp_path, model="claude-sonnet-5-5",
                            compaction=CompactionSettings(context_char_limit=6_000, keep_recent_results=1))
    agent = Agent.from_settings(settings)
    app = CtxApp(agent)
    async with app.run_test(size=size) as pilot:
        for number in (1, 2, 3):
            done = app.turns_completed
            app.chat.input.insert(f"read f{number}.txt")
            await pilot.press("enter")
            await settled(pilot, app, done + 1)
        await pilot.press("f2", "f2")  # tree -> breakdown -> timeline
        view = app.main.inspector.timeline_view
        await wait_for(pilot, lambda: app.main.inspector.views.current == "timeline" and view.size.height > 0)
        stepped = [index for index, sample in enumerate(view.samples) if sample.steps]
        assert stepped, "a call with a compaction before it (its 'before it:' line is the longest)"
        for index in [stepped[0], len(view.samples) - 1]:
            view.select(index)
            await pilot.pause(0.2)
            await check_details_are_whole(pilot, app, view)
    await agent.aclose()


async def check_details_are_whole(pilot: Pilot[Any], app: CtxApp, view: TimelineView) -> None:
    details = [line.plain for line in view.detail_lines()]
    assert any("cache read" in line and "$" in line for line in details)
    painted = " ".join(shown_rows(view))
    for line in details:
        assert " ".join(words(line)) in " ".join(words(painted)), f"cut: {line!r}"
    # no ellipsis of the view's own in the details (a diff's labels come shortened by the core)
    assert " ".join(shown_rows(view)[-len(details) * 3:]).count("…") <= sum(line.count("…") for line in details)
    views = app.main.inspector.views
    if view.region.bottom > views.region.bottom:  # taller than the room: the views scroll to its end
        assert views.max_scroll_y > 0
        await pilot.press("pagedown", "pagedown")
        await wait_for(pilot, lambda: views.scroll_y == views.max_scroll_y)
