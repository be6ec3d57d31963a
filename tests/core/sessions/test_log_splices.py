"""The session log records what changed: a compaction costs the log its change, and replay is exact.

- random appends, splices and whole replacements of a live History, logged as the agent logs them,
  replay to exactly the live history, its text made valid UTF-8 (and a file cut at any byte replays to the history as of its
  last whole record);
- a message of a bad shape in the live history does not shift the places later splices name;
- a splice that does not fit (a damaged file) is skipped with what follows it until the next
  snapshot, and the replay is still API-valid;
- a real agent's session (snips, fit_tool_results, undo) resumes to the same history, the file stays
  0600, and a compaction of a long history adds far fewer bytes than the history has.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.sessions.log as session_module
from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import Splice
from core.history import estimate_chars, pairing_problems
from core.history.intake import valid_messages
from core.history.store import History
from core.sessions.log import SessionLog, valid_message

Message = dict[str, Any]

texts = st.text(max_size=12) | st.sampled_from(["\u2028 line", "lone \ud800", "模板 ✓", '{"type": "splice"}'])
messages = st.builds(
    lambda role, text, blocks: {"role": role, "content": [{"type": "text", "text": text}] if blocks else text},
    st.sampled_from(["user", "assistant"]), texts, st.booleans(),
)
operation = st.one_of(
    st.tuples(st.just("append"), messages),
    st.tuples(st.just("splice"), st.integers(0, 10**6), st.integers(0, 5), st.lists(messages, max_size=3)),
    st.tuples(st.just("edits"), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3),
                                                    st.lists(messages, max_size=2)), min_size=1, max_size=4)),
    st.tuples(st.just("replace"), st.lists(messages, max_size=4)),
)


def perform(history: History, log: SessionLog, step: tuple[Any, ...]) -> None:
    """One change of the live history, logged the way the agent logs it."""
    kind = step[0]
    if kind == "append":
        history.append(step[1])
        log.message(step[1])
        return
    if kind == "replace":
        before = list(history)
        history.replace(step[1])
        log.change((Splice(0, len(before), tuple(step[1])),), history, "compact")
        return
    wanted = [step[1:]] if kind == "splice" else step[1]
    changes = []
    for start, removed, added in wanted:
        start = start % (len(history) + 1)
        removed = min(removed, len(history) - start)
        change = Splice(start, removed, tuple(added))
        history.apply((change,))
        changes.append(change)
    log.change(tuple(changes), history, "micro_compact")


async def run(folder: Path, steps: list[tuple[Any, ...]]) -> tuple[SessionLog, list[tuple[int, list[Message]]]]:
    """Perform `steps`; returns the log and (file size, live history) after each whole record."""
    log = SessionLog.create(folder, {"model": "offline"})
    history = History()
    await log.flush()
    assert not log.path.exists()  # the meta record waits for the first change of the history
    marks: list[tuple[int, list[Message]]] = [(0, [])]
    for step in steps:
        perform(history, log, step)
        await log.flush()
        marks.append((log.path.stat().st_size if log.path.exists() else 0, list(history)))
    await log.close()
    return log, marks


@settings(max_examples=120, deadline=None)
@given(steps=st.lists(operation, max_size=30), cut=st.floats(0, 1))
def test_random_changes_replay_exactly_and_a_cut_file_to_its_last_whole_record(
    steps: list[tuple[Any, ...]], cut: float
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        log, marks = asyncio.run(run(Path(folder), steps))
        if not log.path.exists():  # nothing changed the history: no file, and nothing lost
            assert marks[-1][1] == []
            return
        # exact, except that replay makes text valid UTF-8 (a lone surrogate becomes a visible escape)
        assert SessionLog.load(log.path) == valid_messages(marks[-1][1])
        assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
        data = log.path.read_bytes()
        offset = int(cut * len(data))
        log.path.write_bytes(data[:offset])
        # a record is whole once its closing brace is there (its newline may be missing)
        expected = [history for size, history in marks if size - 1 <= offset][-1]
        assert SessionLog.load(log.path) == valid_messages(expected)


async def test_a_bad_message_in_the_live_history_keeps_later_splices_in_place(tmp_path: Path) -> None:
    good = [{"role": "user", "content": f"m{number}"} for number in range(6)]
    odd = {"role": "user", "content": [{"type": "no-such-block"}]}  # the API would refuse it
    history = History([*good[:2], odd, *good[2:]])
    log = SessionLog.create(tmp_path, {"model": "offline"})
    for message in history:
        log.message(message)
    change = Splice(4, 2, ({"role": "assistant", "content": "replaced m3 and m4"},))
    history.apply((change,))
    log.change((change,), history, "micro_compact")
    await log.close()
    replay = SessionLog.replay(log.path)
    assert replay.messages == [message for message in history if valid_message(message)]
    assert replay.skipped == 1


async def test_a_splice_that_does_not_fit_waits_for_the_next_snapshot(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, {"model": "offline"})
    first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    for message in first:
        log.message(message)
    await log.close()
    records = [
        {"type": "splice", "length": 9, "changes": [{"start": 0, "removed": 1, "added": []}]},  # wrong length
        {"type": "splice", "length": 1, "changes": [{"start": 1, "removed": 1, "added": []}]},  # would fit
        {"type": "splice", "length": 2, "changes": [{"start": True, "removed": 0, "added": []}]},
        {"type": "message", "message": {"role": "user", "content": "c"}},  # an append still counts
    ]
    with log.path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    replay = SessionLog.replay(log.path)
    assert replay.messages == [*first, {"role": "user", "content": "c"}]
    assert replay.skipped == 3
    snapshot = [{"role": "user", "content": "fresh"}]
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "replace", "messages": snapshot}) + "\n")
        handle.write(json.dumps({"type": "splice", "length": 2, "changes": [
            {"start": 1, "removed": 0, "added": [{"role": "assistant", "content": "ok"}]}]}) + "\n")
    assert SessionLog.load(log.path) == [*snapshot, {"role": "assistant", "content": "ok"}]


garbage_change = st.fixed_dictionaries({
    "start": st.one_of(st.integers(-2, 6), st.text(max_size=2), st.none()),
    "removed": st.one_of(st.integers(-2, 6), st.booleans()),
    "added": st.one_of(st.lists(messages | st.integers(), max_size=2), st.text(max_size=2)),
})
record = st.one_of(
    st.builds(lambda message: {"type": "message", "message": message}, messages | st.integers()),
    st.builds(lambda changes, length: {"type": "splice", "length": length, "changes": changes},
              st.lists(garbage_change, max_size=3) | st.text(max_size=3), st.integers(0, 8) | st.none()),
    st.builds(lambda items: {"type": "replace", "messages": items}, st.lists(messages, max_size=3)),
    st.just("torn {"),
)


@settings(max_examples=150, deadline=None)
@given(records=st.lists(record, max_size=20))
def test_any_file_with_splices_replays_to_an_api_valid_history(records: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session_x.jsonl"
        path.write_text("".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in records),
                        encoding="utf-8")
        replayed = SessionLog.load(path)
        assert all(valid_message(message) for message in replayed)
        assert pairing_problems(replayed) == []


async def test_an_agents_compactions_resume_exactly_and_cost_the_log_their_change(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    for number in range(8):
        (workdir / f"f{number}.txt").write_text(f"file {number}: " + "lorem ipsum dolor 模板 " * 200)
    compaction = CompactionSettings(context_char_limit=10_000, snip_trigger_messages=14, snip_target_messages=8)
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True, compaction=compaction))
    kinds: set[str] = set()
    try:
        for turn in range(24):
            async for _ in agent.run_turn(f"read f{turn % 8}.txt"):
                pass
            if turn == 15:
                assert await agent.undo_compaction()
            await agent.session.flush()  # type: ignore[union-attr]
            assert SessionLog.load(agent.session.path) == agent.messages  # type: ignore[union-attr]
        path = agent.session.path  # type: ignore[union-attr]
        kinds = {json.loads(line)["type"] for line in path.read_text(encoding="utf-8").splitlines()}
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        await agent.aclose()
    assert "splice" in kinds
    assert {"snip_compact", "fit_tool_results"} <= {step for sample in agent.timeline for step in sample.steps}
    resumed = Agent.from_settings(Settings(workdir=workdir, offline=True, compaction=compaction, resume=True))
    try:
        assert resumed.messages == agent.messages
    finally:
        await resumed.aclose()


async def test_a_change_in_a_long_history_adds_only_its_size_to_the_log(tmp_path: Path) -> None:
    history = History({"role": "user" if number % 2 == 0 else "assistant", "content": f"message {number} " * 40}
                      for number in range(2_000))
    log = SessionLog.create(tmp_path, {"model": "offline"})
    log.replace(history, "resume")
    await log.flush()
    size = log.path.stat().st_size
    marker = {"role": "user", "content": "[1 messages archived at .transcripts/transcript_x.jsonl]"}
    for start in (10, 500, 1_500):
        change = Splice(start, 1, (marker,))
        history.apply((change,))
        log.change((change,), history, "micro_compact")
    await log.close()
    grown = log.path.stat().st_size - size
    assert 0 < grown < 3 * (len(json.dumps(marker)) + 200)  # three small records, no copy of the history
    assert grown * 100 < estimate_chars(history)
    assert SessionLog.load(log.path) == history


def test_a_file_of_the_earlier_format_loads_as_before(tmp_path: Path) -> None:
    """Files written before splice records existed: messages, whole-history replaces, events, pins."""
    use = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.txt"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "alpha"}
    summary = {"role": "user", "content": "[Compacted]\n\nCurrent user request:\nread a.txt\n\n..."}
    lines = [
        {"type": "meta", "created": 1_700_000_000.0, "model": "offline", "workdir": str(tmp_path)},
        {"type": "message", "message": {"role": "user", "content": "read a.txt"}},
        {"type": "message", "message": {"role": "assistant", "content": [use]}},
        {"type": "message", "message": {"role": "user", "content": [result]}},
        {"type": "event", "kind": "CompactionStep", "event": {"step": "compact_history", "chars_before": 9}},
        {"type": "replace", "reason": "compact_history", "messages": [summary]},
        {"type": "pins", "ids": ["t1"]},
        {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}},
    ]
    path = tmp_path / "session_20250101-000000-1-abcdef.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    replay = SessionLog.replay(path)
    assert replay.messages == [summary, lines[-1]["message"]]
    assert replay.pins == ["t1"] and replay.skipped == 0 and replay.meta["model"] == "offline"


async def test_a_splice_cut_by_a_full_disk_is_truncated_and_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    failures = {"left": 2}

    def failing_write(fd: int, data: memoryview) -> int:
        if failures["left"]:
            failures["left"] -= 1
            real_write(fd, bytes(data[: len(data) // 2]))  # half of the splice record reaches the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    history = History({"role": "user", "content": f"m{number} " * 50} for number in range(40))
    log = SessionLog.create(tmp_path, {"model": "offline"})
    log.replace(history, "resume")
    await log.flush()
    monkeypatch.setattr(session_module, "_write_chunk", failing_write)
    change = Splice(5, 30, ({"role": "user", "content": "[30 messages archived at .transcripts/t.jsonl]"},))
    before = list(history)
    history.apply((change,))
    log.change((change,), history, "snip_compact")
    await log.flush()
    assert log.error is not None and "No space left" in log.error
    assert SessionLog.load(log.path) == before  # the cut record is skipped: the history as it was before it
    history.append({"role": "assistant", "content": "after the disk was freed"})
    log.message(history[-1])
    await log.close()
    assert log.error is None
    assert all(json.loads(line) for line in log.path.read_text(encoding="utf-8").splitlines())
    assert SessionLog.load(log.path) == history
