"""SVG snapshot tests of the main states of the app (pytest-textual-snapshot's `snap_compare`).

Baselines live in tests/__snapshots__/test_tui_snapshots/; after a deliberate UI change, look at
the report and run `pytest tests/test_tui_snapshots.py --snapshot-update`.

What would differ between runs is pinned: the workdir is a fixed path (it is shown in the title bar
and feeds the offline model's tool ids), the clocks behind tool durations, the running-tool timer
and the turn indicator are frozen, the spinner has one frame, and cursors do not blink.
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

import core.agent.agent
import tui.widgets.chat_pane
import tui.widgets.tool_block
from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.model.offline import OfflineModel
from tests.support.pilot import wait_for as _wait_for
from tui.app import CtxApp
from tui.screens.archive import ArchiveScreen
from tui.screens.permission import PermissionScreen

SIZE = (160, 48)
WORKDIR = Path(tempfile.gettempdir()) / "ctxtui-snapshot-workdir"
A_TXT = "hello world\nsecond line\n"


class FrozenClock:
    """Stands in for the `time` module where the UI shows elapsed times."""

    @staticmethod
    def monotonic() -> float:
        return 1_000.0


@pytest.fixture
def workdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh workdir at a fixed path (shown in the title bar), with a.txt; clocks frozen.

    The path is shared by every checkout on the machine, so a lock file keeps two test runs from
    deleting each other's workdir mid-test."""
    lock = open(WORKDIR.with_name(WORKDIR.name + ".lock"), "w")  # held for the whole test
    fcntl.flock(lock, fcntl.LOCK_EX)
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    (WORKDIR / "a.txt").write_text(A_TXT, encoding="utf-8")
    for module in (core.agent.agent, tui.widgets.tool_block, tui.widgets.chat_pane):
        monkeypatch.setattr(module, "time", FrozenClock)
    monkeypatch.setattr(tui.widgets.chat_pane, "SPINNER", "⠿")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    try:
        yield WORKDIR
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def make_app(workdir: Path, *, compaction: CompactionSettings | None = None, ask: bool = False) -> CtxApp:
    """The real app on a real offline agent; bash is pre-approved unless `ask` (then the modal asks)."""
    settings = Settings(workdir=workdir, offline=True, compaction=compaction or CompactionSettings())

    async def allow(tool_name: str, tool_input: dict[str, Any]) -> bool:
        return True

    agent = Agent.from_settings(settings, allow_all=not ask, model=OfflineModel())
    return CtxApp(agent)


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], within: float = 20.0) -> None:
    await _wait_for(pilot, condition, limit=within)


def freeze_cursors(app: CtxApp) -> None:
    for widget in app.screen.query(Input):
        widget.cursor_blink = False
    for area in app.screen.query(TextArea):
        area.cursor_blink = False


def asking(app: CtxApp) -> bool:
    """The inspector's forecast or window worker is still out."""
    return any(worker.group in ("forecast", "window") and not worker.is_finished for worker in app.workers)


def counted(app: CtxApp) -> bool:
    """The forecast (the next request's count, the history's figures) is in, and the model's window."""
    return (
        app.gauge.state.count is not None
        and not app.gauge.state.count_stale
        and app.gauge.state.window is not None
        and not asking(app)
    )


async def settle(pilot: Pilot[Any], app: CtxApp) -> None:
    """Tree synced, gauge exact and measured (token estimate in), everything painted."""
    await wait_for(
        pilot,
        lambda: not app.message_tree.syncing
        and app.gauge.chars == app.agent.chars
        and app.gauge.state.tokens is not None
        and not app.gauge.state.tokens_stale
        and counted(app),
    )
    app.gauge.flush()
    freeze_cursors(app)
    await pilot.pause()  # the flushed gauge and the frozen cursors repaint


async def send(pilot: Pilot[Any], app: CtxApp, text: str) -> None:
    """Type `text` into the prompt, press Enter, wait for the turn to end and the inspector to settle."""
    done = app.turns_completed
    await pilot.press(*text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.turns_completed > done)
    await settle(pilot, app)


def test_start_screen(snap_compare: Any, workdir: Path) -> None:
    """Empty chat, empty gauge and tree, the OFFLINE badge in the title bar."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot, pilot.app)  # type: ignore[arg-type]

    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=run_before)


def test_after_one_read_turn(snap_compare: Any, workdir: Path) -> None:
    """`read a.txt`: the user block, the reply, a finished read_file call, gauge and tree updated."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot, pilot.app)  # type: ignore[arg-type]
        await send(pilot, pilot.app, "read a.txt")  # type: ignore[arg-type]

    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=run_before)


def test_permission_modal(snap_compare: Any, workdir: Path) -> None:
    """`run echo hello` without pre-approval: the modal shows the exact command and the three choices."""

    async def run_before(pilot: Pilot[Any]) -> None:
        app: CtxApp = pilot.app  # type: ignore[assignment]
        await settle(pilot, app)
        await pilot.press(*"run echo hello", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen))
        # a turn is waiting for the answer: the count from before it stands (marked stale) until it ends
        await wait_for(pilot, lambda: not app.message_tree.syncing and app.gauge.chars == app.agent.chars
                       and app.gauge.state.count is not None and not asking(app))
        app.gauge.flush()
        await pilot.pause()  # the flushed gauge repaints

    assert snap_compare(make_app(workdir, ask=True), terminal_size=SIZE, run_before=run_before)


@pytest.mark.slow
def test_archive_screen_on_a_placeholder(snap_compare: Any, workdir: Path) -> None:
    """Three reads over a 6,000-char limit: micro_compact leaves placeholders; Enter on one in the tree
    opens ArchiveScreen with the archived text (a search typed in)."""
    for number in (1, 2, 3):
        lines = [f"line {index:03d} of file {number}: the quick brown fox" for index in range(1, 51)]
        (workdir / f"f{number}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    compaction = CompactionSettings(context_char_limit=6_000, keep_recent_results=1)

    async def run_before(pilot: Pilot[Any]) -> None:
        app: CtxApp = pilot.app  # type: ignore[assignment]
        await settle(pilot, app)
        for number in (1, 2, 3):
            await send(pilot, app, f"read f{number}.txt")
        tree = app.message_tree
        node = next(node for _, node in tree.entries if node.data is not None and node.data.markers.get("placeholder"))
        await pilot.press("ctrl+t")
        assert app.focused is tree
        node.expand()
        await wait_for(pilot, lambda: bool(node.children))
        tree.move_cursor(node.children[0])
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
        screen = app.screen
        assert isinstance(screen, ArchiveScreen) and "line 001 of file 1" in screen.text
        await pilot.press(*"line 010")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not screen.searching and screen.current >= 0)  # on the first match
        freeze_cursors(app)
        await pilot.pause()

    assert snap_compare(make_app(workdir, compaction=compaction), terminal_size=SIZE, run_before=run_before)
