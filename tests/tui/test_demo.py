"""Pilot tests of the demo mode: commands typed and sent in turn, the real demo fires every step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot

from core.agent import Agent
from core.config import Settings
from core.history import pairing_problems
from tests.support.pilot import settled
from tests.support.pilot import wait_for as _wait_for
from tui import messages as msg
from tui.app import CtxApp
from tui.widgets.chat_blocks import UserBlock


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], limit: float = 60.0) -> None:
    """Wait as the shared helper does, polling less often (a demo runs many turns)."""
    await _wait_for(pilot, condition, limit=limit, step=0.05)


def demo_finished(app: CtxApp) -> bool:
    return all(worker.is_finished for worker in app.workers if worker.group == "demo") and app.turn_idle.is_set()


async def allow_all(tool_name: str, tool_input: dict[str, Any]) -> bool:
    return True


async def test_demo_types_and_sends_each_command_in_turn(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True), allow_all=True)
    commands = ["read a.txt", "$ echo demo", "compact the demo"]
    app = CtxApp(agent, demo_commands=commands, demo_pause=0.05)
    notes: list[str] = []
    seen: list[Message] = []
    async with app.run_test(size=(160, 48), message_hook=seen.append) as pilot:
        original = app.notify
        app.notify = lambda message, **kw: (notes.append(message), original(message, **kw))[1]  # type: ignore[method-assign]
        await wait_for(pilot, lambda: app.turns_completed >= 3 and demo_finished(app))
        await settled(pilot, app)
        assert [block.text for block in app.chat.transcript.query(UserBlock)] == commands
        started = [m.event.request for m in seen if isinstance(m, msg.TurnStarted)]
        assert started == commands  # one turn per command, in order
        assert app.chat.input.prompt_history[-3:] == commands
        assert any("Demo finished" in note for note in notes)
        assert pairing_problems(agent.messages) == []
        assert app.message_tree.entries[0][1].data is not None
        assert app.message_tree.entries[0][1].data.kind == "compacted"
    await agent.aclose()


@pytest.mark.slow
async def test_the_real_demo_reaches_every_compaction_step(tmp_path: Path) -> None:
    demo = pytest.importorskip("tui.demo")
    await demo.build_demo_workspace(tmp_path)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, yes=True), allow_all=True)
    app = CtxApp(agent, demo_commands=list(demo.DEMO_COMMANDS), demo_pause=0.0)
    seen: list[Message] = []
    async with app.run_test(size=(160, 48), message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: app.turns_completed >= len(demo.DEMO_COMMANDS) and demo_finished(app), 120)
        steps = {m.event.step for m in seen if isinstance(m, msg.CompactionStep)}
        assert {"tool_result_budget", "snip_compact", "micro_compact", "fit_tool_results", "compact_history"} <= steps
        assert pairing_problems(agent.messages) == []
        assert not [m for m in seen if isinstance(m, msg.TurnCrashed)]
    await agent.aclose()


async def test_the_demo_project_is_written_without_replacing_a_file(tmp_path: Path) -> None:
    from tui.demo import build_demo_workspace

    (tmp_path / "README.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(FileExistsError):
        await build_demo_workspace(tmp_path)
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "mine\n"
