"""A long reply streamed into the chat of the real app in a real terminal (tmux) leaves the screen
exactly as a full repaint draws it.

Textual paints a frame by updating only the regions that changed, and ctxtui keeps the transcript from
repainting itself when its content merely grows (tui/widgets/chat_pane.py `Transcript`). If a region
that changed were left out of those updates, the terminal would keep stale cells. So we stream a reply
of every kind of Markdown block, long enough to scroll the transcript many times, read the pane
back, make the app repaint everything (a resize and back), and read it again: the transcript's rows
must match glyph for glyph. The inspector is hidden first (ctrl+b), so the chat has the whole width
and nothing on screen ticks (the cache countdown would). The scrollbar's thumb is left out: after a
resize round trip the end of its thumb may differ by an eighth of a cell (its partial-block glyph), and
the scrollbar paints itself (it is not what the transcript's change touches).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.cli import api_env
from tests.support.fakeapi import FakeAnthropicServer, text_reply
from tests.support.tmux import HEIGHT, TMUX, WIDTH, Tmux, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
]

LAST = "the last line of the reply"


def long_reply() -> str:
    """About 190 lines of headings, paragraphs, lists, quotes, code and rules."""
    parts = []
    for section in range(1, 9):
        parts += [
            f"## Section {section}",
            " ".join(f"word{section}_{index}" for index in range(60)),
            "\n".join(f"- item {section}.{index} with some text after it" for index in range(4)),
            f"> a quote in section {section}",
            "```python\n" + "\n".join(f"value_{section}_{index} = {index} * {section}" for index in range(3)) + "\n```",
            "---",
        ]
    parts.append(LAST)
    return "\n\n".join(parts)


THUMB = str.maketrans(dict.fromkeys("▁▂▃▄▅▆▇█", " "))  # the glyphs of a scrollbar thumb's partial ends


def settled_rows(tmux: Tmux, timeout: float = 20) -> list[str]:
    """The transcript's rows once they stay the same for half a second (a loaded machine may still
    be drawing the turn's last frames, or be halfway through writing one, when a capture is taken)."""
    deadline = time.monotonic() + timeout
    rows = transcript_rows(tmux)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        again = transcript_rows(tmux)
        if again == rows:
            return rows
        rows = again
    raise AssertionError("the transcript never stopped changing:\n" + "\n".join(rows))


def transcript_rows(tmux: Tmux) -> list[str]:
    """The transcript's rows (between the title bar and the prompt's top border), the scrollbar's
    thumb blanked."""
    lines = tmux.screen().splitlines()
    prompt = next(index for index, line in enumerate(lines) if "Message the agent" in line)
    return [line.translate(THUMB).rstrip() for line in lines[1 : prompt - 1]]


@pytest.mark.timeout(90)
def test_a_streamed_reply_leaves_the_terminal_as_a_full_repaint_draws_it() -> None:
    root = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))
    workdir = root / "work"
    workdir.mkdir()
    tmux = Tmux(root)
    with FakeAnthropicServer() as server:
        server.script(text_reply(long_reply(), chunks=500, delay=0.004))
        tmux.env.update(api_env(server))
        tmux.env.update(XDG_CONFIG_HOME=str(root / "config"), XDG_DATA_HOME=str(root / "data"),
                        XDG_STATE_HOME=str(root / "state"), XDG_CACHE_HOME=str(root / "cache"))
        try:
            tmux.start(f"{sys.executable} -m tui.cli --workdir {workdir}")
            wait_until(lambda: "Message the agent" in tmux.screen() and "Context" in tmux.screen(), 20,
                       "the prompt and the inspector", tmux)
            tmux.run("send-keys", "-t", tmux.session, "C-b", check=True)
            wait_until(lambda: "Context" not in tmux.screen(), 10, "the inspector to hide", tmux)
            tmux.run("send-keys", "-t", tmux.session, "-l", "write it all", check=True)
            tmux.run("send-keys", "-t", tmux.session, "Enter", check=True)
            wait_until(lambda: "word1_0" in tmux.screen(), 20, "the reply to start", tmux)
            wait_until(lambda: LAST in tmux.screen() and "working" not in tmux.screen(), 40, "the reply's end", tmux)
            painted = settled_rows(tmux)

            tmux.run("resize-window", "-t", tmux.session, "-x", str(WIDTH - 20), "-y", str(HEIGHT), check=True)
            wait_until(lambda: transcript_rows(tmux) != painted, 10, "the narrower layout", tmux)
            tmux.run("resize-window", "-t", tmux.session, "-x", str(WIDTH), "-y", str(HEIGHT), check=True)
            repainted = settled_rows(tmux)

            assert LAST in "\n".join(painted)
            assert "item 8.3" in "\n".join(painted)  # a screenful of the reply, not an empty pane
            assert painted == repainted, "\n".join(
                f"{row:2d} painted  |{a}\n   repainted|{b}" for row, (a, b) in enumerate(zip(painted, repainted, strict=False)) if a != b
            )
        finally:
            tmux.kill_server()
            shutil.rmtree(root, ignore_errors=True)
