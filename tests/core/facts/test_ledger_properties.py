"""Property tests: random sessions of the offline agent, checked against the ledger and the fact check.

Turns read files whose lines hold error markers (and files that do not exist), the person types
constraints, and between turns random drops, restores, undos, compactions and kept facts change the
context. Checked:
- every message and tool result a step or a drop took out of the context is in exactly one ledger
  entry of that step, whose file holds it byte-exact (a result's file is the tool's whole output, a
  run's transcript lines are the messages); no entry stands for nothing;
- every fact's visibility equals a direct search of the request's JSON, at every model call and
  between turns (the history as it is is what the next call sends), and a fact that is not visible
  names a file that holds its text;
- restoring a restorable entry brings back exactly its text, and the entry is marked as back;
- a kept fact is visible in every later request;
- the ledger survives a resume of the session file.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.agent import Agent
from core.compaction import CompactionSettings
from core.compaction.run import Outcome
from core.compaction.steering import SteeringError
from core.config import Settings
from core.events import HistoryChanged, LedgerEntry, Splice, ToolCallFinished
from core.markers import parse_marker
from core.model.base import ModelEvent
from core.model.offline import OfflineModel
from core.sessions.log import SessionLog
from core.values.records import FactReport

Message = dict[str, Any]
CONSTRAINTS = ("Never touch prod{n}.yaml", "Only edit src{n}/", "You must keep the tests green {n}",
               "Avoid the vendor{n} folder")

FILLER = "A few words first, so that the rule below is further in than what the offline model quotes back."

actions = st.lists(
    st.tuples(st.sampled_from(["read", "read", "read", "read", "rule", "rule", "missing", "drop", "restore",
                               "undo", "compact", "keep", "keep", "pin_user"]), st.integers(0, 40)),
    min_size=4, max_size=16,
)


def escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def request_json(messages: list[Message]) -> str:
    return json.dumps(messages, ensure_ascii=False)


class RecordingModel(OfflineModel):
    """The offline model; at every call it checks the fact report against the request it is sent."""

    def __init__(self) -> None:
        super().__init__(chunk_delay=0)
        self.check: Callable[[list[Message]], None] | None = None
        self.calls = 0

    async def stream(self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     max_tokens: int) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        if self.check is not None:
            self.check(json.loads(json.dumps(list(messages))))
        async for event in super().stream(system=system, messages=messages, tools=tools, max_tokens=max_tokens):
            yield event


@dataclass
class Call:
    """One compactor call the keeper applied: the list it started from and how it ended."""

    base: list[Message]
    outcome: Outcome | None = None


@dataclass
class World:
    agent: Agent
    model: RecordingModel
    workdir: Path
    originals: dict[str, str] = field(default_factory=dict)  # tool_use id -> the tool's whole output
    calls: list[Call] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)  # texts kept with keep_fact
    checked_entries: int = 0

    # --- the fact check ---------------------------------------------------------------------------

    def check_facts(self, report: FactReport, messages: list[Message]) -> None:
        sent = request_json(messages)
        for fact in report.facts:
            assert fact.source.startswith("messages."), fact
            assert fact.visible == (escaped(fact.text) in sent), (fact, "visibility is not the request's")
            if not fact.visible:
                assert fact.path is not None, f"{fact} is nowhere on disk"
                assert self.agent.archive.resolve(fact.path) is not None, f"{fact} is not in the archive"
                data = (self.workdir / fact.path).read_text(encoding="utf-8")
                assert fact.text in data or escaped(fact.text) in data, (fact, "its file does not hold it")
        for text in self.kept:
            assert escaped(text) in sent, f"the kept {text!r} is not in the request"

    def at_call(self, messages: list[Message]) -> None:
        self.check_facts(self.agent.facts(), messages)

    # --- the ledger -------------------------------------------------------------------------------

    def read(self, path: str) -> str:
        return (self.workdir / path).read_text(encoding="utf-8")

    def check_step(self, base: list[Message], changes: tuple[Splice, ...], entries: tuple[LedgerEntry, ...]) -> list[Message]:
        """One step's splices against its entries; returns the list the step left."""
        used: set[int] = set()
        current = list(base)
        for splice in changes:
            old = current[splice.start: splice.start + splice.removed]
            added = list(splice.added)
            if len(old) == 1 == len(added) and old[0]["role"] == added[0]["role"] and _results(old[0]) \
                    and set(_results(old[0])) == set(_results(added[0])):
                before, after = _results(old[0]), _results(added[0])
                for tool_use_id, content in before.items():
                    if after[tool_use_id] == content:
                        continue
                    found = [number for number, entry in enumerate(entries)
                             if entry.kind == "tool_result" and entry.tool_use_id == tool_use_id]
                    assert len(found) == 1, (tool_use_id, entries)
                    used.update(found)
                    entry = entries[found[0]]
                    assert entry.path is not None and parse_marker(after[tool_use_id]).path == entry.path
                    if tool_use_id in self.originals:
                        assert self.read(entry.path) == self.originals[tool_use_id], "the result's file is not it"
            else:
                for offset, message in enumerate(old):
                    if any(message == other for other in added):
                        continue  # it stayed (a pinned message, the request put back)
                    position = splice.start + offset
                    found = [number for number, entry in enumerate(entries) if entry.kind == "messages"
                             and entry.span is not None and entry.span[0] <= position < entry.span[1]]
                    assert len(found) == 1, (position, entries)
                    used.update(found)
                    entry = entries[found[0]]
                    assert entry.path is not None
                    lines = self.read(entry.path).split("\n")
                    assert json.loads(lines[position]) == message, "the transcript does not hold the message"
            current[splice.start: splice.start + splice.removed] = added
        assert used == set(range(len(entries))), ("an entry stands for nothing", entries)
        return current

    def check_calls(self) -> None:
        for call in self.calls:
            if call.outcome is None:
                continue
            current = call.base
            for part in call.outcome.parts:
                current = self.check_step(current, part.changes, part.step.ledger)
        self.calls.clear()

    def check_ledger(self) -> None:
        ledger = self.agent.ledger
        for entry in ledger[self.checked_entries:]:
            assert entry.path is not None and (self.workdir / entry.path).is_file(), entry
            assert entry.chars > 0 and entry.tokens is not None and entry.tokens > 0, entry
            assert entry.call >= 1, entry
        self.checked_entries = len(ledger)

    async def check(self) -> None:
        self.check_calls()
        self.check_ledger()
        self.check_facts(self.agent.facts(), json.loads(json.dumps(list(self.agent.messages))))


