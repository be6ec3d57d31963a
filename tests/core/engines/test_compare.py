"""`ctxtui inspect FILE --compare` on the three recorded sessions in tests/fixtures/engines (written by
make_fixtures.py): the contract's JSON, each engine's call count equal to the session's, the client
engine agreeing with the session itself, `--report` and the dry run, the server engines cutting
where their settings say, and a table that fits 80 columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.sessions.economics import read_samples
from core.sessions.inspection import load_file
from tests.support.cli import ctxtui, env_without_key

FIXTURES = Path(__file__).parents[2] / "fixtures" / "engines"
SESSION = FIXTURES / "ctxtui_session.jsonl"
PROXY = FIXTURES / "proxy_recording.jsonl"
CLAUDE_CODE = FIXTURES / "claude_code_session.jsonl"
CONTRACT = {"engine", "calls", "peak_tokens", "input_tokens", "cache_read_tokens", "cache_write_tokens", "cost",
            "summaries", "facts_not_visible"}
ENGINES = ["client", "client cache-aware", "server-clear", "server-compact"]
LOW = ["--set", "clear_trigger_tokens=30000", "--set", "compact_trigger_tokens=50000"]


def run(path: Path, tmp_path: Path, *extra: str, json_out: bool = True) -> Any:
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    done = ctxtui("inspect", str(path), "--compare", *extra, *(["--output-format", "json"] if json_out else []),
                  env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if json_out else done.stdout


def session_calls(path: Path) -> int:
    """The model calls the session made: its turn samples (ctxtui), its exchanges (proxy), its replies."""
    if path == SESSION:
        return sum(1 for sample in read_samples(path) if sample.get("kind") != "summary")
    if path == PROXY:
        return sum(1 for line in path.read_text().splitlines() if '"proxy_request"' in line)
    return sum(1 for message in load_file(path).messages if message["role"] == "assistant")


def fired(report: dict[str, Any]) -> list[str]:
    """The steps the report's dry run says the next call's prepare would run."""
    return [step["step"] for step in report["dry_run"]["steps"]
            if step["before"] != step["after"] or step["step"] == "compact_history"]


@pytest.mark.slow
@pytest.mark.parametrize("path", [SESSION, PROXY, CLAUDE_CODE], ids=["ctxtui", "proxy", "claude-code"])
def test_every_engine_replays_every_call(path: Path, tmp_path: Path) -> None:
    data = run(path, tmp_path, *LOW)
    assert [row["engine"] for row in data["engines"]] == ENGINES
    calls = session_calls(path)
    assert calls >= 14
    for row in data["engines"]:
        assert CONTRACT <= set(row)
        assert row["calls"] == calls == len(row["sizes"]), row["engine"]
        assert row["peak_tokens"] == max(row["sizes"]) or row["engine"] == "server-compact"
        assert isinstance(row["cost"], float) and row["cost"] > 0
    by_name = {row["engine"]: row for row in data["engines"]}
    # past their triggers the server engines cut, and the model reads less than with nothing done
    # (`ctxtui replay`'s "none" engine: every call as recorded, over the same calls)
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    done = ctxtui("replay", str(path), "--engines", "none", "--output-format", "json", *LOW, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    untouched = json.loads(done.stdout)["engines"]["none"]
    assert untouched["calls"] == calls
    for name in ("server-clear", "server-compact"):
        assert by_name[name]["cuts"], name
        assert by_name[name]["mean_tokens"] < untouched["mean_tokens"], name
    assert by_name["server-compact"]["summaries"] >= 1
    assert run(path, tmp_path, *LOW) == data  # deterministic


@pytest.mark.slow
def test_the_client_engine_agrees_with_the_session_the_report_and_the_dry_run(tmp_path: Path) -> None:
    data = run(SESSION, tmp_path)
    client = data["engines"][0]
    # ctxtui's own session, replayed with the same settings: every request the size it had
    sent = [sample["chars_after"] for sample in read_samples(SESSION) if sample.get("kind") != "summary"]
    assert client["chars"] == sent
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    report = json.loads(ctxtui("inspect", str(SESSION), "--report", "--output-format", "json", env=env).stdout)
    assert client["calls"] == report["economics"]["calls"]
    assert client["final_chars"] == report["chars"]
    assert client["next_steps"] == fired(report)
    # a lower limit changes both the same way
    lower = ["--set", "context_char_limit=1200", "--set", "micro_min_chars=100", "--set", "fit_preview_chars=200",
             "--set", "persisted_preview_chars=500"]
    data = run(SESSION, tmp_path, *lower)
    report = json.loads(ctxtui("inspect", str(SESSION), "--report", "--output-format", "json", *lower, env=env).stdout)
    assert data["engines"][0]["chars"] != sent
    assert data["engines"][0]["next_steps"] == fired(report) != []


@pytest.mark.parametrize("path", [SESSION, PROXY, CLAUDE_CODE], ids=["ctxtui", "proxy", "claude-code"])
def test_the_table_fits_80_columns(path: Path, tmp_path: Path) -> None:
    text = run(path, tmp_path, *LOW, json_out=False)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert [line.split()[0] for line in lines[4:8]] == ["client", "client", "server-clear", "server-compact"]


def test_a_file_that_is_no_session_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text("not json\n")
    done = ctxtui("inspect", str(bad), "--compare", env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
