"""A message larger than the whole context limit is caught before anything is sent (Pilot)."""

from __future__ import annotations

from pathlib import Path

from core.agent import Agent
from core.archive import Archive
from core.compaction import CompactionSettings
from core.config import Settings
from tests.support.pilot import screen_ready, settled, wait_for
from tui.app import CtxApp
from tui.screens.oversize import OversizeScreen
from tui.widgets.chat_blocks import CompactionNotice, NoticeLine

LONG = "a pasted build log line that goes on and on\n" * 200  # ~8,800 chars


def make_app(tmp_path: Path) -> tuple[Agent, CtxApp]:
    settings = Settings(workdir=tmp_path, offline=True, compaction=CompactionSettings(context_char_limit=5_000))
    agent = Agent.from_settings(settings)
    return agent, CtxApp(agent)


async def test_archive_as_a_file_sends_a_short_message_naming_it(tmp_path: Path) -> None:
    agent, app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.submit(LONG)
        await wait_for(pilot, lambda: isinstance(app.screen, OversizeScreen))
        assert agent.messages == []  # nothing sent yet
        await pilot.press("a")
        await settled(pilot, app, 1)
        first = agent.messages[0]["content"]
        assert isinstance(first, str) and len(first) < 5_000 and "read_file" in first
        path = first.split(" is saved whole at ")[1].split(". Read it")[0]
        assert await Archive(tmp_path).read_text(path) == LONG
    await agent.aclose()


async def test_cancel_gives_the_text_back_and_sends_nothing(tmp_path: Path) -> None:
    agent, app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.submit(LONG)
        await wait_for(pilot, lambda: isinstance(app.screen, OversizeScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, OversizeScreen))
        await pilot.pause()
        assert agent.messages == []
        assert app.chat.input.text == LONG
    await agent.aclose()


async def test_send_anyway_sends_it_whole(tmp_path: Path) -> None:
    agent, app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.submit(LONG)
        await wait_for(pilot, lambda: isinstance(app.screen, OversizeScreen))
        await pilot.press("s")
        await settled(pilot, app, 1)
        assert agent.messages[0] == {"role": "user", "content": LONG}
        # said once in the chat, and no compaction step that changed nothing (chat, log, timeline)
        notices = [str(line.render()) for line in app.chat.transcript.query(NoticeLine)]
        assert len([text for text in notices if "alone is" in text]) == 1
        assert not app.chat.transcript.query(CompactionNotice)
        assert agent.timeline[-1].steps == () and app.gauge.state.last_step is None
    await agent.aclose()


async def test_the_prompts_size_is_one_figure_wherever_it_is_shown(tmp_path: Path) -> None:
    """The dialog, the message that names the archived file and the tree's label of the message sent
    anyway say the same number of chars (issue 30, item 21: 202,003 in one place, 200,001 in another)."""
    import re

    agent, app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.submit(LONG)
        screen = await screen_ready(pilot, OversizeScreen)
        shown = screen.chars
        dialog = " ".join(str(static.render()) for static in screen.query("Static"))
        assert f"It is {shown:,} chars" in dialog
        await pilot.press("s")  # send it anyway: the tree labels the message with its size
        await settled(pilot, app, 1)
        label = str(app.message_tree.entries[0][1].label)
        assert f" · {shown:,} chars" in label, label
        await app.submit(LONG)  # again, archived this time: the short message says the same size
        await screen_ready(pilot, OversizeScreen)
        await pilot.press("a")
        await settled(pilot, app, 2)
        sent = next(message["content"] for message in reversed(agent.messages)
                    if message["role"] == "user" and isinstance(message["content"], str))
        assert re.search(r"My message is ([\d,]+) chars", sent).group(1) == f"{shown:,}"  # type: ignore[union-attr]
    await agent.aclose()
