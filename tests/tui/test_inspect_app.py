"""The read-only inspector on a file (`ctxtui inspect FILE`), driven through Pilot."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from core.archive import Archive
from core.compaction import CompactionSettings
from core.markers import placeholder
from core.sessions.inspection import load_file, report
from tests.support.pilot import wait_for
from tui.inspect_app import InspectApp
from tui.screens.archive import ArchiveScreen
from tui.widgets.context_gauge import ContextGauge
from tui.widgets.message_tree import MessageTree


async def test_the_inspector_shows_a_transcript_and_opens_its_archive_links(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    full = "the whole archived result\n" * 50
    saved = await archive.save_tool_result("toolu_1", full)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                           "input": {"path": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": placeholder(saved)}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done [bold]not markup[/bold]"}]},
    ]
    file = tmp_path / "saved-messages.json"
    file.write_text(json.dumps(messages), encoding="utf-8")
    inspected = load_file(file)
    data = await report(inspected, CompactionSettings())
    app = InspectApp(inspected, data)
    async with app.run_test(size=(160, 48)) as pilot:
        tree = app.query_one(MessageTree)
        await wait_for(pilot, lambda: len(tree.entries) == 4)
        assert app.query_one(ContextGauge).chars == data["chars"]
        report_text = str(app.query_one("#report").render())
        assert "breakdown" in report_text and "markers" in report_text
        tree.move_cursor(tree.node_for(2))
        await pilot.press("space")
        await pilot.pause()
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
        screen = app.screen
        assert isinstance(screen, ArchiveScreen) and screen.text == full
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ArchiveScreen))
        await pilot.press("q")
    assert sorted(os.listdir(tmp_path)) == [".task_outputs", "saved-messages.json"]
