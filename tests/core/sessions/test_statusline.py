"""`ctxtui statusline`: one safe line for Claude Code, read incrementally from its transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.sessions import statusline as sl

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _stamp(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")


def _call(uuid: str, seconds_ago: float, read: int, write: int = 0, one_hour: int = 0, **extra: Any) -> dict:
    usage: dict[str, Any] = {
        "input_tokens": 5,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }
    if one_hour:
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": one_hour}
    return {
        "type": "assistant",
        "uuid": uuid,
        "timestamp": _stamp(seconds_ago),
        "message": {
            "id": uuid,
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "usage": usage,
        },
        **extra,
    }


def _boundary(seconds_ago: float, pre: int) -> dict:
    return {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b",
        "parentUuid": None,
        "timestamp": _stamp(seconds_ago),
        "compactMetadata": {"trigger": "auto", "preTokens": pre},
    }


def _write(path: Path, records: list[dict], mode: str = "w") -> None:
    with path.open(mode) as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def _status(tmp_path: Path, transcript: Path, **extra: Any) -> bytes:
    return json.dumps(
        {
            "transcript_path": str(transcript),
            "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
            "workspace": {"current_dir": str(tmp_path), "project_dir": str(tmp_path)},
            **extra,
        }
    ).encode()


def _line(tmp_path: Path, transcript: Path, **extra: Any) -> str:
    return sl.statusline(_status(tmp_path, transcript, **extra), now=NOW.timestamp())


def test_context_cache_and_compaction(tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    _write(
        transcript,
        [
            _call("a1", 900, 150_000, 2_000),
            _boundary(600, 152_005),
            {
                "type": "user",
                "uuid": "u",
                "isCompactSummary": True,
                "message": {"role": "user", "content": "x"},
            },
            _call("a2", 100, 0, 28_000),
            _call("side", 10, 190_000, isSidechain=True),  # a sub-agent's context is not the main one
        ],
    )
    line = _line(tmp_path, transcript, cost={"total_cost_usd": 1.234})
    assert (
        line
        == "Sonnet 4.5 · ctx 28k/200k 14% · cache warm 3:20 left (5m) · compacted 10m ago auto 152k→28k · $1.23"
    )


def test_one_hour_writes_and_a_cold_cache(tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    _write(transcript, [_call("a1", 1200, 10_000, 500, one_hour=500)])
    assert "cache warm 40:00 left (1h)" in _line(tmp_path, transcript)
    _write(transcript, [_call("a1", 1200, 10_000, 500)])
    assert "cache cold (5m TTL)" in _line(tmp_path, transcript)


def test_the_window_claude_code_gives_wins(tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    _write(transcript, [_call("a1", 10, 100_000)])
    assert "ctx 100k/1M 10%" in _line(tmp_path, transcript, context_window={"context_window_size": 1_000_000})


def test_incremental_reads_use_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = tmp_path / "s.jsonl"
    _write(transcript, [_call("a1", 100, 10_000)])
    assert "ctx 10k/200k" in _line(tmp_path, transcript)
    cached = list((tmp_path / ".ctxtui" / "statusline").iterdir())
    assert len(cached) == 1
    first_size = transcript.stat().st_size
    read: list[int] = []
    original = sl.read_lines
    monkeypatch.setattr(
        sl, "read_lines", lambda figures, data: read.append(len(data)) or original(figures, data)
    )
    _line(tmp_path, transcript)
    assert read == []  # unchanged: nothing read
    _write(transcript, [_boundary(50, 12_000), _call("a2", 20, 3_000)], mode="a")
    line = _line(tmp_path, transcript)
    assert read == [transcript.stat().st_size - first_size]  # only the appended bytes
    assert "ctx 3k/200k" in line and "12k→3k" in line


def test_a_rewritten_transcript_is_read_again(tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    _write(transcript, [_call("a1", 100, 50_000), _call("a2", 90, 60_000)])
    assert "ctx 60k" in _line(tmp_path, transcript)
    _write(transcript, [_call("a3", 10, 7_000)])  # shorter: another file
    assert "ctx 7k" in _line(tmp_path, transcript)


def test_a_huge_transcript_is_read_from_its_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sl, "FIRST_READ_BYTES", 2_000)
    transcript = tmp_path / "s.jsonl"
    _write(transcript, [_call(f"a{index}", 100, 1_000 * index) for index in range(1, 40)])
    line = _line(tmp_path, transcript)
    assert "ctx 39k" in line and "no compaction" not in line  # the start was never read


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b"{}",
        b'{"transcript_path": 7, "model": "x", "cost": [], "workspace": 3}',
        b'{"transcript_path": "/no/such/file"}',
        b'{"transcript_path": "/dev/zero"}',
        b'{"model": {"display_name": {"x": 1}}, "context_window": {"context_window_size": -1}}',
        b"{" * 100_000,
    ],
)
def test_any_input_gives_one_short_line(raw: bytes) -> None:
    line = sl.statusline(raw)
    assert line and "\n" not in line and len(line) <= 120


def test_binary_and_hostile_transcripts(tmp_path: Path) -> None:
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(os.urandom(5000) + b"\n\x00\xff")
    assert _line(tmp_path, binary).startswith("Sonnet 4.5 · ctx -")
    hostile = tmp_path / "h.jsonl"
    record = _call("a1", 10, 1_000)
    record["message"]["model"] = "evil\x1b]52;c;AAAA\x07\nmodel"
    _write(hostile, [record])
    status = json.dumps(
        {
            "transcript_path": str(hostile),
            "model": {"display_name": "\x1b[2J\u202eName\r"},
            "cwd": str(tmp_path),
        }
    ).encode()
    line = sl.statusline(status, now=NOW.timestamp())
    assert not any(ord(char) < 32 or 0x7F <= ord(char) <= 0x9F or char == "\u202e" for char in line)
    assert "\\x1b[2J" in line


def test_the_line_fits_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = tmp_path / "s.jsonl"
    _write(transcript, [_call("a1", 900, 150_000), _boundary(600, 152_005), _call("a2", 100, 28_000)])
    for columns in (20, 40, 60, 80):
        monkeypatch.setenv("COLUMNS", str(columns))
        line = _line(tmp_path, transcript, cost={"total_cost_usd": 1.0})
        assert len(line) <= columns, line


def test_the_cache_stays_inside_the_workdir(tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    _write(transcript, [_call("a1", 10, 1_000)])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / ".ctxtui").symlink_to(elsewhere)  # a planted link is refused, not followed
    status = json.dumps(
        {"transcript_path": str(transcript), "workspace": {"project_dir": str(workdir)}}
    ).encode()
    assert "ctx 1k" in sl.statusline(status, now=NOW.timestamp())
    assert list(elsewhere.iterdir()) == []


@pytest.mark.slow
def test_the_command_exits_0_on_bad_input(tmp_path: Path) -> None:
    for raw in (b"", b"\xff\xfe", b'{"transcript_path": "/dev/zero"}'):
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from tui.cli import main; sys.exit(main(['statusline']))"],
            input=raw,
            capture_output=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout.count(b"\n") == 1
