"""Pilot tests: a theme chosen from the command palette is saved to the config file and used at the
next start; an unknown theme in the settings falls back to the default with one notice."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from textual.command import CommandPalette

from core.agent import Agent
from core.config import Settings, apply_config, resolve_config
from tests.support.pilot import palette_highlights, wait_for, workers_idle
from tui.app import CtxApp


def config_file(home: Path) -> Path:
    return home / "ctxtui" / "config.toml"


def saved(home: Path) -> dict[str, object]:
    path = config_file(home)
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


async def test_a_theme_chosen_in_the_palette_is_saved_and_used_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    config_file(home).parent.mkdir(parents=True)
    config_file(home).write_text('# mine\nmodel = "kept"\n', encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    agent = Agent.from_settings(Settings(workdir=work, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"theme")
        await palette_highlights(pilot, "theme")
        commands = app.screen
        await pilot.press("enter")  # Textual's own "Theme" command: a list of themes
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen is not commands)
        await pilot.press(*"dracula")
        await palette_highlights(pilot, "dracula")
        await pilot.press("enter")
        await wait_for(pilot, lambda: saved(home).get("theme") == "dracula")
        assert app.theme == "dracula"
    await agent.aclose()
    assert saved(home) == {"model": "kept", "theme": "dracula"}
    assert "# mine" in config_file(home).read_text(encoding="utf-8")

    # the next start reads it (settings -> CtxApp(theme=...), as run_tui passes it)
    settings = apply_config(Settings(workdir=work, offline=True), resolve_config())
    assert settings.theme == "dracula"
    agent = Agent.from_settings(settings)
    app = CtxApp(agent, theme=settings.theme)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.theme == "dracula"
    await agent.aclose()


async def test_an_unknown_theme_falls_back_with_one_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    config_file(home).parent.mkdir(parents=True)
    config_file(home).write_text('theme = "no-such-theme\\u001b]2;x\\u0007"\n', encoding="utf-8")
    settings = apply_config(Settings(workdir=tmp_path, offline=True), resolve_config())
    agent = Agent.from_settings(settings)
    app = CtxApp(agent, theme=settings.theme)
    default = CtxApp(agent).theme
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: bool(app._notifications) and workers_idle(app, "first-frame"))
        # nothing is on its way to the config file: no save waits for the theme to settle, none runs
        assert app._theme_timer is None and workers_idle(app, "theme")
        assert app.theme == default
        notices = [notification.message for notification in app._notifications]
        assert len(notices) == 1 and "no-such-theme" in notices[0] and default in notices[0]
        assert "\x1b" not in notices[0] and "\n" not in notices[0]
    await agent.aclose()
    assert saved(home) == {"theme": "no-such-theme\x1b]2;x\x07"}  # the fallback is not written over the choice
