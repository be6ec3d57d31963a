"""`ctxtui replay PATH...` (tui/cli/replay.py) on the three real mini-swe-agent runs: the contract's
JSON, every engine and every key, `none` as the baseline saving nothing, intervals that bracket the
share, figures that add up, determinism (run to run, one worker or two), --engines, unreadable files
named on one line and skipped, nothing readable (exit 2), the table, and no progress bar off a terminal."""

from __future__ import annotations

import gzip
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from core.trajectories import read_trajectory
from tests.support.cli import clean_cli_env, ctxtui, env_without_key, run_main
from tui.cli.replay import Progress

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories" / "swe-agent"
NAMES = sorted(path.name for path in FIXTURES.glob("*.traj.json.gz"))
ENGINES = ["none", "client", "client-cache-aware", "masking", "server-clear", "server-compact"]
ENGINE_KEYS = {"calls", "input_chars", "input_tokens", "billed_input_tokens", "cost_usd", "peak_tokens",
               "mean_tokens", "steps", "saved_vs_none", "regret", "anchors"}
PER_ENGINE_KEYS = {"input_chars", "billed_input_tokens", "cost_usd", "peak_tokens"}


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_cli_env(tmp_path / "config", monkeypatch)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_main(capsys, "replay", *args)


def replay_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = run(capsys, *args, "--output-format", "json", "--workers", "1")
    assert code == 0, err
    assert err == ""
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON of `ctxtui replay <fixtures> --output-format json` (all engines), run once."""
    config = tmp_path_factory.mktemp("config")
    done = ctxtui("replay", str(FIXTURES), "--output-format", "json", "--workers", "1",
                  env=env_without_key(XDG_CONFIG_HOME=str(config)), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress bar: stderr is a pipe, not a terminal
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def assistant_calls(name: str) -> int:
    trajectory = read_trajectory(FIXTURES / name)
    assert trajectory is not None
    return trajectory.calls


# --- the contract's JSON ------------------------------------------------------------------------------------


def test_every_contract_key(full: dict[str, Any]) -> None:
    assert full["trajectories"] == 3
    assert full["calls"] == sum(assistant_calls(name) for name in NAMES)
    assert list(full["engines"]) == ENGINES
    for name, engine in full["engines"].items():
        assert ENGINE_KEYS <= set(engine), (name, ENGINE_KEYS - set(engine))
        assert engine["calls"] == full["calls"], name
        assert isinstance(engine["steps"], dict)
        assert all(isinstance(step, str) and isinstance(count, int) and count > 0
                   for step, count in engine["steps"].items()), name
        assert set(engine["saved_vs_none"]) == {"share", "ci95"}
        assert set(engine["regret"]) == {"removed", "referenced_later", "share"}
        assert set(engine["anchors"]) == {"kept", "recoverable", "lost"}
        for key in ("input_chars", "input_tokens", "peak_tokens", "mean_tokens"):
            assert isinstance(engine[key], int) and engine[key] > 0, (name, key)
        assert isinstance(engine["cost_usd"], float) and engine["cost_usd"] > 0  # deepseek-chat: Sonnet's prices
    assert [Path(row["file"]).name for row in full["per_trajectory"]] == NAMES
    for row in full["per_trajectory"]:
        assert set(row) >= {"file", "calls", "engines"}
        assert row["calls"] == assistant_calls(Path(row["file"]).name)
        assert list(row["engines"]) == ENGINES
        for name, engine in row["engines"].items():
            assert set(engine) == PER_ENGINE_KEYS, name


def test_none_saves_nothing_and_loses_nothing(full: dict[str, Any]) -> None:
    none = full["engines"]["none"]
    assert none["saved_vs_none"] == {"share": 0.0, "ci95": [0.0, 0.0]}
    assert none["steps"] == {} and none["regret"] == {"removed": 0, "referenced_later": 0, "share": 0.0}
    assert none["anchors"]["recoverable"] == 0 and none["anchors"]["lost"] == 0 and none["anchors"]["kept"] > 0


def test_every_interval_brackets_its_share(full: dict[str, Any]) -> None:
    for name, engine in full["engines"].items():
        saved = engine["saved_vs_none"]
        low, high = saved["ci95"]
        assert isinstance(saved["ci95"], list) and len(saved["ci95"]) == 2
        assert low <= saved["share"] <= high, (name, saved)


def test_totals_add_up(full: dict[str, Any]) -> None:
    none_billed = sum(row["engines"]["none"]["billed_input_tokens"] for row in full["per_trajectory"])
    for name, engine in full["engines"].items():
        rows = [row["engines"][name] for row in full["per_trajectory"]]
        assert engine["input_chars"] == sum(row["input_chars"] for row in rows), name
        billed = sum(row["billed_input_tokens"] for row in rows)
        assert abs(engine["billed_input_tokens"] - billed) <= 1, name
        assert engine["peak_tokens"] == max(row["peak_tokens"] for row in rows), name
        assert engine["cost_usd"] == pytest.approx(sum(row["cost_usd"] for row in rows), abs=1e-3)
        assert engine["saved_vs_none"]["share"] == pytest.approx(1 - billed / none_billed, abs=1e-4), name
        assert engine["mean_tokens"] <= engine["peak_tokens"]
        regret = engine["regret"]
        assert regret["referenced_later"] <= regret["removed"]
        if regret["removed"]:
            assert regret["share"] == round(regret["referenced_later"] / regret["removed"], 4)
    totals = {sum(engine["anchors"].values()) for engine in full["engines"].values()}
    assert len(totals) == 1  # every engine accounts for the same anchors


def test_none_sends_every_call_as_recorded(full: dict[str, Any]) -> None:
    """input_chars of `none`: the sum over calls of len(json.dumps(messages before the k-th assistant
    message, ensure_ascii=False))."""
    for row in full["per_trajectory"]:
        trajectory = read_trajectory(Path(row["file"]))
        assert trajectory is not None
        messages = trajectory.messages
        expected = sum(len(json.dumps(messages[:index], ensure_ascii=False))
                       for index, message in enumerate(messages) if message["role"] == "assistant")
        assert row["engines"]["none"]["input_chars"] == expected


def test_client_engines_send_less_and_lose_nothing(full: dict[str, Any]) -> None:
    none = full["engines"]["none"]
    for name in ("client", "masking"):
        engine = full["engines"][name]
        assert engine["input_chars"] < none["input_chars"], name  # the fixtures run past the default limit
        assert engine["peak_tokens"] < none["peak_tokens"], name
        assert engine["regret"]["removed"] > 0 and engine["anchors"]["lost"] == 0, name
    assert "micro_compact" in full["engines"]["masking"]["steps"]
    assert not {"snip_compact", "compact_history"} & set(full["engines"]["masking"]["steps"])


# --- determinism ------------------------------------------------------------------------------------------


def test_two_runs_give_the_same_json(capsys: pytest.CaptureFixture[str], full: dict[str, Any]) -> None:
    first = replay_json(capsys, str(FIXTURES))
    second = replay_json(capsys, str(FIXTURES))
    assert first == second
    assert json.dumps(first, sort_keys=True) == json.dumps(full, sort_keys=True)


def test_one_worker_or_two_give_the_same_output(tmp_path: Path) -> None:
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    outputs = []
    for workers in ("1", "2"):
        done = ctxtui("replay", str(FIXTURES), "--output-format", "json", "--workers", workers, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]


def test_the_seed_moves_only_the_intervals(capsys: pytest.CaptureFixture[str], full: dict[str, Any]) -> None:
    seeded = replay_json(capsys, str(FIXTURES), "--seed", "11", "--engines", "client,masking")
    for name in ("client", "masking"):
        assert seeded["engines"][name]["saved_vs_none"]["share"] == full["engines"][name]["saved_vs_none"]["share"]
        low, high = seeded["engines"][name]["saved_vs_none"]["ci95"]
        assert low <= seeded["engines"][name]["saved_vs_none"]["share"] <= high
    assert [seeded["engines"][name]["saved_vs_none"]["ci95"] for name in ("client", "masking")] != \
        [full["engines"][name]["saved_vs_none"]["ci95"] for name in ("client", "masking")]


# --- --engines --------------------------------------------------------------------------------------------


def test_engines_chosen_with_none_added_as_baseline(capsys: pytest.CaptureFixture[str], full: dict[str, Any]) -> None:
    data = replay_json(capsys, str(FIXTURES), "--engines", "client,masking")
    assert list(data["engines"]) == ["none", "client", "masking"]
    for row in data["per_trajectory"]:
        assert list(row["engines"]) == ["none", "client", "masking"]
    for name in ("none", "client", "masking"):
        assert data["engines"][name] == full["engines"][name]  # an engine's figures do not depend on the others


def test_an_unknown_engine_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(FIXTURES), "--engines", "client,bogus-engine", "--workers", "1")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "bogus-engine" in err


# --- files that cannot be read ----------------------------------------------------------------------------


def test_an_unreadable_file_is_named_and_the_rest_replayed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    shutil.copytree(FIXTURES, folder)
    broken = folder / "broken.traj.json"
    broken.write_bytes(gzip.decompress((FIXTURES / NAMES[0]).read_bytes())[:5000])
    code, out, err = run(capsys, str(folder), "--output-format", "json", "--workers", "1", "--engines", "client")
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 1 and str(broken) in lines[0], err
    data = json.loads(out)
    assert data["trajectories"] == 3
    assert sorted(Path(row["file"]).name for row in data["per_trajectory"]) == NAMES


def test_nothing_readable_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.traj.json").write_text("{\"messages\": [", encoding="utf-8")
    (folder / "b.json").write_bytes(b"\xff\xfe\x00binary")
    code, out, err = run(capsys, str(folder), "--workers", "1")
    assert code == 2 and out == ""
    assert "a.traj.json" in err and "b.json" in err
    assert all("Traceback" not in line for line in err.splitlines())
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(capsys, str(empty), "--workers", "1")
    assert code == 2 and out == "" and len(err.splitlines()) == 1


def test_a_missing_path_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, str(FIXTURES / NAMES[0]), str(tmp_path / "nowhere"), "--output-format", "json",
                         "--workers", "1", "--engines", "none")
    assert code == 0
    assert len(err.splitlines()) == 1 and "nowhere" in err
    assert json.loads(out)["trajectories"] == 1


def test_swe_agents_own_traj_files_are_replayed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """SWE-agent writes `<instance>.traj`; replay's folder search takes `.traj` files, so it must read them."""
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "run.traj").write_bytes(gzip.decompress((FIXTURES / NAMES[0]).read_bytes()))
    code, out, err = run(capsys, str(folder), "--output-format", "json", "--workers", "1", "--engines", "none")
    assert code == 0, err
    assert err == ""
    assert json.loads(out)["calls"] == assistant_calls(NAMES[0])


