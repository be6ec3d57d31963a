"""Fast typing and a bracketed paste in a real terminal while the message tree has focus (issue 30,
item 16): tmux writes each burst at once, as a fast typist or a paste does, and the session log says
exactly what was sent."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.tmux import TMUX, Tmux, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def sent(workdir: Path) -> list[str]:
    """The user messages of the session log (text ones: what the person sent)."""
    texts: list[str] = []
    for log in (workdir / ".ctxtui" / "sessions").glob("session_*.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line still being written
                continue
            for message in record.get("messages", []) + ([record["message"]] if "message" in record else []):
                if message.get("role") == "user" and isinstance(message.get("content"), str):
                    texts.append(message["content"])
    return texts


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(90)
def test_typing_and_pasting_with_the_tree_focused_reach_the_prompt_in_a_real_terminal() -> None:
    root = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))
    workdir = root / "work"
    workdir.mkdir()
    tmux = Tmux(root)

    def keys(*names: str, literal: bool = False) -> None:
        tmux.run("send-keys", "-t", tmux.session, *(["-l"] if literal else []), *names, check=True)

    def focus_tree() -> None:
        keys("C-t")
        wait_until(lambda: "▀Messages" in tmux.screen(), 10, "the tree to have focus", tmux)

    try:
        tmux.start(f"{sys.executable} -m tui.cli --offline --workdir {workdir}")
        wait_until(lambda: "Message the agent" in tmux.screen(), 15, "the prompt", tmux)
        focus_tree()
        keys("Never deploy on Fridays. Only use staging.", "Enter")  # one write: the burst of a fast typist
        wait_until(lambda: "Never deploy on Fridays. Only use staging." in sent(workdir), 15,
                   "the sentence in the session log", tmux)
        # an Enter while a turn runs does not send (the text stays in the prompt): the turn ends first
        wait_until(lambda: "idle ·" in tmux.screen(), 15, "the turn to end", tmux)
        focus_tree()
        tmux.run("set-buffer", "-b", "typed", "pasted: keep the spaces", check=True)
        tmux.run("paste-buffer", "-p", "-d", "-b", "typed", "-t", tmux.session, check=True)  # bracketed
        keys(" and more", literal=True)
        keys("Enter")
        wait_until(lambda: "pasted: keep the spaces and more" in sent(workdir), 15, "the pasted message", tmux)
        assert sent(workdir) == ["Never deploy on Fridays. Only use staging.", "pasted: keep the spaces and more"]
        keys("C-q")
        wait_until(lambda: not tmux.alive(), 8, "the app to exit after ctrl+q", tmux)
    finally:
        tmux.kill_server()
        shutil.rmtree(root, ignore_errors=True)
