"""Sessions that cannot lose data: crash-safe appends, validated loads, the right session resumed."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.sessions.log as session_module
from core.agent import Agent
from core.config import Settings
from core.history import pairing_problems
from core.history.messages import repair_pairing
from core.sessions.listing import latest_session, list_sessions
from core.sessions.log import SessionLog, valid_message

USE = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.txt"}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "alpha"}


def conversation(tag: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"question {tag}"},
        {"role": "assistant", "content": [{"type": "text", "text": "reading"}, USE]},
        {"role": "user", "content": [RESULT]},
        {"role": "assistant", "content": [{"type": "text", "text": f"answer {tag}"}]},
    ]


async def write_session(state_dir: Path, messages: list[dict[str, Any]], mtime: float | None = None) -> Path:
    """A session file as SessionLog writes it; without messages, the meta line alone (as older versions left
    one for every start: SessionLog itself writes no file for a session without history)."""
    log = SessionLog.create(state_dir, {"model": "offline"})
    for message in messages:
        log.message(message)
    await log.close()
    if not messages:
        log.path.parent.mkdir(parents=True, exist_ok=True)
        log.path.write_text(json.dumps({"type": "meta", "created": 1.0, "model": "offline"}) + "\n", encoding="utf-8")
    if mtime is not None:
        os.utime(log.path, (mtime, mtime))
    return log.path


# --------------------------------------------------------------------------- writing


async def test_a_short_write_is_truncated_before_the_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk cuts a write in the middle of a line; the retry must not glue its lines to the fragment."""
    real_write = os.write
    failures = {"left": 2}  # the writer's attempt and flush's retry both fail

    def failing_write(fd: int, data: memoryview) -> int:
        if failures["left"]:
            failures["left"] -= 1
            real_write(fd, bytes(data[: len(data) // 2]))  # half of it reaches the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    log = SessionLog.create(tmp_path, {"model": "offline"})
    await log.flush()
    monkeypatch.setattr(session_module, "_write_chunk", failing_write)
    messages = conversation("one")
    for message in messages[:2]:
        log.message(message)
    await log.flush()
    assert log.error is not None and "No space left" in log.error
    for message in messages[2:]:
        log.message(message)
    await log.flush()
    assert log.error is None
    lines = log.path.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line) for line in lines)  # no glued or cut line
    assert SessionLog.load(log.path) == messages


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB tmpfs (a disk that really fills up), or a skip where the machine does not allow it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount(8) for a tmpfs that fills up")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
                             capture_output=True, timeout=10)
    if mounted.returncode != 0:
        pytest.skip(f"mount -t tmpfs is not allowed here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield disk
    finally:
        done = subprocess.run(["umount", str(disk)], capture_output=True, timeout=10)
        if done.returncode != 0:  # something still holds a descriptor on the disk: a leak to report
            subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=10)
            pytest.fail(f"the tmpfs could not be unmounted: {done.stderr.decode(errors='replace').strip()}")


async def test_a_full_tmpfs_loses_no_record(small_tmpfs: Path) -> None:
    disk = small_tmpfs
    log = SessionLog.create(disk, {"model": "offline"})
    await log.flush()
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)  # fill the disk, then free a few KB
    try:
        with pytest.raises(OSError):
            while True:
                os.write(fd, b"x" * 4096)
    finally:
        os.close(fd)
    os.truncate(filler, max(filler.stat().st_size - 3000, 0))
    big = [{"role": "user", "content": f"request {n} " + "y" * 900} for n in range(8)]
    for message in big:
        log.message(message)
    await log.flush()
    assert log.error is not None  # it did not fit
    filler.unlink()
    log.message({"role": "assistant", "content": [{"type": "text", "text": "after the disk was freed"}]})
    await log.flush()
    assert log.error is None
    for line in log.path.read_text(encoding="utf-8").splitlines():
        json.loads(line)
    assert SessionLog.load(log.path)[: len(big)] == big


def whole_records(path: Path) -> list[Any]:
    """Every line of a session file as JSON; fails on a cut or glued line."""
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), data[-80:]
    return [json.loads(line) for line in data.splitlines()]


async def test_a_record_cut_by_a_full_tmpfs_does_not_stay_in_the_file(small_tmpfs: Path) -> None:
    """No retry comes (the session ends on the full disk): the file still holds whole records only, and
    the log says what it could not save."""
    disk = small_tmpfs
    log = SessionLog.create(disk, {"model": "offline"})
    first = {"role": "user", "content": "the first request"}
    log.message(first)
    await log.flush()
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with pytest.raises(OSError):
            while True:
                os.write(fd, b"x" * 4096)
    finally:
        os.close(fd)
    os.truncate(filler, max(filler.stat().st_size - 3000, 0))  # room for part of the next write only
    for number in range(8):
        log.message({"role": "assistant" if number % 2 else "user", "content": f"reply {number} " + "z" * 900})
    await log.close()
    assert log.error is not None and "No space left" in log.error
    records = whole_records(log.path)
    assert [record["message"] for record in records if record["type"] == "message"] == [first]
    failure = log.failure()
    assert failure is not None and "not saved: 8 changes of the history (" in failure and "\n" not in failure


