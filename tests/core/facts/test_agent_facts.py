"""The ledger and the fact check through the offline agent: a constraint compacted away, the notice
right after the step, keeping it, the summary review, restore and undo in the ledger, and a resume."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import AgentEvent, CompactionStep, HistoryChanged, Notice
from core.model.base import ModelEvent
from core.model.offline import OfflineModel

pytestmark = pytest.mark.usefixtures("no_api_key")

RULE = "Never touch prod.yaml"
OTHER = "Only edit src/"
TYPED = f"Some context first, long enough that the offline model does not quote it all back to us.\n{RULE}. {OTHER}."


class RecordingModel(OfflineModel):
    def __init__(self) -> None:
        super().__init__(chunk_delay=0)
        self.requests: list[str] = []

    async def stream(self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     max_tokens: int) -> AsyncIterator[ModelEvent]:
        self.requests.append(json.dumps(list(messages), ensure_ascii=False))
        async for event in super().stream(system=system, messages=messages, tools=tools, max_tokens=max_tokens):
            yield event


def make(tmp_path: Path, made: list[Agent], model: OfflineModel | None = None, **settings: Any) -> Agent:
    for number in range(4):
        (tmp_path / f"f{number}.txt").write_text(f"file {number}\nerror: broken {number}\n" + "x" * 3000, encoding="utf-8")
    compaction = CompactionSettings(context_char_limit=60_000, snip_trigger_messages=40, snip_target_messages=20)
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, compaction=compaction, **settings),
                                model=model or OfflineModel(chunk_delay=0))
    made.append(agent)
    return agent


async def events_of(stream: AsyncIterator[AgentEvent]) -> list[AgentEvent]:
    return [event async for event in stream]


async def summarised_away(agent: Agent) -> list[AgentEvent]:
    """The rule typed, two files read, then a reviewed summary that leaves the rule out."""
    await events_of(agent.run_turn(TYPED))
    await events_of(agent.run_turn("read f0.txt"))
    await events_of(agent.run_turn("read f1.txt"))
    return await events_of(agent.compact(None, summary=f"Read f0.txt and f1.txt; we agreed to {OTHER}."))


async def test_a_constraint_summarised_away_is_not_visible_and_named_right_after_the_step(
        tmp_path: Path, made: list[Agent]) -> None:
    agent = make(tmp_path, made)
    await events_of(agent.run_turn(TYPED))
    assert [fact.visible for fact in agent.facts().of_kind("constraint")] == [True, True]
    await events_of(agent.run_turn("read f0.txt"))
    await events_of(agent.run_turn("read f1.txt"))
    events = await events_of(agent.compact(None, summary=f"Read f0.txt and f1.txt; we agreed to {OTHER}."))
    kinds = [type(event).__name__ for event in events]
    changed = next(event for event in events if isinstance(event, HistoryChanged))
    notice = events[kinds.index("HistoryChanged") + 1]
    assert isinstance(notice, Notice) and notice.kind == "warning"
    assert notice.message == f"1 of your constraints is no longer visible: {RULE}"
    step = next(event for event in events if isinstance(event, CompactionStep))
    transcript = step.files_written[0]
    rule = next(fact for fact in agent.facts().facts if fact.text == RULE)
    assert (rule.kind, rule.source, rule.visible, rule.path) == ("constraint", "messages.0", False, transcript)
    assert next(fact for fact in changed.facts if fact.text == RULE) == rule  # the change carried it
    assert json.dumps(RULE)[1:-1] in (tmp_path / transcript).read_text(encoding="utf-8")
    kept = next(fact for fact in agent.facts().facts if fact.text == OTHER)
    assert kept.visible and kept.path is None  # the summary holds it
    errors = agent.facts().of_kind("error")
    assert [fact.text for fact in errors] == ["error: broken 0", "error: broken 1"]
    assert all(not fact.visible and fact.path == transcript for fact in errors)
    assert [fact.text for fact in agent.facts().of_kind("path")] == ["f0.txt", "f1.txt"]
    # the ledger: one run of messages, this step's, from the transcript
    entry, = agent.ledger
    assert (entry.step, entry.kind, entry.path, entry.restorable) == ("compact_history", "messages", transcript, False)
    assert entry.label == "messages #0-#9" and entry.span == (0, 10) and entry.tokens and entry.chars > 3000
    assert step.ledger == (entry,) and changed.ledger is not None and changed.ledger.added == (entry,)


async def test_keeping_a_constraint_makes_it_visible_in_the_next_request_and_through_later_steps(
        tmp_path: Path, made: list[Agent]) -> None:
    model = RecordingModel()
    agent = make(tmp_path, made, model)
    await summarised_away(agent)
    changed, notice = await agent.keep_fact(RULE)
    assert changed is not None and "pinned note" in notice.message
    fact = next(fact for fact in changed.facts if fact.text == RULE)
    assert fact.visible and fact.path is None
    await events_of(agent.run_turn("read f2.txt"))
    assert json.dumps(RULE)[1:-1] in model.requests[-1]
    await events_of(agent.compact(None, summary="Nothing about rules."))
    await events_of(agent.run_turn("read f3.txt"))
    assert json.dumps(RULE)[1:-1] in model.requests[-1], "the kept note did not survive the summary"
    assert RULE not in [fact.text for fact in agent.facts().hidden()]


async def test_keeping_a_constraint_still_in_context_pins_its_message(tmp_path: Path, made: list[Agent]) -> None:
    agent = make(tmp_path, made)
    await events_of(agent.run_turn(TYPED))
    await events_of(agent.run_turn("read f0.txt"))
    changed, notice = await agent.keep_fact(RULE)
    assert changed is None and "its message is pinned" in notice.message
    assert agent.pinned == {agent.pin_key(0)}


async def test_keeping_a_constraint_of_the_current_request_adds_a_note(tmp_path: Path, made: list[Agent]) -> None:
    # a summary holds the current request in its marker, where a pin of its message would not follow it
    model = RecordingModel()
    agent = make(tmp_path, made, model)
    await events_of(agent.run_turn(TYPED))
    changed, _ = await agent.keep_fact(RULE)
    assert changed is not None and agent.messages[-1]["content"].endswith("\n" + RULE)
    await events_of(agent.compact(None, summary="nothing"))
    await events_of(agent.run_turn("read f0.txt"))
    await events_of(agent.compact(None, summary="nothing again"))
    await events_of(agent.run_turn("read f1.txt"))
    assert json.dumps(RULE)[1:-1] in model.requests[-1]
    with pytest.raises(Exception, match="no constraint"):
        await agent.keep_fact("never heard of it")


async def test_the_summary_review_says_which_facts_a_draft_keeps(tmp_path: Path, made: list[Agent]) -> None:
    agent = make(tmp_path, made)
    await events_of(agent.run_turn(TYPED))
    await events_of(agent.run_turn("read f0.txt"))
    review = agent.review_summary(f"We read f0.txt. The user said: {RULE}.")
    assert [fact.text for fact in review.kept] == [RULE, "f0.txt"]
    assert [fact.text for fact in review.dropped] == [OTHER, "error: broken 0"]
    assert review.dropped_constraints()[0].text == OTHER and review.summary_written
    before = agent.review_summary(None)  # before a draft: the request stays, the rest depends on the summary
    assert [fact.text for fact in before.kept] == ["f0.txt"] and not before.summary_written
    # the review is what the step does: accept the draft, and the dropped facts are the hidden ones
    await events_of(agent.compact(None, summary=f"We read f0.txt. The user said: {RULE}."))
    assert {fact.text for fact in agent.facts().hidden()} == {fact.text for fact in review.dropped}


async def test_drop_restore_and_undo_in_the_ledger(tmp_path: Path, made: list[Agent]) -> None:
    agent = make(tmp_path, made)
    await events_of(agent.run_turn("read f0.txt"))
    tool_use_id = agent.messages[2]["content"][0]["tool_use_id"]
    changed = await agent.drop(tool_use_id)
    assert changed is not None and changed.ledger is not None
    entry, = agent.ledger
    assert (entry.step, entry.kind, entry.tool_use_id, entry.restorable) == ("drop", "tool_result", tool_use_id, True)
    assert entry.label == 'read_file {"path": "f0.txt"}' and entry.call == 3 and entry.returned is None  # a read is two calls
    assert (tmp_path / entry.path).read_text(encoding="utf-8") == (tmp_path / "f0.txt").read_text(encoding="utf-8")
    error = agent.facts().of_kind("error")[0]
    assert not error.visible and error.path == entry.path
    restored = await agent.restore(entry.path)
    assert restored is not None and restored.ledger is not None and restored.ledger.returned == (0,)
    assert agent.ledger[0].returned == "restore" and agent.facts().of_kind("error")[0].visible
    await events_of(agent.compact(None, summary="read f0"))
    assert [entry.step for entry in agent.ledger] == ["drop", "compact_history"]
    await agent.undo_compaction()
    assert [entry.returned for entry in agent.ledger] == ["restore", "undo"]
    assert all(fact.visible for fact in agent.facts().facts)


async def test_the_ledger_and_the_archived_facts_come_back_with_a_resumed_session(
        tmp_path: Path, made: list[Agent]) -> None:
    agent = make(tmp_path, made)
    await summarised_away(agent)
    ledger, facts = agent.ledger, agent.facts()
    await agent.aclose()
    resumed = make(tmp_path, made, resume=True)
    assert resumed.ledger == ledger
    rule = next(fact for fact in resumed.facts().facts if fact.text == RULE)
    assert not rule.visible and rule.path == ledger[0].path
    assert {(f.kind, f.text, f.visible, f.path) for f in resumed.facts().facts} == \
        {(f.kind, f.text, f.visible, f.path) for f in facts.facts}
    # and the new session file carries the ledger on: a resume of it has it too
    await resumed.aclose()
    again = make(tmp_path, made, resume=True)
    assert again.ledger == ledger


async def test_the_preview_names_the_constraints_only_a_summary_could_keep(tmp_path: Path, made: list[Agent]) -> None:
    from core.events import NextCallPreview

    long = "y" * 3_000
    messages = [{"role": "user", "content": TYPED}, {"role": "assistant", "content": [{"type": "text", "text": long}]},
                {"role": "user", "content": "Now do the next thing. " + long}]
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True,
                                         compaction=CompactionSettings(context_char_limit=5_000)),
                                model=OfflineModel(chunk_delay=0))
    made.append(agent)
    agent.conversation.replace(messages, "test")

    async def preview_now() -> NextCallPreview:
        previews = [item async for item in agent.forecast() if isinstance(item, NextCallPreview)]
        assert len(previews) == 1
        return previews[0]

    preview = await preview_now()
    assert [step.step for step in preview.steps][-1] == "compact_history"
    assert [fact.text for fact in preview.at_risk] == [RULE, OTHER]
    await agent.pin(agent.pin_key(0) or "")
    preview = await preview_now()
    assert preview.at_risk == ()  # the pinned message carries both after any summary
