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


async def test_the_inspector_opens_a_proxy_recording(tmp_path: Path) -> None:
    from core.client_markers import CC_CLEARED_RESULT
    from core.proxy.calls import Timings
    from core.proxy.record import Recorder
    from core.proxy.watch import ExchangeEnd, ExchangeStart, Watch

    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                           "input": {"command": "pytest"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": CC_CLEARED_RESULT}]},
    ]
    body = {"model": "claude-sonnet-5-5", "max_tokens": 10, "system": "You are a coding agent.", "messages": messages}
    watch = Watch(Recorder(tmp_path))
    watch.started(ExchangeStart("rec-1", 1.0, "POST", "/v1/messages", [("User-Agent", "claude-cli/2")],
                                json.dumps(body).encode(), frozenset()))
    reply = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "all green"}],
             "model": "claude-sonnet-5-5", "usage": {"input_tokens": 50, "output_tokens": 3}}
    watch.finished(ExchangeEnd("rec-1", 200, [("content-type", "application/json")], json.dumps(reply).encode(),
                               Timings(0.1, 0.2, 0.3), "complete"))
    await watch.aclose()
    inspected = load_file(Path(watch.calls[0].record or ""))
    data = await report(inspected, CompactionSettings())
    app = InspectApp(inspected, data)
    async with app.run_test(size=(160, 48)) as pilot:
        tree = app.query_one(MessageTree)
        await wait_for(pilot, lambda: len(tree.entries) == 3)
        assert "· proxy ·" in str(app.query_one("#file-title").render())
        report_text = str(app.query_one("#report").render())
        assert "client markers: 1" in report_text and "claude-code cleared_tool_result" in report_text
        assert "client claude-cli/2" in report_text
        await pilot.press("q")
