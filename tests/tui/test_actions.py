"""The one table of actions (tui/actions.py): bindings, availability, palette, slash commands, /help
and the README are all generated from it, so they say the same thing."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

from textual.binding import Binding

import tui
from core.agent import Agent
from core.config import Settings
from tests.support.pilot import wait_for
from tui import actions
from tui.app import CtxApp
from tui.screens.main import MainScreen
from tui.widgets.message_tree import MessageTree

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_keys_table_is_the_actions_table() -> None:
    text = README.read_text(encoding="utf-8")
    for row in actions.readme_rows():
        assert row in text, f"README.md lacks the row {row!r}"


def test_bindings_help_and_slash_commands_come_from_the_table() -> None:
    keyed = [action for action in actions.ACTIONS if action.key]
    bound = {binding.id: binding for binding in [*MainScreen.BINDINGS, *CtxApp.BINDINGS, *MessageTree.BINDINGS]}  # type: ignore[union-attr]
    assert {action.id for action in keyed} == set(bound)
    for action in keyed:
        run = f"steer('{action.action}')" if action.in_tree else action.action
        assert bound[action.id].key == action.key and bound[action.id].action == run  # type: ignore[union-attr]
    help_text = actions.help_markdown()
    for action in actions.ACTIONS:
        if action.key:
            assert f"`{'esc' if action.key == 'escape' else action.key}`" in help_text
        if action.slash:
            assert f"`/{action.slash}" in help_text
    assert set(actions.BY_SLASH) == {
        "quit", "inspector", "compact", "archive", "new", "help", "sessions",
        "pin", "unpin", "drop", "restore", "undo", "pause", "preview", "tree", "breakdown", "timeline", "dropped", "facts",
        "compare", "search",
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


# --- the README's prose names keys as the bindings say -------------------------------------------------------

KEY = r"(?:ctrl|shift|alt|super)\+\w+|f\d{1,2}|esc|escape|enter|space|tab|pageup|pagedown|home|end|[↑↓←→]|[a-z]"
MENTION = re.compile(rf"(?:<!--key:(?P<id>[\w.]+)-->)?`(?P<key>{KEY})`")
ARROWS = {"esc": "escape", "↑": "up", "↓": "down", "←": "left", "→": "right"}


def every_binding() -> dict[str, set[str]]:
    """Binding id -> its keys: the actions table and every `BINDINGS` with ids in the tui package."""
    found = {action.id: {action.key} for action in actions.ACTIONS if action.key}
    for module_info in pkgutil.walk_packages(tui.__path__, "tui."):
        if module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            for binding in getattr(value, "BINDINGS", []) if isinstance(value, type) else []:
                if isinstance(binding, Binding) and binding.id:
                    found.setdefault(binding.id, set()).update(key.strip() for key in binding.key.split(","))
    return found


def prose(text: str) -> str:
    """The README without its tables and code blocks (the keys table is checked row by row above)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))


def test_every_key_the_readme_names_is_the_binding_it_says() -> None:
    """A key the actions table binds (`f3`, `ctrl+s`, `esc`, ...) may appear in the README's prose only
    tagged with the binding it means (`<!--key:undo-->`), and the tag's binding must use that key: the
    prose cannot say `f3` opens the breakdown while `f3` undoes."""
    bindings = every_binding()
    global_keys = {action.key for action in actions.ACTIONS if action.key}
    problems = []
    for match in MENTION.finditer(prose(README.read_text(encoding="utf-8"))):
        key = ARROWS.get(match["key"], match["key"])
        where = f"`{match['key']}` near {match.string[max(match.start() - 40, 0):match.end() + 40]!r}"
        if match["id"] is None:
            if key in global_keys:
                problems.append(f"{where}: untagged; say which binding it is (<!--key:ID-->)")
        elif match["id"] not in bindings:
            problems.append(f"{where}: no binding has the id {match['id']!r}")
        elif key not in bindings[match["id"]]:
            problems.append(f"{where}: {match['id']} is bound to {sorted(bindings[match['id']])}")
    assert problems == []


def test_the_tree_has_no_letter_keys() -> None:
    """Typing while the tree has focus must never steer: its bindings are never a printable key."""
    for binding in MessageTree.BINDINGS:
        assert isinstance(binding, Binding)
        for key in binding.key.split(","):
            assert len(key) > 1 and key != "space", key  # a letter, a digit or a space could be typed
