"""Pilot test: untrusted text in the message tree's labels, the block view and the transcript view is
shown as visible escapes, and excerpts that are cut end with an ellipsis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import settled, wait_for
from tui.app import CtxApp
from tui.format import transcript_text
from tui.screens.archive import ArchiveScreen
from tui.widgets.text_view import TextView

EVIL = "\x1b]2;pwned\x07 \u202eevil\u202c " + "x" * 200 + "\n"


def labels(app: CtxApp) -> list[str]:
    """The plain text of every label in the tree, children included (every node expanded first)."""
    tree = app.message_tree
    found: list[str] = []

    def walk(node: Any) -> None:
        for child in node.children:
            label = child.label
            found.append(label.plain if isinstance(label, Text) else str(label))
            walk(child)

    walk(tree.root)
    return found


async def test_tree_labels_and_the_block_view_show_escapes(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text(EVIL, encoding="utf-8")
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=(200, 60)) as pilot:
        app.chat.input.insert("read evil.txt")
        await pilot.press("enter")
        await settled(pilot, app, 1)
        tree = app.message_tree
        for node in list(tree.root.children):
            node.expand()
        await pilot.pause()
        shown = labels(app)
        result_labels = [label for label in shown if label.lstrip().startswith("tool_result")]
        assert result_labels, shown
        label = result_labels[0]
        assert "\\x1b]2;pwned\\x07" in label and "\\u202eevil\\u202c" in label
        assert label.rstrip().endswith('…"'), label  # the excerpt was cut, and says so
        assert not any("\x1b" in text or "\u202e" in text or "\x07" in text for text in shown)

        # the block opened from the tree (enter on the node) shows the same escapes
        await pilot.press("ctrl+t")
        node = next(child for message in tree.root.children for child in message.children
                    if "tool_result" in str(child.label))
        tree.move_cursor(node)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
        view = app.screen.query_one(TextView)
        await pilot.pause()
        first = "".join(segment.text for segment in view.render_line(0))
        assert "\\x1b]2;pwned\\x07" in first and "\\u202e" in first
        screenshot = app.export_screenshot()
        assert "\x1b" not in screenshot and "\u202e" not in screenshot and "pwned" in screenshot
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ArchiveScreen))
        screenshot = app.export_screenshot()  # the inspector with the tree is on screen
        assert "\x1b" not in screenshot and "\u202e" not in screenshot and "pwned" in screenshot
    await agent.aclose()


def test_transcript_text_shows_control_characters_as_escapes() -> None:
    messages = [{"role": "user", "content": EVIL},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t\x1b[2J", "name": "bash\u202e",
                                                   "input": {"command": "echo \x1b]52;c;eA==\x07"}}]}]
    text = transcript_text(messages)
    assert "\\x1b]2;pwned\\x07" in text and "\\u202eevil" in text and "id t\\x1b[2J" in text
    assert "bash\\u202e" in text and "echo \\u001b]52;c;eA==" in text  # (JSON's own escape)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