async def test_a_record_cut_by_a_failed_write_does_not_stay_in_the_file(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through the write seam, where no tmpfs can be mounted."""
    real_write = os.write

    def half_then_full(fd: int, data: memoryview) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    log = SessionLog.create(tmp_path, {"model": "offline"})
    log.message({"role": "user", "content": "kept"})
    await log.flush()
    monkeypatch.setattr(session_module, "_write_chunk", half_then_full)
    log.message({"role": "assistant", "content": "lost " * 100})
    log.pins(["toolu_1"])
    await log.close()
    assert [record["type"] for record in whole_records(log.path)] == ["meta", "message"]
    assert log.failure() is not None and "not saved: 1 change of the history and 1 other record" in str(log.failure())


def test_headless_says_on_stderr_what_the_full_disk_kept_from_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import tui.cli

    def full(fd: int, data: memoryview) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(session_module, "_write_chunk", full)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert tui.cli.main(["-p", "help", "--offline", "--workdir", str(tmp_path)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "not saved completely" in line]
    assert len(lines) == 1 and "No space left on device; not saved: 2 changes of the history" in lines[0], lines
    for path in (tmp_path / ".ctxtui" / "sessions").glob("*.jsonl"):
        assert whole_records(path) == []


async def test_session_files_are_private(tmp_path: Path) -> None:
    path = await write_session(tmp_path / ".ctxtui", conversation("p"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / ".ctxtui").stat().st_mode) == 0o700


# --------------------------------------------------------------------------- loading


async def test_records_of_the_wrong_shape_are_skipped_and_pairing_repaired(tmp_path: Path) -> None:
    good = conversation("g")
    path = await write_session(tmp_path, [])
    bad_records = [
        {"type": "message", "message": "not a dict"},
        {"type": "message", "message": {"role": "system", "content": "x"}},
        {"type": "message", "message": {"role": "user", "content": 42}},
        {"type": "message", "message": {"role": "user", "content": [{"type": "bogus"}]}},
        {"type": "message", "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "x"}]}},
        {"type": "replace", "messages": "nope"},
        ["a", "list"],
    ]
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "message", "message": good[0]}) + "\n")
        for record in bad_records:
            handle.write(json.dumps(record) + "\n")
        # the assistant line with the tool_use is lost; its result stays
        handle.write(json.dumps({"type": "message", "message": good[2]}) + "\n")
        handle.write(json.dumps({"type": "message", "message": good[3]}) + "\n")
    replay = SessionLog.replay(path)
    assert replay.messages == [good[0], good[3]]
    assert replay.skipped == len(bad_records) - 1 + 1  # the replace with bad messages also counts
    assert pairing_problems(replay.messages) == []


def test_repair_pairing_drops_orphan_results_and_answers_open_calls() -> None:
    other = {"type": "tool_result", "tool_use_id": "ghost", "content": "x"}
    broken = [
        {"role": "user", "content": "go"},
        {"role": "user", "content": [other]},  # nothing asked for it
        {"role": "assistant", "content": [USE]},
        {"role": "user", "content": [RESULT, other]},
    ]
    repaired = repair_pairing(broken)
    assert repaired == [broken[0], broken[2], {"role": "user", "content": [RESULT]}]
    assert broken[3]["content"] == [RESULT, other]  # input untouched


block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.sampled_from(["a", "b", "c"]),
                           "name": st.just("bash"), "input": st.just({})}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": st.sampled_from(["a", "b", "c", "z"]),
                           "content": st.text(max_size=5)}),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
message = st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "system"]),
    "content": st.one_of(st.text(max_size=5), st.lists(block, max_size=3), st.integers()),
})
record = st.one_of(
    st.fixed_dictionaries({"type": st.just("message"), "message": st.one_of(message, st.text(max_size=3))}),
    st.fixed_dictionaries({"type": st.just("replace"), "messages": st.lists(message, max_size=4)}),
    st.just("garbage line {"),
)


@settings(max_examples=80, deadline=None)
@given(records=st.lists(record, max_size=25))
def test_any_session_file_replays_to_an_api_valid_history(records: list[Any], tmp_path_factory: Any) -> None:
    path = tmp_path_factory.mktemp("replay") / f"session_{uuid.uuid4().hex}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for item in records:
            handle.write((item if isinstance(item, str) else json.dumps(item)) + "\n")
    messages = SessionLog.load(path)
    assert all(valid_message(item) for item in messages)
    assert pairing_problems(messages) == []


# --------------------------------------------------------------------------- choosing what to resume


async def test_resume_takes_the_newest_session_that_replays_to_a_valid_history(tmp_path: Path) -> None:
    state = tmp_path / ".ctxtui"
    good = await write_session(state, conversation("old"), mtime=1_000_000)
    newer_empty = await write_session(state, [], mtime=2_000_000)  # only its meta line
    cut = state / "sessions" / "session_29990101-000000-1-abcdef.jsonl"
    cut.write_text('{"type": "meta", "created": 3}\n{"type": "replace", "messages": [{"role": "us', encoding="utf-8")
    os.utime(cut, (3_000_000, 3_000_000))
    infos = list_sessions(state)
    assert [info.path for info in infos] == [cut, newer_empty, good]  # newest first
    assert [info.resumable for info in infos] == [False, False, True]
    assert latest_session(state) == good
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, resume=True))
    try:
        assert agent.messages == conversation("old")
        assert agent.resumed_from == str(good)
    finally:
        await agent.aclose()


async def test_resume_by_id_takes_that_session(tmp_path: Path) -> None:
    state = tmp_path / ".ctxtui"
    first = await write_session(state, conversation("first"), mtime=1_000_000)
    await write_session(state, conversation("second"), mtime=2_000_000)
    info = next(info for info in list_sessions(state) if info.path == first)
    assert info.first_request == "question first" and info.messages == 4
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, resume=True, resume_id=info.id))
    try:
        assert agent.messages == conversation("first")
    finally:
        await agent.aclose()