# --- the table and the progress bar ------------------------------------------------------------------------


def table_lines(capsys: pytest.CaptureFixture[str], *extra: str) -> list[str]:
    code, out, err = run(capsys, str(FIXTURES), "--workers", "1", *extra)
    assert code == 0 and err == ""
    return out.splitlines()


def test_table_names_every_engine(capsys: pytest.CaptureFixture[str]) -> None:
    lines = table_lines(capsys)
    assert lines[0] == "3 trajectories, 128 calls"
    header = lines[1]
    assert set(lines[2]) == {"-"} and len(lines[2]) == len(header)
    rows = lines[3:3 + len(ENGINES)]
    assert [row.split()[0] for row in rows] == ENGINES


def test_table_rows_line_up_under_the_header(capsys: pytest.CaptureFixture[str]) -> None:
    """Each column's cells end where its header ends; the steps each engine fired follow the table."""
    lines = table_lines(capsys)
    header = lines[1]
    rows = lines[3:3 + len(ENGINES)]
    assert len(header) < 120
    anchors_end = header.index("anchors kept/rec/lost") + len("anchors kept/rec/lost")
    assert anchors_end == len(header)
    for row in rows:
        assert len(row) == len(header) and row[-1] != " ", row
    fired = lines[3 + len(ENGINES):]
    assert fired[0].startswith("steps")
    assert any(line.split()[0] == "client:" and "snip_compact" in line for line in fired)
    assert not any(line.split()[0] == "none:" for line in fired[1:] if line.strip())


