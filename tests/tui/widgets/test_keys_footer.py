"""The footer follows the turn (esc appears while a turn runs, the idle keys grey out) without
composing its keys again: a key that shows the same stays the same widget (Textual's footer remounts
every key at each bindings refresh, a stutter while typing)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets._footer import FooterKey

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui.app import CtxApp
from tui.widgets.keys_footer import KeysFooter


def footer_state(footer: KeysFooter) -> list[tuple[str, bool]]:
    return [(key.action, key.has_class("-disabled")) for key in footer.query_children(FooterKey)]


def expected(footer: KeysFooter) -> list[tuple[str, bool]]:
    """What the screen's bindings say the footer shows now: quit first, then the binding chain's order."""
    keys = [(binding.action, not enabled)
            for _, binding, enabled, _ in footer.screen.active_bindings.values() if binding.show]
    keys.sort(key=lambda key: key[0] not in ("quit", "app.quit"))
    return keys


def keys_only(footer: KeysFooter) -> list[tuple[str, bool]]:
    return [(key.action, key.has_class("-disabled")) for key in footer.query_children(FooterKey)
            if not key.has_class("-command-palette")]


async def test_the_footer_follows_busy_and_keeps_the_keys_that_did_not_change(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.main.query_one(KeysFooter)
        await wait_for(pilot, lambda: bool(footer_state(footer)))
        await pilot.pause()
        idle = footer_state(footer)
        assert not any(action.endswith("cancel_turn") for action, _ in idle)
        quit_key = next(key for key in footer.query_children(FooterKey) if key.action in ("quit", "app.quit"))
        assert footer.children[0] is quit_key
        idle_keys = {key.action: key for key in footer.query_children(FooterKey)}
        idle_greyed = {key.action for key in idle_keys.values() if key.has_class("-disabled")}

        app.main.busy = True
        await wait_for(pilot, lambda: any(action.endswith("cancel_turn") for action, _ in footer_state(footer)))
        await pilot.pause()
        busy = footer_state(footer)
        assert keys_only(footer) == expected(footer)
        assert any(disabled for _, disabled in busy) and busy != idle
        assert footer.children[0] is quit_key  # unchanged: not mounted again
        # a key greyed out by the turn is the same widget, updated (not one removed and one mounted)
        busy_keys = {key.action: key for key in footer.query_children(FooterKey)}
        greyed = [action for action, key in busy_keys.items()
                  if action in idle_keys and key.has_class("-disabled") and action not in idle_greyed]
        assert greyed and all(busy_keys[action] is idle_keys[action] for action in greyed)
        assert all(busy_keys[action]._disabled for action in greyed)  # its click rings the bell

        app.main.busy = False
        await wait_for(pilot, lambda: not any(action.endswith("cancel_turn") for action, _ in footer_state(footer)))
        await pilot.pause()
        assert footer_state(footer) == idle
        assert keys_only(footer) == expected(footer)
        assert footer.children[0] is quit_key
    await agent.aclose()
