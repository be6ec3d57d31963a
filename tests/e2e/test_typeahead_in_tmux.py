"""Keys typed before the app's first frame reach the prompt, in order (issue 34): a person who starts
typing right after running `ctxtui` keeps every character. The first burst is written before the
program has even started (the terminal still in canonical mode: the line discipline holds it as a
partial line), the next keys one at a time while the app starts, the last after its first frame."""

from __future__ import annotations

import time

import pytest

from tests.e2e.test_typing_in_tmux import sent
from tests.support.tmux import TMUX, ctxtui_in_tmux, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FOOTER = "^q Quit"
"""On screen from the app's first frame on."""


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(90)
def test_keys_typed_before_the_first_frame_reach_the_prompt_in_order() -> None:
    with ctxtui_in_tmux() as (tmux, workdir):
        tmux.type("typed at once", literal=True)  # before the interpreter is up: a pending canonical line
        typed = "typed at once"
        during = " then one key at a time while it starts"
        deadline = time.monotonic() + 20
        for character in during:
            if FOOTER in tmux.screen() or time.monotonic() > deadline:
                break
            tmux.type(character, literal=True)
            typed += character
        rest = during[len(typed) - len("typed at once") :] + " and after"
        wait_until(lambda: FOOTER in tmux.screen(), 20, "the first frame", tmux)
        tmux.type(rest, literal=True)
        typed += rest
        assert typed == "typed at once then one key at a time while it starts and after"
        wait_until(lambda: typed in tmux.screen(), 15, "the typed text in the prompt", tmux)
        tmux.type("Enter")
        wait_until(lambda: typed in sent(workdir), 15, "the typed text in the session log", tmux)
        assert sent(workdir) == [typed]  # every key once, in order, nothing else
        tmux.type("C-q")
        wait_until(lambda: not tmux.alive(), 8, "the app to exit after ctrl+q", tmux)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(90)
def test_an_enter_typed_before_the_app_starts_is_a_new_line_not_a_send() -> None:
    """The terminal, still in its line mode, turns that Enter into a newline before the app takes it:
    it stays in the prompt as a line break, and nothing goes to the model before the person sees it."""
    with ctxtui_in_tmux() as (tmux, workdir):
        tmux.type("early line", literal=True)
        tmux.type("Enter")
        tmux.type("second", literal=True)
        wait_until(lambda: FOOTER in tmux.screen(), 20, "the first frame", tmux)
        wait_until(lambda: "second" in tmux.screen(), 15, "the typed text in the prompt", tmux)
        lines = [line for line in tmux.screen().splitlines() if "early line" in line or "second" in line]
        assert len(lines) == 2 and "early line" in lines[0] and "second" in lines[1]
        assert sent(workdir) == []
        tmux.type("Enter")
        wait_until(lambda: sent(workdir) == ["early line\nsecond"], 15, "the two lines sent as one message", tmux)
