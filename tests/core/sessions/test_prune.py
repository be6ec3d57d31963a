"""`ctxtui sessions --prune`: old session logs go, and the archive files no remaining session needs, and
never a file a kept session can still restore (its markers, its ledger, its undo records, and what the
archive files it names name in turn). What it frees is printed: files and bytes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.archive import TOOL_RESULTS_DIR, TRANSCRIPTS_DIR, Archive
from core.compaction import CompactionSettings
from core.config import Settings
from core.markers import parse_marker, placeholder, snip_marker
from core.sessions.log import SESSIONS_DIR, SessionLog
from tests.support.cli import ctxtui, env_without_key

COMPACTION = CompactionSettings(context_char_limit=10_000, snip_trigger_messages=14, snip_target_messages=8)
DAY = 86_400


def archive_files(workdir: Path) -> dict[str, int]:
    """Every archive file (workdir-relative) and its size."""
    found = {}
    for folder in (TOOL_RESULTS_DIR, TRANSCRIPTS_DIR):
        for path in (workdir / folder).glob("*"):
            if path.is_file() and not path.name.startswith("."):
                found[f"{folder}/{path.name}"] = path.stat().st_size
    return found


def sessions_of(workdir: Path) -> list[Path]:
    return sorted((workdir / ".ctxtui" / SESSIONS_DIR).glob("session_*.jsonl"))


SESSION_SCRIPT = """
import asyncio, sys
from pathlib import Path
from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings

async def main(workdir, prefix, turns):
    compaction = CompactionSettings(context_char_limit=10_000, snip_trigger_messages=14,
                                    snip_target_messages=8)  # COMPACTION
    agent = Agent.from_settings(Settings(workdir=Path(workdir), offline=True, compaction=compaction))
    try:
        for turn in range(turns):
            async for _ in agent.run_turn(f"read {prefix}{turn % 6}.txt"):
                pass
        print(agent.session.path)
    finally:
        await agent.aclose()

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def run_session(workdir: Path, prefix: str, turns: int) -> Path:
    """A real offline session, in a process of its own that has ended (as a session a person quit), whose
    compactions archive tool results and transcripts; returns its log."""
    done = subprocess.run([sys.executable, "-c", SESSION_SCRIPT, str(workdir), prefix, str(turns)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[3])
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def markers_of(messages: list[Any]) -> set[str]:
    """The archive paths the markers of a history name."""
    paths = set()
    for message in messages:
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            text = block.get("text") if block.get("type") == "text" else block.get("content")
            marker = parse_marker(text)
            if marker is not None and marker.path:
                paths.add(marker.path)
    return paths


async def test_prune_removes_old_sessions_and_what_only_they_needed(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    for number in range(6):
        (workdir / f"old{number}.txt").write_text(f"old file {number}: " + "lorem ipsum dolor " * 200)
        (workdir / f"new{number}.txt").write_text(f"new file {number}: " + "sit amet consectetur " * 200)
    old = run_session(workdir, "old", 14)
    only_old = set(archive_files(workdir))
    os.utime(old, (time.time() - 40 * DAY, time.time() - 40 * DAY))
    new = run_session(workdir, "new", 14)
    orphan = workdir / TOOL_RESULTS_DIR / "toolu_orphan.txt"  # a result whose compaction never landed
    orphan.write_text("nobody names me")
    os.utime(orphan, (time.time() - 2 * DAY, time.time() - 2 * DAY))
    before = archive_files(workdir)
    old_size = old.stat().st_size
    assert only_old and only_old < set(before)

    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    dry = ctxtui("sessions", "--prune", "--older-than", "30", "--dry-run", "--workdir", str(workdir), env=env)
    assert dry.returncode == 0, dry.stderr
    assert archive_files(workdir) == before and sessions_of(workdir) == sorted([old, new])
    result = ctxtui("sessions", "--prune", "--older-than", "30", "--workdir", str(workdir), env=env)
    assert result.returncode == 0, result.stderr
    assert sessions_of(workdir) == [new]
    after = archive_files(workdir)
    removed = set(before) - set(after)
    orphan_path = f"{TOOL_RESULTS_DIR}/toolu_orphan.txt"
    assert orphan_path in removed and removed <= only_old | {orphan_path}
    assert removed & only_old  # what only the old session needed is gone

    # Everything the kept session can restore is still there, vouched for.
    resumed = Agent.from_settings(Settings(workdir=workdir, offline=True, compaction=COMPACTION, resume=True,
                                           undo_depth=20))
    try:
        named = markers_of(resumed.messages) | {entry.path for entry in resumed.ledger if entry.path}
        assert named and named <= set(after)
        assert all(resumed.archive.is_own(path) for path in named)
        for path in named:
            if path.startswith(TRANSCRIPTS_DIR):
                assert markers_of(await resumed.archive.read_transcript(path)) <= set(after)
        undone = 0
        while await resumed.undo_compaction():  # every undo record's history comes back
            undone += 1
            assert markers_of(resumed.messages) <= set(after)
        assert undone
    finally:
        await resumed.aclose()

    # What it frees is printed: each file with its size, then the totals.
    sizes = {**{path: before[path] for path in removed}, old.relative_to(workdir).as_posix(): old_size}
    lines = result.stdout.splitlines()
    assert sorted(lines[:-1]) == sorted(f"removed {path} ({size:,} bytes)" for path, size in sizes.items())
    assert lines[-1] == (f"freed {len(sizes)} files, {sum(sizes.values()):,} bytes: 1 session and "
                         f"{len(removed)} archive files (kept 1 session)")
    assert [line.replace("would remove", "removed") for line in dry.stdout.splitlines()[:-1]] == lines[:-1]
    assert dry.stdout.splitlines()[-1] == lines[-1].replace("freed", "would free")


def write_log(workdir: Path, name: str, records: list[dict[str, Any]], age_days: float) -> Path:
    path = workdir / ".ctxtui" / SESSIONS_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    stamp = time.time() - age_days * DAY
    os.utime(path, (stamp, stamp))
    return path


def put(workdir: Path, relative: str, text: str, age_days: float = 5) -> str:
    path = workdir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    stamp = time.time() - age_days * DAY
    os.utime(path, (stamp, stamp))
    return relative


def conversation(*texts: str) -> list[dict[str, Any]]:
    roles = ("user", "assistant")
    return [{"type": "message", "message": {"role": roles[index % 2], "content": text}}
            for index, text in enumerate(texts)]


def test_a_file_named_only_through_another_archive_file_stays(tmp_path: Path) -> None:
    """A transcript's messages name a result; a result names a bash spill: both stay with the session."""
    spill = put(tmp_path, f"{TOOL_RESULTS_DIR}/bash-20250101-000000-abcd1234.txt", "the whole output")
    inner = put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_inner.txt", f"head ... full output saved to {spill}")
    transcript = put(tmp_path, f"{TRANSCRIPTS_DIR}/transcript_20250101-000000-1-0001-aaaaaaaa.jsonl",
                     json.dumps({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                              "content": placeholder(inner)}]}) + "\n")
    ledger = put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_ledger.txt", "dropped by hand")
    gone = put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_gone.txt", "named by nobody")
    write_log(tmp_path, "session_20250101-000000-1-abcdef.jsonl", [
        {"type": "meta", "created": 1.0},
        *conversation("go", "ok", snip_marker(12, transcript)),
        {"type": "event", "kind": "LedgerChanged", "event": {"start": 0, "added": [
            {"step": "drop", "call": 1, "kind": "tool_result", "label": "x", "chars": 5, "tokens": None,
             "path": ledger, "restorable": True}], "returned": [], "how": None}},
    ], age_days=1)
    result = ctxtui("sessions", "--prune", "--workdir", str(tmp_path), "--output-format", "json",
                    env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [row["path"] for row in report["removed"]] == [gone] and report["files"] == 1
    assert report["bytes"] == len("named by nobody") and report["kept_sessions"] == 1
    assert all((tmp_path / path).exists() for path in (spill, inner, transcript, ledger))


def now_stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def test_keep_keeps_the_newest_sessions_and_a_running_one_is_never_removed(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        running = write_log(tmp_path, f"session_{now_stamp()}-{sleeper.pid}-abcdef.jsonl",
                            conversation("running"), age_days=50)
        named_by_old = put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_old.txt", "an old session's", age_days=40)
        old = write_log(tmp_path, "session_20250102-000000-1-aaaaaa.jsonl",
                        conversation("old", placeholder(named_by_old)), age_days=40)
        newest = write_log(tmp_path, "session_20250103-000000-1-bbbbbb.jsonl", conversation("newest"),
                           age_days=0)
        fresh = put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_fresh.txt", "written since it started", age_days=0)
        stale = put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_stale.txt", "named by nobody", age_days=9_000)
        env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
        result = ctxtui("sessions", "--prune", "--keep", "1", "--workdir", str(tmp_path), env=env)
        assert result.returncode == 0, result.stderr
        assert sessions_of(tmp_path) == sorted([running, newest])
        assert not old.exists() and not (tmp_path / stale).exists()
        # While a session runs, a file any log named, or one written since it started, stays.
        assert (tmp_path / named_by_old).exists() and (tmp_path / fresh).exists()
        assert result.stdout.splitlines()[-1].endswith("(kept 2 sessions, 1 of them running)")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_pid_given_again_to_a_later_process_is_not_a_running_session(tmp_path: Path) -> None:
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        name = f"session_20250101-000000-{later.pid}-abcdef.jsonl"  # made long before `later` started
        ended = write_log(tmp_path, name, conversation("x"), 40)
        result = ctxtui("sessions", "--prune", "--older-than", "30", "--workdir", str(tmp_path),
                        env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
        assert result.returncode == 0, result.stderr
        assert not ended.exists() and "running" not in result.stdout
    finally:
        later.kill()
        later.wait()


def test_without_a_policy_only_files_nobody_names_go(tmp_path: Path) -> None:
    named = put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_named.txt", "named")
    put(tmp_path, f"{TOOL_RESULTS_DIR}/toolu_unnamed.txt", "unnamed")
    session = write_log(tmp_path, "session_20250101-000000-1-abcdef.jsonl",
                        conversation("x", placeholder(named)), age_days=500)
    result = ctxtui("sessions", "--prune", "--workdir", str(tmp_path),
                    env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert session.exists() and (tmp_path / named).exists()
    assert result.stdout.splitlines() == [
        f"removed {TOOL_RESULTS_DIR}/toolu_unnamed.txt (7 bytes)",
        "freed 1 file, 7 bytes: 0 sessions and 1 archive file (kept 1 session)"]


def test_an_archive_folder_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "toolu_x.txt").write_text("not ctxtui's to remove")
    workdir = tmp_path / "work"
    (workdir / ".task_outputs").mkdir(parents=True)
    (workdir / TOOL_RESULTS_DIR).symlink_to(outside)
    result = ctxtui("sessions", "--prune", "--workdir", str(workdir),
                    env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 1 and "symlink" in result.stderr
    assert (outside / "toolu_x.txt").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--keep", "2"], "--keep needs --prune"),
    (["--prune", "--keep", "-1"], "--keep takes a number of sessions from 0"),
    (["--prune", "--older-than", "nan"], "--older-than takes a number of days from 0"),
])
def test_prune_flags_are_checked(tmp_path: Path, args: list[str], message: str) -> None:
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    result = ctxtui("sessions", *args, "--workdir", str(tmp_path), env=env)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1


def test_the_archive_still_reads_a_workdir_after_a_prune(tmp_path: Path) -> None:
    """The manifest keeps the lines of removed files; the files that stay are still vouched for."""
    archive = Archive(tmp_path)
    kept, dropped = asyncio.run(archive.save_tool_results([("toolu_kept", "kept"), ("toolu_dropped", "x")]))
    write_log(tmp_path, "session_20250101-000000-1-abcdef.jsonl", conversation("x", placeholder(kept)), 1)
    result = ctxtui("sessions", "--prune", "--workdir", str(tmp_path),
                    env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / dropped).exists()
    fresh = Archive(tmp_path)
    assert fresh.is_own(kept, "toolu_kept") and not fresh.is_own(dropped)
    assert SessionLog.load(sessions_of(tmp_path)[0])[1]["content"] == placeholder(kept)
