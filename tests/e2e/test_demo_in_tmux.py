"""End to end in a real terminal: `ctxtui --demo` inside tmux, read back with `capture-pane`.

The demo types its commands into the real app; we watch the screen until the gauge, the message
tree and at least one compaction step are visible and the archive holds both a persisted tool result
and a snip transcript, then quit with ctrl+q and check that the program really ended.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.tmux import COMPACTION_TEXT, TMUX, Tmux, ctxtui_in_tmux, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(60)
def test_demo_in_a_real_terminal_fires_compaction_and_quits() -> None:
    root = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))  # short path: tmux sockets live here too
    workdir = root / "demo"
    ctxtui = Path(sys.executable).parent / "ctxtui"
    assert ctxtui.exists(), f"{ctxtui} missing: install the package (pip install -e .)"
    tmux = Tmux(root)
    try:
        tmux.start(f"{ctxtui} --demo --workdir {workdir}")
        screens: list[str] = []

        def seen(*needles: str) -> bool:
            screen = tmux.screen()
            screens.append(screen)
            return all(needle in screen for needle in needles)

        # The gauge (figure against the limit) and the tree (its title and the first message node).
        wait_until(lambda: seen("chars", "/ 50,000", "Messages", "#1 user"), 15, "the gauge and the tree", tmux)
        # At least one compaction step on screen, then the snip's transcript on disk.
        wait_until(lambda: any(text in tmux.screen() for text in COMPACTION_TEXT), 25, "a compaction step", tmux)
        transcripts = workdir / ".transcripts"
        wait_until(lambda: any(transcripts.glob("*.jsonl")), 40, "a snip transcript", tmux)
        assert "OFFLINE" in screens[-1]

        tmux.run("send-keys", "-t", tmux.session, "C-q", check=True)
        wait_until(lambda: not tmux.alive(), 8, "the app to exit after ctrl+q", tmux)

        assert list((workdir / ".task_outputs" / "tool-results").glob("*.txt")), "no persisted tool result"
        assert list(transcripts.glob("*.jsonl")), "no transcript"
    finally:
        tmux.kill_server()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(60)
def test_escape_sequences_in_a_file_never_reach_the_terminal() -> None:
    """A file whose text sets the terminal title (OSC 2) and moves the cursor is read in the real app:
    the screen shows the escapes as text and tmux's pane title is never set by it."""
    root = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))
    workdir = root / "work"
    workdir.mkdir()
    (workdir / "evil.txt").write_text("title \x1b]2;pwned-title\x07 here\nmove \x1b[5A\x1b[2K gone\n", encoding="utf-8")
    tmux = Tmux(root)
    try:
        tmux.start(f"{sys.executable} -m tui.cli --offline --workdir {workdir}")
        tmux.keep_pane_after_exit()
        wait_until(lambda: "Message the agent" in tmux.screen(), 15, "the prompt", tmux)
        tmux.run("send-keys", "-t", tmux.session, "-l", "read evil.txt", check=True)
        tmux.run("send-keys", "-t", tmux.session, "Enter", check=True)
        wait_until(lambda: "\\x1b]2;pwned-title" in tmux.screen(), 15, "the escaped file text", tmux)
        assert "pwned" not in tmux.pane_title()
        tmux.run("send-keys", "-t", tmux.session, "C-q", check=True)
        wait_until(tmux.exited, 8, "the app to exit after ctrl+q", tmux)
        # the app has ended: tmux has read all it ever wrote, and no title came from it
        assert "pwned" not in tmux.pane_title()
    finally:
        tmux.kill_server()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(60)
def test_shrinking_the_real_terminal_lays_out_for_the_new_size() -> None:
    """160x48 -> 80x24 in tmux: the inspector folds into the one-line gauge at once (not one resize
    late), and the prompt spans the new width."""
    with ctxtui_in_tmux() as (tmux, _workdir):
        wait_until(lambda: "Messages" in tmux.screen(), 15, "the inspector", tmux)
        tmux.run("resize-window", "-t", tmux.session, "-x", "80", "-y", "24", check=True)

        def folded() -> bool:
            lines = tmux.screen().splitlines()
            return any(line.lstrip().startswith("ctx ") for line in lines) and not any("Messages" in line for line in lines)

        wait_until(folded, 10, "the one-line gauge at 80x24", tmux)
        tmux.type("C-q")
        wait_until(lambda: not tmux.alive(), 8, "the app to exit after ctrl+q", tmux)


def tree_focused(screen: str) -> bool:
    """The message tree has the focus: its border (and title line) turns from thin to thick."""
    return "▀Messages" in screen


def cursor_on(styled_screen: str, label: str) -> bool:
    """The tree's cursor is on the node labelled `label`: that line is drawn in one style (the others
    colour their number, role and sizes apart), so its text has no escape sequence inside."""
    return label in styled_screen


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(60)
def test_pin_compact_undo_round_trip_in_a_real_terminal() -> None:
    """Read a file, pin its result in the tree (p), compact with the summary reviewed first (ctrl+s
    accepts it), see the pinned result carried after the summary, then undo (f3): the history is
    back as it was (four messages, the pin still marked)."""
    root = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))
    workdir = root / "work"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("".join(f"note {n}\n" for n in range(60)), encoding="utf-8")
    tmux = Tmux(root)

    def keys(*names: str, literal: bool = False) -> None:
        tmux.run("send-keys", "-t", tmux.session, *(["-l"] if literal else []), *names, check=True)

    try:
        tmux.start(f"{sys.executable} -m tui.cli --offline --workdir {workdir}")
        wait_until(lambda: "Message the agent" in tmux.screen(), 15, "the prompt", tmux)
        keys("read notes.txt", literal=True)
        keys("Enter")
        wait_until(lambda: "#4 assistant" in tmux.screen(), 15, "the reply in the tree", tmux)
        keys("C-t")
        wait_until(lambda: tree_focused(tmux.screen()), 10, "the tree to take the focus", tmux)
        keys("Up")
        wait_until(lambda: cursor_on(tmux.styled_screen(), "#3 user · tool_result"), 10, "the cursor on the result", tmux)
        keys("F6")
        wait_until(lambda: "pinned the result" in tmux.screen() and "pinned" in tmux.screen(), 10, "the pin", tmux)
        keys("C-t")
        wait_until(lambda: not tree_focused(tmux.screen()), 10, "the prompt to take the focus back", tmux)
        keys("/compact", literal=True)
        keys("Enter")
        wait_until(lambda: "Review the summary" in tmux.screen(), 15, "the summary review", tmux)
        keys("C-s")
        wait_until(lambda: "Σ compacted summary" in tmux.screen(), 15, "the compacted summary", tmux)
        assert "#3 user" in tmux.screen() and "pinned" in tmux.screen()  # summary, tool_use, pinned result
        keys("F3")
        wait_until(lambda: "undid the last compaction" in tmux.screen(), 10, "the undo", tmux)
        wait_until(lambda: "#4 assistant" in tmux.screen(), 10, "the four messages back", tmux)
        tmux.run("send-keys", "-t", tmux.session, "C-q", check=True)
        wait_until(lambda: not tmux.alive(), 8, "the app to exit after ctrl+q", tmux)
    finally:
        tmux.kill_server()
        shutil.rmtree(root, ignore_errors=True)
