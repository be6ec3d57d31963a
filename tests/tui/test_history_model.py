"""The UI's one copy of the history: splices applied once, equal to the core's history, read by every view.

A property test holds `HistoryModel` to a plain list the same splices are applied to (and its breakdown
to `core.history.breakdown` of that list); the app test holds the inspector's model, and the message
tree's nodes, to the agent's history after turns, a compaction, an undo and a new session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import Splice
from core.history import breakdown, estimate_chars
from tests.support.pilot import send, settled, wait_for
from tui.app import CtxApp
from tui.history_model import HistoryModel

Message = dict[str, Any]

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
messages = st.builds(lambda role, text: {"role": role, "content": text}, st.sampled_from(["user", "assistant"]), texts)


@st.composite
def splice_runs(draw: st.DrawFn) -> tuple[list[Message], list[Splice]]:
    start = draw(st.lists(messages, max_size=8))
    length, changes = len(start), []
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, length))
        removed = draw(st.integers(0, length - at))
        added = tuple(draw(st.lists(messages, max_size=4)))
        changes.append(Splice(at, removed, added))
        length += len(added) - removed
    return start, changes


@settings(max_examples=200, deadline=None)
@given(splice_runs(), st.integers(1, 3))
def test_the_model_applies_splices_as_a_list_does(run: tuple[list[Message], list[Splice]], batches: int) -> None:
    start, changes = run
    model = HistoryModel(start)
    expected = list(start)
    size = max(1, len(changes) // batches)
    for first in range(0, len(changes), size):
        batch = changes[first : first + size]
        for change in batch:
            expected[change.start : change.start + change.removed] = list(change.added)
        model.apply(batch, estimate_chars(expected))
    assert list(model.messages) == expected
    assert model.breakdown.totals == breakdown(expected)
    assert model.chars == estimate_chars(expected)


def test_a_whole_replacement_and_a_reset_start_over() -> None:
    model = HistoryModel([{"role": "user", "content": "a"}])
    new = ({"role": "user", "content": "b"}, {"role": "assistant", "content": "c"})
    model.apply([Splice(0, -1, new)], estimate_chars(list(new)))
    assert list(model.messages) == list(new) and model.breakdown.totals == breakdown(list(new))
    model.reset([])
    assert list(model.messages) == [] and model.breakdown.totals == breakdown([]) and model.version == 2


async def test_the_inspector_and_the_tree_follow_the_agent_through_turns_compaction_undo_and_a_new_session(
    tmp_path: Path,
) -> None:
    for number in (1, 2, 3):
        (tmp_path / f"f{number}.txt").write_text("line of the big file\n" * 200, encoding="utf-8")
    settings_ = Settings(workdir=tmp_path, offline=True, compaction=CompactionSettings(context_char_limit=9_000))
    agent = Agent.from_settings(settings_)
    app = CtxApp(agent)

    def same() -> bool:
        history = app.main.inspector.history
        tree = app.message_tree
        return (
            list(history.messages) == list(agent.messages)
            and not tree.syncing
            and [node.data.message if node.data else None for node in tree.nodes] == list(agent.messages)
        )

    async with app.run_test(size=(160, 48)) as pilot:
        for number in (1, 2, 3):
            await send(pilot, app, f"read f{number}.txt")
        await wait_for(pilot, same)
        assert any(step for step in agent.compactions)  # the pipeline compacted on the way
        assert await app.submit("/undo")
        await settled(pilot, app)
        await wait_for(pilot, same)
        assert await app.submit("/new")
        await settled(pilot, app)
        await wait_for(pilot, lambda: same() and not agent.messages)
    await agent.aclose()