def _results(message: Message) -> dict[str, Any]:
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return {}
    return {block["tool_use_id"]: block.get("content") for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"}


def record_calls(world: World) -> None:
    """Keep the list each compactor call starts from and its Outcome (the steps' splices and entries)."""
    compactor = world.agent.compactor
    for name in ("prepare_events", "compact_events", "reactive_events"):
        original = getattr(compactor, name)

        def wrapped(messages: Any, *args: Any, _original: Any = original, **kwargs: Any) -> AsyncIterator[Any]:
            call = Call(json.loads(json.dumps(list(messages))))
            world.calls.append(call)

            async def events() -> AsyncIterator[Any]:
                async for event in _original(messages, *args, **kwargs):
                    if isinstance(event, Outcome):
                        call.outcome = event
                    yield event
            return events()

        setattr(compactor, name, wrapped)


async def act(world: World, action: str, number: int) -> None:
    agent = world.agent
    if action in ("read", "missing", "rule"):
        if action == "read":
            text = f"read f{number % 6}.txt"
        elif action == "missing":
            text = f"read nothing{number}.txt"
        else:
            # past the 80 characters the offline model quotes back, so the reply does not hold the rule
            text = f"{FILLER}\n- {CONSTRAINTS[number % len(CONSTRAINTS)].format(n=number)}. Thanks"
        async for event in agent.run_turn(text):
            if isinstance(event, ToolCallFinished):
                world.originals[event.tool_use_id] = event.output
        return
    try:
        if action == "drop":
            ids = [key for key, content in _all_results(agent.messages).items() if parse_marker(content) is None]
            if ids:
                before = json.loads(json.dumps(list(agent.messages)))
                changed = await agent.drop(ids[number % len(ids)])
                assert isinstance(changed, HistoryChanged) and changed.ledger is not None
                entry, = changed.ledger.added
                assert entry.step == "drop" and entry.tool_use_id == ids[number % len(ids)]
                world.check_step(before, changed.changes, changed.ledger.added)
        elif action == "restore":
            restorable = [(index, entry) for index, entry in enumerate(agent.ledger)
                          if entry.restorable and entry.returned is None and entry.kind == "tool_result"]
            if restorable:
                index, entry = restorable[number % len(restorable)]
                assert entry.tool_use_id is not None and entry.path is not None
                await agent.restore(entry.path)
                text = world.originals[entry.tool_use_id]
                results = _all_results(agent.messages)
                assert results.get(entry.tool_use_id) == text or any(
                    m["role"] == "user" and isinstance(m["content"], str) and m["content"].endswith("\n" + text)
                    for m in agent.messages), "restore did not bring back exactly its text"
                assert agent.ledger[index].returned == "restore"
        elif action == "undo" and agent.compactions:
            await agent.undo_compaction()
        elif action == "compact" and agent.messages:
            [event async for event in agent.compact(None)]
        elif action == "keep":
            hidden = [fact for fact in agent.facts().hidden() if fact.kind == "constraint"]
            if hidden:
                fact = hidden[number % len(hidden)]
                await agent.keep_fact(fact.text)
                world.kept.add(fact.text)
                assert agent.facts().hidden()[: len(hidden)] != hidden or fact not in agent.facts().hidden()
        elif action == "pin_user":
            keys = [key for index in range(len(agent.messages))
                    if (key := agent.pin_key(index)) is not None and key.startswith("user:")]
            if keys:
                await agent.pin(keys[number % len(keys)])
    except SteeringError:
        pass


def _all_results(messages: list[Message]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for message in messages:
        found.update(_results(message))
    return found


async def run_session(plan: list[tuple[str, int]], limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for number in range(6):
            lines = [f"{number}:{line} 汉字 é \"q\"" if line % 40 else f"{number}:{line} error: failed at step {line}"
                     for line in range(150 + 200 * (number % 3))]
            if number == 4:
                lines[7] = "Traceback (most recent call last):"
            (workdir / f"f{number}.txt").write_text("\n".join(lines), encoding="utf-8")
        model = RecordingModel()
        compaction = CompactionSettings(context_char_limit=limit, keep_recent_results=1,
                                        snip_trigger_messages=14, snip_target_messages=9)
        agent = Agent.from_settings(Settings(workdir=workdir, offline=True, compaction=compaction), model=model)
        world = World(agent, model, workdir)
        model.check = world.at_call
        record_calls(world)
        try:
            for action, number in plan:
                await act(world, action, number)
                await world.check()
            ledger = agent.ledger
            session = agent.session
            assert session is not None
            await session.flush()
            if session.path.exists():
                assert SessionLog.replay(session.path).ledger == ledger, "the ledger is not in the session log"
            else:  # a session file is made with the history's first record: nothing happened
                assert not ledger and not agent.messages
        finally:
            await agent.aclose()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=actions, limit=st.sampled_from([5_000, 9_000, 50_000]))
@example(plan=[("read", 0), ("read", 1), ("rule", 0), *[("read", n) for n in range(2, 10)], ("keep", 0),
               *[("read", n) for n in range(10)], ("compact", 0), ("read", 3)], limit=5_000)
@example(plan=[("drop", 0), ("drop", 1), ("drop", 2), ("drop", 3)], limit=5_000)  # nothing recorded: no file
@example(plan=[("read", 4), ("drop", 0), ("restore", 0), ("missing", 1), ("read", 2), ("compact", 0), ("undo", 0),
               ("read", 5)], limit=9_000)
@pytest.mark.slow
def test_random_sessions_keep_the_ledger_and_the_facts_true(plan: list[tuple[str, int]], limit: int) -> None:
    asyncio.run(run_session(plan, limit))
