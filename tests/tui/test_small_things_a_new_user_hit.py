"""Smaller things a new user hit (issue 18, item 22), each in the real app as they did it (Pilot):
the footer at 80x24, the breakdown's numbering against the tree's, a screenshot without ~/Downloads,
and the grammar of counts and articles in what the app says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.widgets import OptionList

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import settled, wait_for
from tui.app import CtxApp
from tui.widgets.breakdown import BreakdownView
from tui.widgets.chat_blocks import NoticeLine
from tui.widgets.keys_footer import KeysFooter

ROOT = Path(__file__).resolve().parents[2]


def make_agent(workdir: Path) -> Agent:
    (workdir / "one.txt").write_text("just one line\n", encoding="utf-8")
    return Agent.from_settings(Settings(workdir=workdir, offline=True))


async def send(pilot: object, app: CtxApp, text: str) -> None:
    done = app.turns_completed
    app.chat.input.insert(text)
    await pilot.press("enter")  # type: ignore[attr-defined]
    await settled(pilot, app, done + 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("focus_tree", [False, True])
async def test_the_footer_keeps_quit_at_80x24(tmp_path: Path, focus_tree: bool) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        if focus_tree:
            await pilot.press("ctrl+t")
        await pilot.pause(0.2)
        footer = app.screen.query_one(KeysFooter)
        quit_key = next(key for key in footer.keys if key.action in ("quit", "app.quit"))
        region = footer.region_of(quit_key)
        assert region.area and region.right <= 80
        assert app.screen.get_widget_at(region.x, region.y)[0] is footer
        assert footer.entry_at(region.x - footer.region.x) == quit_key
        assert quit_key.description == "Quit"
    await agent.aclose()


async def test_the_breakdown_numbers_messages_as_the_tree_does(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read one.txt")
        await pilot.press("f2")  # the breakdown
        view = app.main.inspector.breakdown_view
        table = view.query_one("#breakdown-table", OptionList)
        await wait_for(pilot, lambda: table.option_count > 0)
        rows = [str(table.get_option_at_index(index).prompt) for index in range(table.option_count)]
        # the read's result is message 3 in the tree ("#3 "), block 1 of it
        result_message = next(index for index, message in enumerate(agent.messages)
                              if isinstance(message["content"], list)
                              and message["content"][0].get("type") == "tool_result")
        tree_number = str(app.message_tree.entries[result_message][1].label).split()[0]
        assert tree_number == f"#{result_message + 1}" == "#3"
        assert any(f"{tree_number}.1 " in row for row in rows), rows
        assert not any(re.search(r"#0\b|#\d+\.0\b", row) for row in rows), rows
        # choosing the row selects that message in the tree
        index = next(i for i, row in enumerate(rows) if f"{tree_number}.1 " in row)
        table.focus()
        table.highlighted = index
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.message_tree.selected is not None
                       and app.message_tree.selected.index == result_message)
        assert isinstance(view, BreakdownView)
    await agent.aclose()


async def test_a_screenshot_without_a_downloads_folder_goes_home_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    workdir = tmp_path / "work"
    workdir.mkdir()
    agent = make_agent(workdir)
    app = CtxApp(agent)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.deliver_screenshot()  # what the palette's "Save screenshot" runs
        await wait_for(pilot, lambda: any("screenshot" in note.message.lower() for note in app._notifications))
        notes = [note.message for note in app._notifications]
        saved = list(home.glob("*.svg"))
        assert len(saved) == 1 and saved[0].read_text(encoding="utf-8").startswith("<svg")
        assert any(f"Saved screenshot to {saved[0]}" in note for note in notes), notes
        assert not (home / "Downloads").exists()
    await agent.aclose()


async def test_a_screenshot_that_cannot_be_saved_says_why(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.deliver_screenshot(path=str(tmp_path / "no" / "such" / "folder"))
        await wait_for(pilot, lambda: any("screenshot" in note.message.lower() for note in app._notifications))
        (note,) = [note.message for note in app._notifications]
        assert note.startswith("The screenshot was not saved: No such file or directory")
        assert "no/such/folder" in note
    await agent.aclose()


# --- grammar ---------------------------------------------------------------------------------------

COUNTED = re.compile(
    r"\{[^{}!]+\}\s(?:more\s(?:\w+\s)?\w+s\b"
    r"|(?:messages|lines|results|matches|files|steps|calls|pins|sessions|compactions|facts|constraints)\b)"
)
"""An f-string that puts a number straight before a plural noun ('{n} lines', '{n} more chars'): wrong
when n is 1 (a cut that hides one char said "1 more chars")."""
FORMATS = {
    "core/markers.py",  # the seed's marker format `[N messages archived at PATH]`, parsed back as it is written
}


def test_no_f_string_puts_a_bare_count_before_a_plural_noun() -> None:
    found = []
    for path in sorted([*ROOT.joinpath("core").rglob("*.py"), *ROOT.joinpath("tui").rglob("*.py")]):
        relative = path.relative_to(ROOT).as_posix()
        if relative in FORMATS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if COUNTED.search(line) and ('f"' in line or "f'" in line or "format(" in line or '"{' in line):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert found == [], "use plural() (core.text / tui.format):\n" + "\n".join(found)


async def test_a_one_line_file_is_one_line(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read one.txt")
        replies = " ".join(block.source for block in app.chat.transcript.query("AssistantBlock"))  # type: ignore[attr-defined]
        assert "1 line" in replies and "1 lines" not in replies
    await agent.aclose()


async def test_a_resumed_session_is_said_once(tmp_path: Path) -> None:
    """The chat says "resumed ..." when it shows the resumed history; the first turn does not say it again."""
    first = make_agent(tmp_path)
    app = CtxApp(first)
    async with app.run_test(size=(160, 48)) as pilot:
        await send(pilot, app, "read one.txt")
    await first.aclose()
    resumed = Agent.from_settings(Settings(workdir=tmp_path, offline=True, resume=True))
    app = CtxApp(resumed)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: any("resumed" in line.text for line in app.chat.query(NoticeLine)))
        await send(pilot, app, "and now?")
        said = [line.text for line in app.chat.query(NoticeLine) if "resumed" in line.text]
        assert len(said) == 1, said
    await resumed.aclose()


def test_one_hidden_char_is_one_more_char() -> None:
    from tui.widgets.chat_blocks import UserBlock
    from tui.widgets.tool_block import PREVIEW_CHARS, _preview

    assert "… 1 more char (1 line in all)" in str(UserBlock.shown("x" * (UserBlock.max_chars + 1)))
    assert "… 1 more char not shown" in _preview("y" * (PREVIEW_CHARS + 1))
    assert "… 2 more chars not shown" in _preview("y" * (PREVIEW_CHARS + 2))


async def test_after_an_undo_the_gauge_no_longer_says_the_step_saved(tmp_path: Path) -> None:
    for number in range(3):
        (tmp_path / f"big{number}.txt").write_text(f"{number} a line of a big file\n" * 300, encoding="utf-8")
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(160, 48)) as pilot:
        for number in range(3):
            await send(pilot, app, f"read big{number}.txt")
        done = app.turns_completed
        await app.main.run_action("compact_now")
        await settled(pilot, app, done + 1)
        app.gauge.flush()
        assert app.gauge.state.last_line.startswith("last: compact_history saved ")
        await pilot.press("f3")
        await wait_for(pilot, lambda: not agent.compactions)
        await settled(pilot, app)
        app.gauge.flush()
        assert app.gauge.state.last_line == "last: compact_history undone"
        assert app.gauge.state.short_last_line == "last: compact_history undone"
        assert "compact_history saved" not in app.gauge.render().plain
    await agent.aclose()


@pytest.mark.parametrize("size", [(40, 12), (56, 24)])
async def test_a_narrow_terminal_stacks_the_inspector_below_the_chat(tmp_path: Path, size: tuple[int, int]) -> None:
    """At 40x12, showing the tree (ctrl+t) squeezed the chat to 8 columns beside it: below the width
    where both fit side by side, the inspector goes under the chat, each as wide as the terminal."""
    agent = make_agent(tmp_path)
    app = CtxApp(agent)
    async with app.run_test(size=size) as pilot:
        await send(pilot, app, "read one.txt")
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: app.message_tree.has_focus)
        await pilot.pause()
        chat, inspector, tree = app.chat.region, app.main.inspector.region, app.message_tree.region
        assert chat.width == inspector.width == size[0], (chat, inspector)
        assert inspector.y >= chat.bottom  # below it, not beside it
        assert tree.height >= 2 and app.chat.input.region.height >= 3  # some of the tree, all of the prompt
        assert "f8" not in {key for key, active in app.screen.active_bindings.items() if active.binding.show}
        await pilot.press("ctrl+t")  # back to the prompt; widen the terminal: side by side again
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: app.main.inspector.region.x > 0)
        assert app.chat.region.width >= 30
    await agent.aclose()
