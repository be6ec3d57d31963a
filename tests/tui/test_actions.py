"""The one table of actions (tui/actions.py): bindings, availability, palette, slash commands, /help
and the README are all generated from it, so they say the same thing."""

from __future__ import annotations

from pathlib import Path

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui import actions
from tui.app import CtxApp
from tui.screens.main import MainScreen

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_keys_table_is_the_actions_table() -> None:
    text = README.read_text(encoding="utf-8")
    for row in actions.readme_rows():
        assert row in text, f"README.md lacks the row {row!r}"


def test_bindings_help_and_slash_commands_come_from_the_table() -> None:
    keyed = [action for action in actions.ACTIONS if action.key]
    bound = {binding.id: binding for binding in [*MainScreen.BINDINGS, *CtxApp.BINDINGS]}  # type: ignore[union-attr]
    assert {action.id for action in keyed} == set(bound)
    for action in keyed:
        assert bound[action.id].key == action.key and bound[action.id].action == action.action  # type: ignore[union-attr]
    help_text = actions.help_markdown()
    for action in actions.ACTIONS:
        if action.key:
            assert f"`{'esc' if action.key == 'escape' else action.key}`" in help_text
        if action.slash:
            assert f"`/{action.slash}" in help_text
    assert set(actions.BY_SLASH) == {
        "quit", "inspector", "compact", "archive", "new", "help", "sessions",
        "pin", "unpin", "drop", "restore", "undo", "pause", "preview", "tree", "breakdown", "timeline",
    }


async def test_slash_commands_run_their_action_and_unknown_ones_are_sent(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        assert app.main.inspector_visible
        assert await app.submit("/inspector")
        await pilot.pause()
        assert not app.main.inspector_visible
        assert not agent.messages  # not sent to the model
        entries = {action.name for action in actions.palette_entries(app.main)}
        assert "cancel_turn" not in entries and "resize_inspector" not in entries  # hidden, inspector closed
        await app.submit("/no-such-command")
        await wait_for(pilot, lambda: app.turns_completed == 1)
        assert agent.messages[0]["content"] == "/no-such-command"
    await agent.aclose()
