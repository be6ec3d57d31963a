"""Hostile session and inspect files: a bad line costs that line only.

- a line nested deeper than any history (RecursionError in json, or deeper than the reader takes)
  is skipped, in a session file and in a file given to `ctxtui inspect`;
- only regular files are read: a FIFO or a symlink to /dev/zero among the session files does not
  hang or exhaust `ctxtui sessions` or `--resume` (they run in a subprocess with a memory cap and a
  timeout, so a regression fails instead of taking the machine down);
- a line longer than the bound is dropped as it is read, never held whole;
- a `created` stamp that is not a finite, showable time falls back to the file's time, and
  `ctxtui sessions --output-format json` is strict JSON.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import core.jsonlines as jsonlines
from core.sessions.inspection import InspectError, load_file
from core.sessions.listing import list_sessions
from core.sessions.log import SessionLog
from tests.support.cli import command, env_without_key

DEEP = 100_000  # far past the interpreter's recursion limit


def session_lines(*records: Any) -> str:
    return "".join((record if isinstance(record, str) else json.dumps(record)) + "\n" for record in records)


def message(text: str, role: str = "user") -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": text}}


def write_session(folder: Path, name: str, *records: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session_{name}.jsonl"
    path.write_text(session_lines(*records), encoding="utf-8")
    return path


def capped(*args: str, workdir: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real `ctxtui` with at most 2 GiB of address space (a reader of /dev/zero dies, not the machine)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    return subprocess.run([*command(), *args, "--workdir", str(workdir)], env=env_without_key(),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          preexec_fn=limit)


# --------------------------------------------------------------------------- nesting


@pytest.mark.parametrize("depth", [DEEP, 500], ids=["past-recursion-limit", "past-reader-bound"])
def test_a_deeply_nested_session_line_costs_that_line_only(tmp_path: Path, depth: int) -> None:
    nested = '{"type": "message", "message": {"role": "user", "content": ' + "[" * depth + "]" * depth + "}}"
    path = write_session(tmp_path, "x", {"type": "meta", "created": 1.0}, message("before"), nested,
                         message("reply", "assistant"), message("after"))

    replay = SessionLog.replay(path)

    assert [m["content"] for m in replay.messages] == ["before", "reply", "after"]
    assert replay.skipped == 1


def test_inspect_refuses_a_deeply_nested_json_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * DEEP + "]" * DEEP)
    with pytest.raises(InspectError, match="nested") as refused:
        load_file(path)
    assert "\n" not in str(refused.value)

    done = capped("inspect", str(path), "--report", workdir=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("deep.json: not valid JSON: nested too deep")


def test_inspect_skips_a_deeply_nested_line_of_a_transcript(tmp_path: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    path.write_text(session_lines({"role": "user", "content": "hello"}, "[" * DEEP + "]" * DEEP,
                                  {"role": "assistant", "content": "hi"}))
    inspected = load_file(path)
    assert [m["content"] for m in inspected.messages] == ["hello", "hi"] and inspected.skipped == 1


# --------------------------------------------------------------------------- only regular files


@pytest.fixture
def hostile_sessions(tmp_path: Path) -> Path:
    """A workdir whose sessions folder holds a good session, a FIFO and a symlink to /dev/zero,
    each named like a session file and newer than the good one."""
    folder = tmp_path / ".ctxtui" / "sessions"
    good = write_session(folder, "20240101-000000-1-aaaaaa", {"type": "meta", "created": 1_700_000_000.0},
                         message("the good one"), message("fine", "assistant"))
    os.utime(good, (1_700_000_000, 1_700_000_000))
    os.mkfifo(folder / "session_20990101-000000-2-bbbbbb.jsonl")
    os.symlink("/dev/zero", folder / "session_20990101-000000-3-cccccc.jsonl")
    return tmp_path


def test_sessions_lists_only_regular_files(hostile_sessions: Path) -> None:
    done = capped("sessions", "--output-format", "json", workdir=hostile_sessions)
    assert done.returncode == 0, done.stderr
    assert [row["first_request"] for row in json.loads(done.stdout)] == ["the good one"]


def test_resume_passes_over_a_fifo_and_dev_zero(hostile_sessions: Path) -> None:
    done = capped("--resume", "-p", "help", workdir=hostile_sessions)
    assert done.returncode == 0, done.stderr
    assert "resumed" not in done.stdout
    for name in ("20990101-000000-2-bbbbbb", "20990101-000000-3-cccccc"):  # named: refused, not read
        named = capped("--resume", name, "-p", "help", workdir=hostile_sessions)
        assert named.returncode == 2 and "no such session" in named.stderr


def test_inspect_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InspectError, match="not a regular file"):
        load_file(fifo)


# --------------------------------------------------------------------------- bounded lines


def test_an_overlong_line_is_dropped_as_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", 1024**2)
    folder = tmp_path / "sessions"
    path = write_session(folder, "x", {"type": "meta", "created": 1.0}, message("before"))
    with path.open("ab") as handle:
        handle.write(b'{"type": "message", "message": {"role": "user", "content": "')
        handle.write(b"x" * (64 * 1024**2))
        handle.write(b'"}}\n')
        handle.write(session_lines(message("reply", "assistant"), message("after")).encode())

    tracemalloc.start()
    try:
        replay = SessionLog.replay(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert [m["content"] for m in replay.messages] == ["before", "reply", "after"] and replay.skipped == 1
    assert peak < 16 * 1024**2  # the 64 MiB line was never held


# --------------------------------------------------------------------------- stamps


BAD_CREATED = ["NaN", "Infinity", "-Infinity", "1e300", "1e999", str(10**400), "-5", "true", '"yesterday"', "null"]


def test_a_bad_created_stamp_falls_back_to_the_files_time(tmp_path: Path) -> None:
    folder = tmp_path / ".ctxtui" / "sessions"
    for number, created in enumerate(BAD_CREATED):
        path = write_session(folder, f"2024010{number}-000000-1-{number:06d}", '{"type": "meta", "created": ' + created + "}",
                             message(f"request {number}"))
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))

    infos = list_sessions(tmp_path / ".ctxtui")

    assert len(infos) == len(BAD_CREATED)
    assert all(info.started == info.last_active == info.path.stat().st_mtime for info in infos)

    text = capped("sessions", workdir=tmp_path)
    assert text.returncode == 0 and text.stdout.count("request ") == len(BAD_CREATED), text.stderr
    done = capped("sessions", "--output-format", "json", workdir=tmp_path)
    assert done.returncode == 0, done.stderr

    def refuse(constant: str) -> Any:
        raise AssertionError(f"not strict JSON: {constant}")

    rows = json.loads(done.stdout, parse_constant=refuse)
    assert all(math.isfinite(row["started"]) for row in rows) and len(rows) == len(BAD_CREATED)
