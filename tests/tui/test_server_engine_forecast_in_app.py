"""Under a server engine the app's gauge, tree marks and f4 preview forecast only what the client will
run (issue 30, item 18; the core's forecast is tested in tests/core/agent/test_forecast_per_engine.py)."""

from __future__ import annotations

from tests.core.agent.test_forecast_per_engine import CLIENT_STEPS, Build, build, names, read_all
from tests.support.fakeapi import FakeAnthropicServer
from tests.support.pilot import wait_for
from tui.app import CtxApp
from tui.screens.preview import PreviewScreen

__all__ = ["build"]  # the fixture, shared with the core's test


async def test_in_the_app_the_gauge_the_tree_and_f4_say_the_same(
        build: Build, anthropic_env: FakeAnthropicServer) -> None:
    """After the server compacted: no "next call" step in the gauge, no "next call shortens" mark in the
    tree, no client step in f4's preview."""
    agent = build(engine="server-compact", compact_trigger_tokens=50_000)
    await read_all(agent, anthropic_env)
    agent.auto_compact = True
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.main.inspector.preview is not None and not app.message_tree.syncing)
        await pilot.pause()
        assert app.main.inspector.preview.steps == () or not names(app.main.inspector.preview.steps) & set(CLIENT_STEPS)
        assert not any(step in app.gauge.preview_line for step in CLIENT_STEPS), app.gauge.preview_line
        labels = [str(node.label) for _, node in app.message_tree.entries]
        assert not any("next call shortens" in label for label in labels)
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        assert isinstance(app.screen, PreviewScreen)
        assert not names(app.screen.steps) & set(CLIENT_STEPS)
        server = "the API compacts the conversation once a request reaches 50,000 input tokens"
        await wait_for(pilot, lambda: bool(app.screen.query("#preview-server")))
        assert server in str(app.screen.query_one("#preview-server").render())
        assert server in app.gauge.preview_line
