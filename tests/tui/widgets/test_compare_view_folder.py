"""The compare view of a proxy recording folder replays the conversation `--conversation` chose."""

from __future__ import annotations

from pathlib import Path

from core.compaction import CompactionSettings
from core.config import Settings
from core.sessions.inspection import load_file, report
from tests.core.sessions.test_proxy_folder import make_conversation
from tests.support.pilot import wait_for
from tui.inspect_app import InspectApp
from tui.widgets.compare_view import CompareView, EngineTimeline


async def test_the_chosen_conversation_is_compared(tmp_path: Path) -> None:
    folder, workdir = tmp_path / "proxy", tmp_path / "w"
    folder.mkdir()
    workdir.mkdir()
    make_conversation(folder, 3, prefix="20261130-0900", first="The older task.")
    make_conversation(folder, 6)  # the newest: the default
    inspected = load_file(folder, "1")
    assert inspected.conversation == "20261130-090000-000-abcdef"
    app = InspectApp(
        inspected, await report(inspected, CompactionSettings()), compare=Settings(workdir=workdir)
    )
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(CompareView)
        await wait_for(pilot, lambda: len(view.query(EngineTimeline)) > 0)
        assert view.data is not None
        assert {row["calls"] for row in view.data["engines"]} == {3}  # not the newest conversation's 6
