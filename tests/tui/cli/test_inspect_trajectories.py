"""`ctxtui inspect FILE` on another agent's trajectory (a real mini-swe-agent run, gzipped or not):
`--report`, `--ledger --facts` and `--compare` with `--output-format json`, the text forms, and a
damaged file of every kind answered with exactly one line on stderr and exit 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from core.trajectories import read_trajectory
from tests.support.cli import clean_cli_env, ctxtui, env_without_key, run_main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories" / "swe-agent"
NAMES = sorted(path.name for path in FIXTURES.glob("*.traj.json.gz"))
COMPARE_KEYS = {"engine", "calls", "peak_tokens", "input_tokens", "cache_read_tokens", "cache_write_tokens", "cost",
                "summaries", "facts_not_visible"}
FACT_KEYS = {"kind", "text", "source", "visible", "path"}


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_cli_env(tmp_path / "config", monkeypatch)


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_main(capsys, "inspect", *args)


def inspect_json(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> dict[str, Any]:
    code, out, err = inspect(capsys, str(path), *flags, "--output-format", "json")
    assert code == 0, err
    assert err == ""
    data: dict[str, Any] = json.loads(out)
    return data


def history(path: Path) -> list[dict[str, Any]]:
    trajectory = read_trajectory(path)
    assert trajectory is not None
    return trajectory.messages


@pytest.fixture(params=["gzip", "plain"])
def fixture_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    source = FIXTURES / NAMES[0]
    if request.param == "gzip":
        return source
    target = tmp_path / NAMES[0].removesuffix(".gz")
    target.write_bytes(gzip.decompress(source.read_bytes()))
    return target


# --- --report -----------------------------------------------------------------------------------------------


def test_report_json(capsys: pytest.CaptureFixture[str], fixture_file: Path) -> None:
    data = inspect_json(capsys, fixture_file, "--report")
    messages = history(fixture_file)
    assert data["kind"] == "swe-agent"
    assert data["file"] == str(fixture_file)
    assert data["messages"] == len(messages)
    assert data["chars"] == len(json.dumps(messages, ensure_ascii=False))
    assert data["tokens"] > 0
    assert {"user", "assistant", "tool_use", "tool_result"} <= set(data["breakdown"])
    assert sum(data["breakdown"].values()) == data["chars"]  # the breakdown adds up exactly
    assert any(note.startswith("swe-agent trajectory: 36 model calls by deepseek-chat") for note in data["notes"])
    assert data["skipped_records"] == 0
    assert "steps" in data["dry_run"]


def test_report_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(capsys, str(FIXTURES / NAMES[0]), "--report")
    assert code == 0 and err == ""
    assert out.splitlines()[0] == f"{FIXTURES / NAMES[0]} (swe-agent)"
    assert "36 model calls by deepseek-chat" in out


# --- --ledger --facts ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_ledger_and_facts_json(capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = FIXTURES / name
    data = inspect_json(capsys, path, "--ledger", "--facts")
    assert data["kind"] == "swe-agent"
    assert data["ledger"] == []  # nothing was taken out of a trajectory's context: it has no compaction
    assert data["facts"], name
    messages = history(path)
    for fact in data["facts"]:
        assert set(fact) == FACT_KEYS
        assert fact["visible"] is True and fact["path"] is None  # the whole history is in view
        index = int(fact["source"].removeprefix("messages."))
        source = messages[index]
        if fact["kind"] == "constraint":
            assert source["role"] == "user" and index == 0  # the task is the one message a person typed
        elif fact["kind"] == "error":
            results = [block["content"] for block in source["content"] if block.get("type") == "tool_result"]
            assert any(fact["text"] in result for result in results), fact
    kinds = {fact["kind"] for fact in data["facts"]}
    assert "constraint" in kinds


def test_ledger_and_facts_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(capsys, str(FIXTURES / NAMES[2]), "--ledger", "--facts")
    assert code == 0 and err == ""
    assert "ledger: 0 item(s)" in out and "0 not visible" in out


# --- --compare -----------------------------------------------------------------------------------------------


def test_compare_json(capsys: pytest.CaptureFixture[str], fixture_file: Path) -> None:
    data = inspect_json(capsys, fixture_file, "--compare")
    assert data["kind"] == "swe-agent"
    assert data["model"] == "deepseek-chat"
    engines = [row["engine"] for row in data["engines"]]
    assert {"client", "client cache-aware", "server-clear", "server-compact"} <= set(engines)
    calls = sum(1 for message in history(fixture_file) if message["role"] == "assistant")
    for row in data["engines"]:
        assert COMPARE_KEYS <= set(row), row["engine"]
        assert row["calls"] == calls, row["engine"]
        assert row["peak_tokens"] > 0 and row["cost"] > 0
    client = next(row for row in data["engines"] if row["engine"] == "client")
    aware = next(row for row in data["engines"] if row["engine"] == "client cache-aware")
    assert client["peak_tokens"] < aware["peak_tokens"]  # the run passes the default 50,000-char limit


def test_compare_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    first = inspect_json(capsys, FIXTURES / NAMES[1], "--compare")
    second = inspect_json(capsys, FIXTURES / NAMES[1], "--compare")
    assert first == second


# --- damaged files: one line, exit 2 ----------------------------------------------------------------------


def damaged(tmp_path: Path) -> dict[str, Path]:
    raw = gzip.decompress((FIXTURES / NAMES[0]).read_bytes())
    packed = (FIXTURES / NAMES[0]).read_bytes()
    cases = {
        "truncated.traj.json": raw[: len(raw) // 2],
        "not-utf8.traj.json": raw[:1000] + b"\xff\xfe" + raw[1000:],
        "binary.traj.json": bytes(range(256)) * 64,
        "empty.traj.json": b"",
        "truncated.traj.json.gz": packed[: len(packed) // 2],
        "inner-truncated.traj.json.gz": gzip.compress(raw[: len(raw) // 2]),
        "binary.traj.json.gz": b"\x1f\x8b" + bytes(range(256)) * 8,
        "no-assistant.traj.json": json.dumps({"trajectory_format": "mini-swe-agent-1.1", "messages": [
            {"role": "system", "content": "S"}, {"role": "user", "content": "T"}]}).encode(),
        "jsonl-garbage.jsonl": b"not json\n\x00\x01\n",
    }
    paths = {}
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        paths[name] = path
    return paths


@pytest.mark.parametrize("flags", [["--report"], ["--ledger", "--facts"], ["--compare"]],
                         ids=["report", "ledger-facts", "compare"])
def test_a_damaged_file_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               flags: list[str]) -> None:
    for name, path in damaged(tmp_path).items():
        code, out, err = inspect(capsys, str(path), *flags, "--output-format", "json")
        assert code == 2, name
        assert out == "", name
        lines = err.splitlines()
        assert len(lines) == 1, (name, err)
        assert str(path) in lines[0] and "Traceback" not in err, (name, err)


def test_a_damaged_file_through_the_real_command(tmp_path: Path) -> None:
    path = damaged(tmp_path)["truncated.traj.json"]
    done = ctxtui("inspect", str(path), "--report", env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and str(path) in done.stderr


def test_a_gzip_bomb_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A small .gz inflating past the (lowered) MAX_INFLATED: one line, exit 2, never a traceback."""
    import core.trajectories as trajectories

    monkeypatch.setattr(trajectories, "MAX_INFLATED", 1 << 20)
    body = json.dumps({"trajectory_format": "mini-swe-agent-1.1", "messages": [
        {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}).encode()
    path = tmp_path / "bomb.traj.json.gz"
    path.write_bytes(gzip.compress(body[:-1] + b" " * (4 << 20) + body[-1:], compresslevel=9))
    code, out, err = inspect(capsys, str(path), "--report", "--output-format", "json")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and str(path) in err and "inflates to more than" in err
