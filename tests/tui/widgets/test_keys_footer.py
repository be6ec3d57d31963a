"""The footer follows the turn (esc appears while a turn runs, the idle keys grey out) and shows what the
screen's bindings say, quit first. A click on a key presses it; a greyed-out key rings the bell instead;
the key under the pointer shows its help as the tooltip."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui import actions
from tui.app import CtxApp
from tui.widgets.keys_footer import FooterEntry, KeysFooter

QUIT = ("quit", "app.quit")


def footer_state(footer: KeysFooter) -> list[tuple[str, bool]]:
    """The keys shown now but the palette key: (action, greyed out)."""
    return [(entry.action, not entry.enabled) for entry in footer.keys if not entry.palette]


def expected(footer: KeysFooter) -> list[tuple[str, bool]]:
    """What the screen's bindings say the footer shows now: one key per action (the first binding of it
    in the chain), quit first, then the binding chain's order."""
    keys: dict[str, bool] = {}
    for _, binding, enabled, _ in footer.screen.active_bindings.values():
        if binding.show and binding.action not in keys:
            keys[binding.action] = not enabled
    return sorted(keys.items(), key=lambda key: key[0] not in QUIT)


def busy_shown(footer: KeysFooter) -> bool:
    return any(action.endswith("cancel_turn") for action, _ in footer_state(footer))


def shown(footer: KeysFooter, key: str) -> FooterEntry:
    return next(entry for entry in footer.keys if entry.key == key)


async def test_the_footer_follows_busy_and_shows_what_the_bindings_say(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.main.query_one(KeysFooter)
        await wait_for(pilot, lambda: bool(footer_state(footer)) and footer_state(footer) == expected(footer))
        await pilot.pause()
        idle = footer_state(footer)
        assert idle == expected(footer)
        assert not busy_shown(footer)
        assert footer.keys[0].action in QUIT
        assert footer.keys[-1].palette and sum(entry.palette for entry in footer.keys) == 1
        idle_greyed = {action for action, greyed in idle if greyed}

        app.main.busy = True
        await wait_for(pilot, lambda: busy_shown(footer) and footer_state(footer) == expected(footer))
        await pilot.pause()
        busy = footer_state(footer)
        assert busy == expected(footer)
        assert footer.keys[0].action in QUIT
        greyed = [action for action, disabled in busy
                  if disabled and action in dict(idle) and action not in idle_greyed]
        assert greyed, busy  # idle keys greyed out by the turn
        assert len({action for action, _ in busy}) == len(busy)  # one key per action

        app.main.busy = False
        await wait_for(pilot, lambda: not busy_shown(footer))
        await pilot.pause()
        assert footer_state(footer) == idle
        assert footer_state(footer) == expected(footer)
        assert footer.keys[0].action in QUIT
    await agent.aclose()


async def test_a_click_presses_the_key_a_greyed_out_one_rings_the_bell_and_hover_shows_its_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        footer = app.main.query_one(KeysFooter)
        inspector_key = actions.BY_ID["toggle_inspector"].key
        compact_key = actions.BY_ID["compact"].key
        assert inspector_key == "ctrl+b" and compact_key is not None
        await wait_for(pilot, lambda: {inspector_key, compact_key} <= {entry.key for entry in footer.keys}
                       and shown(footer, compact_key).enabled)
        await pilot.pause()
        rang: list[bool] = []
        pressed: list[str] = []
        simulate_key = app.simulate_key

        def press(key: str) -> None:
            pressed.append(key)
            simulate_key(key)

        monkeypatch.setattr(app, "bell", lambda: rang.append(True))
        monkeypatch.setattr(app, "simulate_key", press)

        def where(entry: FooterEntry) -> tuple[int, int]:
            region = footer.region_of(entry)
            assert region.area, f"{entry.key} is not shown"
            assert app.screen.get_widget_at(region.x, region.y)[0] is footer
            assert footer.entry_at(region.x - footer.region.x) == entry
            return region.x + region.width // 2, region.y

        # a key greyed out by the turn: its click rings the bell and presses nothing
        app.main.busy = True
        await wait_for(pilot, lambda: not shown(footer, compact_key).enabled)
        await pilot.pause()
        compact = shown(footer, compact_key)
        visible = app.main.inspector_visible
        assert await pilot.click(offset=where(compact))
        await pilot.pause()
        assert rang == [True] and pressed == []
        assert app.main.inspector_visible == visible and app.main.busy

        # an enabled key: its click presses it and its action runs
        inspector = shown(footer, inspector_key)
        assert inspector.enabled and inspector.description == "Inspector"
        assert await pilot.click(offset=where(inspector))
        await wait_for(pilot, lambda: app.main.inspector_visible != visible)
        assert pressed == [inspector_key] and rang == [True]
        app.main.busy = False
        await wait_for(pilot, lambda: shown(footer, compact_key).enabled)
        await pilot.pause()

        # the key under the pointer: its help is the tooltip
        await pilot.hover(offset=where(shown(footer, inspector_key)))
        await pilot.pause()
        assert footer.tooltip == actions.BY_ID["toggle_inspector"].help
        await pilot.hover(offset=where(shown(footer, compact_key)))
        await pilot.pause()
        assert footer.tooltip == actions.BY_ID["compact"].help
        assert pressed == [inspector_key] and rang == [True]  # hovering presses nothing
    await agent.aclose()
