"""What compaction took and which facts the model can still see, in the real app online against the
loopback fake API: the summary review names the constraints a draft drops, the chat's line after the
step names them with the key that shows them, the Facts view lists them as not visible and one key
keeps one (the fake's next recorded request carries it); the Dropped view lists the ledger grouped
by compaction, opens an entry's archived text and restores a dropped tool result with one key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.pilot import Pilot

from core.agent import Agent
from core.config import Settings
from tests.support.fakeapi import FakeAnthropicServer, settings_for, text_reply, tool_reply
from tests.support.pilot import screen_ready, send, wait_for
from tui.app import CtxApp
from tui.screens.archive import ArchiveScreen
from tui.screens.summary_review import SummaryReviewScreen
from tui.widgets.chat_blocks import NoticeLine

SIZE = (170, 50)
RULE = "Never touch prod.yaml"
OTHER = "Only edit src/"
TYPED = f"Some context first, then two rules for the whole session.\n{RULE}. {OTHER}."


def in_request(text: str, body: dict[str, object]) -> bool:
    return json.dumps(text)[1:-1] in json.dumps(body["messages"], ensure_ascii=False)


async def test_a_constraint_compacted_away_is_shown_hidden_and_one_key_brings_it_back_in_the_next_request(
        anthropic_env: FakeAnthropicServer, tmp_path: Path) -> None:
    agent = Agent.from_settings(settings_for(tmp_path))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, TYPED)
        await send(pilot, app, "hello")
        await app.submit("/compact")
        review = await _review_screen(pilot, app)
        assert review.reviewed is not None  # the fake's draft ("ok") keeps neither rule
        assert [fact.text for fact in review.reviewed.dropped_constraints()] == [RULE, OTHER]
        assert f"constraint: {RULE}" in str(review.query_one("#summary-facts").render())
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("no longer visible" in line.text for line in app.chat.query(NoticeLine)))
        line = next(line for line in app.chat.query(NoticeLine) if "no longer visible" in line.text)
        assert str(line.render()).endswith(f"2 of your constraints are no longer visible: {RULE}; {OTHER} · "
                                           "ctrl+f shows them (Facts)")
        await wait_for(pilot, lambda: app.turns_completed == 3)

        await pilot.press("ctrl+f")
        view = app.main.inspector.facts_view
        await wait_for(pilot, lambda: app.main.views.current == "facts" and app.focused is view)
        assert [fact.text for fact in view.hidden()[:2]] == [RULE, OTHER]  # constraints first
        assert all(fact.path for fact in view.hidden())  # each in the transcript the summary wrote
        assert view.border_title == f"Facts · {len(view.hidden())} not visible (2 constraints)"
        view.highlighted = 0
        await pilot.press("f6")  # keep the first: a pinned note, so the next request carries it
        await wait_for(pilot, lambda: RULE not in [fact.text for fact in view.hidden()])
        assert OTHER in [fact.text for fact in view.hidden()]
        assert view.facts[("constraint", RULE)] == next(f for f in agent.facts().facts if f.text == RULE)

        anthropic_env.clear_requests()
        await send(pilot, app, "go on")
        request = anthropic_env.message_requests()[-1]
        assert in_request(RULE, request) and not in_request(OTHER, request)
    await agent.aclose()


async def test_the_dropped_view_groups_the_ledger_opens_an_entry_and_restores_a_dropped_result(
        anthropic_env: FakeAnthropicServer, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha line\n" * 300, encoding="utf-8")
    anthropic_env.script(tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]), text_reply("read it"))
    agent = Agent.from_settings(settings_for(tmp_path))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a.txt")
        await app.submit("/drop toolu_a")
        view = app.main.inspector.dropped_view
        await wait_for(pilot, lambda: len(view.entries) == 1)
        await app.submit("/compact")
        await _review_screen(pilot, app)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: len(view.entries) == 2 and app.turns_completed == 2)
        assert view.entries == agent.ledger

        await app.submit("/dropped")
        await wait_for(pilot, lambda: app.main.views.current == "dropped" and app.focused is view)
        rows = [str(view.get_option_at_index(index).prompt) for index in range(view.option_count)]
        assert rows[0].startswith("compact_history · before call ")  # the newest compaction first
        assert "messages #" in rows[1] and rows[2].startswith("drop · ")
        assert "read_file" in rows[3] and "f7 restores" in rows[3]

        view.highlighted = 1
        await pilot.press("enter")  # the summary's transcript
        await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main)

        view.focus()
        view.highlighted = 3
        await pilot.press("f7")  # the dropped result back in context, byte-exact
        await wait_for(pilot, lambda: view.entries[0].returned == "restore")
        assert "back (restore)" in str(view.get_option_at_index(3).prompt)
        assert agent.ledger[0].returned == "restore"
        assert "alpha line\n" * 300 in json.dumps(agent.messages, ensure_ascii=False).replace("\\n", "\n")
    await agent.aclose()


async def _review_screen(pilot: Pilot[None], app: CtxApp) -> SummaryReviewScreen:
    return await screen_ready(pilot, SummaryReviewScreen)


async def test_f2_goes_round_every_view_and_the_palette_and_slash_commands_reach_the_new_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        seen = []
        for _ in range(7):
            await pilot.press("f2")
            await pilot.pause()
            seen.append(app.main.views.current)
        assert seen == ["breakdown", "timeline", "dropped", "facts", "search", "tree", "breakdown"]
        assert app.main.inspector.dropped_view.border_subtitle == "f2 → facts"
        await app.submit("/facts")
        await wait_for(pilot, lambda: app.main.views.current == "facts" and app.focused is app.main.inspector.facts_view)
        await app.submit("/dropped")
        await wait_for(pilot, lambda: app.main.views.current == "dropped" and app.focused is app.main.inspector.dropped_view)
    await agent.aclose()
