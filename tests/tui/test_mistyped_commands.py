"""A mistyped slash command is refused with a suggestion and never reaches the model (issue 30, item 17):
typed in the real app (Pilot), as the new user typed them."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.agent import Agent
from core.config import Settings
from tests.support.pilot import settled, wait_for
from tui import actions
from tui.app import CtxApp
from tui.widgets.chat_blocks import NoticeLine

SIZE = (160, 48)


@pytest.mark.parametrize(("typed", "said"), [
    ("/tre", "unknown command /tre: did you mean /tree?"),
    ("/Compact now", "unknown command /Compact: did you mean /compact?"),
    ("/restore.task_outputs/tool-results/toolu_1.txt",
     "/restore.task_outputs/tool-results/toolu_1.txt is not a command: "
     "did you mean /restore .task_outputs/tool-results/toolu_1.txt?"),
    ("/xyzzy", "unknown command /xyzzy: /help lists the commands"),
])
async def test_a_mistyped_command_is_refused_with_a_suggestion_and_nothing_is_sent(
        tmp_path: Path, typed: str, said: str) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.chat.input.insert(typed)
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(said in line.text for line in app.chat.query(NoticeLine)))
        await settled(pilot, app)
        assert agent.messages == [] and agent.timeline == [] and app.turns_completed == 0
        notice = next(line for line in app.chat.query(NoticeLine) if said in line.text)
        assert notice.text == f"{said} (nothing was sent)" and notice.has_class("-warning")
        assert app.chat.input.text == typed  # back in the prompt, to fix
    await agent.aclose()


async def test_a_message_that_starts_with_a_path_is_sent(tmp_path: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.chat.input.insert("/usr/bin is on my PATH")
        await pilot.press("enter")
        await settled(pilot, app, 1)
        assert agent.messages[0] == {"role": "user", "content": "/usr/bin is on my PATH"}
        assert not any("command" in line.text for line in app.chat.query(NoticeLine))
    await agent.aclose()


def test_which_first_words_are_refused() -> None:
    assert actions.refused_command("/tree") is None  # a command
    assert actions.refused_command("/compact keep the paths") is None
    assert actions.refused_command("/usr/bin is on my PATH") is None  # a path: a message
    assert actions.refused_command("/etc/hosts?") is None
    assert actions.refused_command("/tmp") == "unknown command /tmp: /help lists the commands"
    assert actions.refused_command("/timelin") == "unknown command /timelin: did you mean /timeline?"
    assert actions.refused_command("/help.") == "/help. is not a command: did you mean /help .?"