def test_output_format_table_is_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """DESIGN: `--output-format table|json`."""
    assert table_lines(capsys, "--output-format", "table") == table_lines(capsys)


def test_no_progress_bar_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(FIXTURES), "--workers", "1", "--engines", "none")
    assert code == 0 and err == ""


class Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_progress_draws_only_on_a_terminal() -> None:
    pipe = Terminal(tty=False)
    bar = Progress(stream=pipe)
    for done in range(1, 4):
        bar(done, 3)
    assert pipe.getvalue() == ""
    terminal = Terminal(tty=True)
    bar = Progress(stream=terminal)
    bar(1, 3)
    assert "1/3" in terminal.getvalue() and "\n" not in terminal.getvalue()  # redrawn in place


# --- --set ------------------------------------------------------------------------------------------------


def test_set_reaches_the_engines(capsys: pytest.CaptureFixture[str], full: dict[str, Any]) -> None:
    data = replay_json(capsys, str(FIXTURES), "--engines", "client,server-clear",
                       "--set", "context_char_limit=20000", "--set", "clear_trigger_tokens=5000")
    assert data["engines"]["none"] == full["engines"]["none"]  # the baseline does not depend on settings
    client, cleared = data["engines"]["client"], data["engines"]["server-clear"]
    assert client["input_chars"] < full["engines"]["client"]["input_chars"]
    assert cleared["steps"].get("server:clear_tool_uses_20250919", 0) > 0
    assert cleared["input_chars"] < full["engines"]["server-clear"]["input_chars"]
    # what the server cleared is still in the client's history: recoverable, never lost
    assert cleared["anchors"]["lost"] == 0 and cleared["anchors"]["recoverable"] > 0
    assert cleared["regret"]["removed"] > 0


def test_an_unknown_setting_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(FIXTURES), "--set", "no_such_setting=1", "--workers", "1")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "no_such_setting" in err
