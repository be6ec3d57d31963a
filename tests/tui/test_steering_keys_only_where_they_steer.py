"""The tree's steering keys (f6 pin, f7 drop/restore) are offered only where they steer: in ctxtui's own
view, not in the proxy's live view or the read-only inspector, whose trees show another client's
request or a file (issue 30, item 21). The footer tells the truth."""

from __future__ import annotations

import json
from pathlib import Path

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.sessions.inspection import load_file, report
from tests.support.fakeapi import FakeAnthropicServer
from tests.support.pilot import wait_for
from tests.support.proxy import running_proxy, view_app
from tui import actions
from tui.app import CtxApp
from tui.inspect_app import InspectApp
from tui.widgets.message_tree import MessageTree

STEERING_KEYS = {action.key for action in actions.ACTIONS if action.in_tree}


def offered(app: object) -> set[str]:
    """The keys the active screen's footer shows now."""
    return {key for key, active in app.screen.active_bindings.items() if active.binding.show}  # type: ignore[attr-defined]


async def test_the_main_views_tree_offers_its_steering_keys(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: app.message_tree.has_focus)
        await wait_for(pilot, lambda: STEERING_KEYS <= offered(app))
    await agent.aclose()


async def test_the_read_only_inspectors_tree_offers_no_steering_key(tmp_path: Path) -> None:
    file = tmp_path / "messages.json"
    file.write_text(json.dumps([{"role": "user", "content": "hello"},
                                {"role": "assistant", "content": "hi"}]), encoding="utf-8")
    inspected = load_file(file)
    app = InspectApp(inspected, await report(inspected, CompactionSettings()))
    async with app.run_test(size=(160, 48)) as pilot:
        tree = app.query_one(MessageTree)
        await wait_for(pilot, lambda: tree.has_focus and len(tree.entries) == 2)
        await pilot.pause()
        assert "ctrl+t" in offered(app)  # the footer is up
        assert not STEERING_KEYS & offered(app)


async def test_the_proxy_views_tree_offers_no_steering_key(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    async with running_proxy(fake_api.base_url) as proxy:
        app = view_app(proxy, tmp_path)
        async with app.run_test(size=(160, 48)) as pilot:
            tree = app.screen.query_one(MessageTree)
            tree.focus()
            await wait_for(pilot, lambda: tree.has_focus)
            await pilot.pause()
            assert "f2" in offered(app)
            assert not STEERING_KEYS & offered(app)
            await pilot.press("ctrl+c")
            await wait_for(pilot, lambda: app.return_code == 0)
