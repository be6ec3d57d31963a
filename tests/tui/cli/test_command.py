"""The `ctxtui` command, run as a subprocess: version, headless mode, exit codes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from core.agent import Agent
from core.agent.launch import Launch
from tests.support.cli import STEP_LINE, api_env, ctxtui, env_without_key
from tests.support.fakeapi import FakeAnthropicServer, error_reply, text_reply, tool_reply

# --------------------------------------------------------------------------- startup


def test_version() -> None:
    result = ctxtui("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ctxtui 0.1.0"


def test_cli_import_and_version_do_not_load_textual_or_anthropic() -> None:
    code = (
        "import sys, contextlib, io\n"
        "import tui.cli\n"
        "print('textual' in sys.modules, 'anthropic' in sys.modules)\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        tui.cli.main(['--version'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(out.getvalue().strip())\n"
        "print('textual' in sys.modules, 'anthropic' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], env=env_without_key(), capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["False False", "ctxtui 0.1.0", "False False"]


# --------------------------------------------------------------------------- offline


def test_headless_offline_reads_a_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello from a.txt\nsecond line\n", encoding="utf-8")
    result = ctxtui("-p", "read a.txt", "--offline", "--workdir", str(tmp_path),
                    env=env_without_key(ANTHROPIC_API_KEY="sk-would-not-work", ANTHROPIC_BASE_URL="http://127.0.0.1:9"))
    assert result.returncode == 0, result.stderr
    assert "a.txt" in result.stdout and "hello from a.txt" in result.stdout
    assert result.stderr == ""


def test_headless_without_a_key_is_offline(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("offline line\n", encoding="utf-8")
    result = ctxtui("-p", "read a.txt", "--workdir", str(tmp_path),
                    env=env_without_key(ANTHROPIC_BASE_URL="http://127.0.0.1:9"))
    assert result.returncode == 0, result.stderr
    assert "offline line" in result.stdout


def test_headless_offline_bash_denied_unless_yes(tmp_path: Path) -> None:
    denied = ctxtui("-p", "run touch made.txt", "--workdir", str(tmp_path))
    assert denied.returncode == 0, denied.stderr
    assert not (tmp_path / "made.txt").exists()
    assert "denied" in denied.stdout.lower()
    hints = [line for line in denied.stderr.splitlines() if "--yes" in line]
    assert len(hints) == 1 and "bash" in hints[0]
    allowed = ctxtui("-p", "run touch made.txt", "--workdir", str(tmp_path), "--yes")
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp_path / "made.txt").exists()
    assert "--yes" not in allowed.stderr


# --------------------------------------------------------------------------- against the fake API


@pytest.mark.slow
def test_headless_prints_the_final_text(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    final = "The file says alpha.\nThat is all."
    fake_api.script(tool_reply([("toolu_1", "read_file", {"path": "a.txt"})], text="Reading."),
                    text_reply(final))
    result = ctxtui("-p", "what is in a.txt?", "--workdir", str(tmp_path), "--model", "claude-cli-test",
                    env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    assert result.stdout == final + "\n"
    assert result.stderr == ""
    bodies = fake_api.message_requests()
    assert len(bodies) == 2
    assert bodies[0]["model"] == "claude-cli-test"
    assert bodies[0]["messages"] == [{"role": "user", "content": "what is in a.txt?"}]
    results = bodies[1]["messages"][2]["content"]
    assert results[0]["tool_use_id"] == "toolu_1" and results[0]["content"] == "alpha\n"


@pytest.mark.slow
def test_headless_prints_one_stderr_line_per_compaction_step(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"big {n:05d} ".ljust(99, "b") + "\n" for n in range(80)))
    (tmp_path / "mid.txt").write_text("".join(f"mid {n:05d} ".ljust(99, "m") + "\n" for n in range(70)))
    fake_api.script(
        tool_reply([("toolu_big", "read_file", {"path": "big.txt"}), ("toolu_mid", "read_file", {"path": "mid.txt"})]),
        text_reply("Read both."),
    )
    result = ctxtui(
        "-p", "read both", "--workdir", str(tmp_path),
        "--set", "context_char_limit=5000",
        "--set", "tool_result_batch_char_limit=10000",
        "--set", "large_result_char_limit=5000",
        env=api_env(fake_api),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Read both.\n"
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    parsed = [STEP_LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert [match["step"] for match in parsed if match] == ["tool_result_budget", "fit_tool_results"]
    for match in parsed:
        assert match is not None
        before = int(match["before"].replace(",", ""))
        after = int(match["after"].replace(",", ""))
        assert after < before
        assert match["files"].startswith(".task_outputs/tool-results/")
        assert (tmp_path / match["files"]).is_file()
    # what the model got after the steps is within the limit set on the command line
    sent = fake_api.message_requests()[1]["messages"]
    assert len(json.dumps(sent, ensure_ascii=False)) <= 5000


@pytest.mark.slow
def test_headless_401_exits_1_with_one_line(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(error_reply(401, "authentication_error", "invalid x-api-key"))
    result = ctxtui("-p", "hello", "--workdir", str(tmp_path), env=api_env(fake_api, key="sk-bad"))
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "ANTHROPIC_API_KEY" in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_headless_unreachable_api_exits_1(tmp_path: Path) -> None:
    env = env_without_key(ANTHROPIC_BASE_URL="http://127.0.0.1:9", ANTHROPIC_API_KEY="sk-x")
    result = ctxtui("-p", "hello", "--workdir", str(tmp_path), env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr


# --------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--bogus-flag"], id="unknown-flag"),
        pytest.param(["-p", ""], id="empty-prompt"),
        pytest.param(["-p", "   "], id="blank-prompt"),
        pytest.param(["-p"], id="missing-prompt"),
        pytest.param(["-p", "hi", "--workdir", "/nonexistent/ctxtui-test-dir"], id="missing-workdir"),
        pytest.param(["-p", "hi", "--set", "no_such_field=1"], id="unknown-set-field"),
        pytest.param(["-p", "hi", "--set", "context_char_limit=lots"], id="bad-set-value"),
        pytest.param(["-p", "hi", "--set", "context_char_limit"], id="set-without-value"),
        pytest.param(["-p", "hi", "--set", "micro_target_ratio=5"], id="set-out-of-range"),
    ],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    if "--workdir" not in args:
        args = [*args, "--workdir", str(tmp_path)]
    result = ctxtui(*args, env=env_without_key(ANTHROPIC_BASE_URL="http://127.0.0.1:9"))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "error" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / ".ctxtui").exists()


# --------------------------------------------------------------------------- sessions, serve


def sessions_json(workdir: Path) -> list[dict[str, object]]:
    result = ctxtui("sessions", "--workdir", str(workdir), "--output-format", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert isinstance(rows, list)
    return rows


@pytest.mark.slow
def test_sessions_lists_runs_newest_first_and_resume_by_id_continues_one(tmp_path: Path) -> None:
    for prompt in ("help", "glob *.txt"):
        assert ctxtui("-p", prompt, "--offline", "--workdir", str(tmp_path)).returncode == 0
    rows = sessions_json(tmp_path)
    assert [row["first_request"] for row in rows] == ["glob *.txt", "help"]
    assert [row["messages"] for row in rows] == [4, 2] and all(row["resumable"] for row in rows)
    listing = ctxtui("sessions", "--workdir", str(tmp_path))
    assert listing.returncode == 0 and "first request" in listing.stdout and "glob *.txt" in listing.stdout
    older = str(rows[1]["id"])
    resumed = ctxtui("-p", "help", "--offline", "--workdir", str(tmp_path), "--resume", older)
    assert resumed.returncode == 0, resumed.stderr
    newest = sessions_json(tmp_path)[0]
    assert newest["first_request"] == "help" and newest["messages"] == 4  # the old turn, then the new one


def test_resume_with_an_unknown_id_is_a_usage_error(tmp_path: Path) -> None:
    result = ctxtui("-p", "help", "--offline", "--workdir", str(tmp_path), "--resume", "no-such-session")
    assert result.returncode == 2
    assert "no such session" in result.stderr and "Traceback" not in result.stderr


def test_serve_without_the_extra_says_how_to_get_it(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['textual_serve'] = None; sys.modules['textual_serve.server'] = None\n"
            "import tui.cli; sys.exit(tui.cli.main(['--serve', '--offline', '--workdir', sys.argv[1]]))\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env_without_key(),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["ctxtui: --serve needs textual-serve: pip install 'ctxtui[serve]'"]


class _AppThatQuitsAtOnce:
    """Stands in for CtxApp: the test is about what the command says after the app has exited. Given
    a Launch (a fresh session), it builds the agent as the real app does after its first frame."""

    return_code = 0
    start_failure: str | None = None

    themes: ClassVar[list[str | None]] = []

    def __init__(self, agent: Agent | Launch, demo_commands: list[str] | None = None, theme: str | None = None) -> None:
        self.given = agent
        self.built_agent: Agent | None = None if isinstance(agent, Launch) else agent
        self.themes.append(theme)

    def run(self) -> None:
        if isinstance(self.given, Launch):
            self.built_agent = asyncio.run(self.given.build())


def test_demo_says_where_its_workdir_is_kept_at_exit(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import tempfile

    import tui.app
    import tui.cli

    monkeypatch.setattr(tui.app, "CtxApp", _AppThatQuitsAtOnce)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert tui.cli.main(["--demo"]) == 0
    lines = capsys.readouterr().err.splitlines()
    kept = [line for line in lines if "demo's workdir is kept at" in line]
    assert len(kept) == 1
    path = Path(kept[0].split(" kept at ")[1].split(" (")[0])
    assert path.is_dir() and path.parent == tmp_path


def test_the_tui_starts_with_the_configured_theme(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tui.app
    import tui.cli

    config = tmp_path / "config" / "ctxtui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('theme = "gruvbox"\n', encoding="utf-8")
    monkeypatch.setattr(tui.app, "CtxApp", _AppThatQuitsAtOnce)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CTXTUI_THEME", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _AppThatQuitsAtOnce.themes.clear()
    assert tui.cli.main(["--offline", "--workdir", str(tmp_path)]) == 0
    assert _AppThatQuitsAtOnce.themes == ["gruvbox"]


def test_the_tui_says_at_exit_when_the_session_was_not_saved(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    import tui.app
    import tui.cli

    class _AppWhoseLogFails(_AppThatQuitsAtOnce):
        def run(self) -> None:
            super().run()
            assert self.built_agent is not None and self.built_agent.session is not None
            self.built_agent.session.error = "cannot write session log X: disk full"

    monkeypatch.setattr(tui.app, "CtxApp", _AppWhoseLogFails)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert tui.cli.main(["--offline", "--workdir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "this session was not saved completely: cannot write session log X: disk full" in err


# --------------------------------------------------------------------------- issue 18, item 22


def test_sessions_shows_the_persons_first_request_not_the_summary(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    assert ctxtui("-p", "read a.txt", "--offline", "--workdir", str(tmp_path)).returncode == 0
    compacted = ctxtui("-p", "compact keep a.txt", "--offline", "--workdir", str(tmp_path), "--resume")
    assert compacted.returncode == 0 and "[compact_history]" in compacted.stderr, compacted.stderr
    rows = sessions_json(tmp_path)
    assert [row["first_request"] for row in rows] == ["read a.txt", "read a.txt"]
    listing = ctxtui("sessions", "--workdir", str(tmp_path)).stdout
    assert "Compacted" not in listing and listing.count("read a.txt") == 2


def meta_only_session(workdir: Path, name: str = "20260101-000000-1-abcdef") -> str:
    """A session file with its meta line only (as earlier versions left one for every start)."""
    folder = workdir / ".ctxtui" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"session_{name}.jsonl").write_text('{"type": "meta", "created": 1.0}\n', encoding="utf-8")
    return name


def test_resume_of_an_empty_session_is_an_error_not_a_new_session(tmp_path: Path) -> None:
    empty = meta_only_session(tmp_path)
    for args in (["-p", "help"], []):  # headless and the TUI alike stop before starting anything
        result = ctxtui(*args, "--offline", "--workdir", str(tmp_path), "--resume", empty, timeout=20)
        assert result.returncode == 2 and result.stdout == "", result
        assert result.stderr.splitlines() == [
            f"ctxtui: error: --resume {empty}: session {empty} has no history to continue (empty); see ctxtui sessions"]
    assert [row["id"] for row in sessions_json(tmp_path)] == [empty]  # no new session was started


def test_resume_with_nothing_to_resume_is_an_error(tmp_path: Path) -> None:
    meta_only_session(tmp_path)
    result = ctxtui("-p", "help", "--offline", "--workdir", str(tmp_path), "--resume")
    assert result.returncode == 2 and "--resume: no session in" in result.stderr and "has a history" in result.stderr
    assert len(sessions_json(tmp_path)) == 1


def test_a_usage_error_is_one_line_without_the_usage_block(tmp_path: Path) -> None:
    result = ctxtui("-p", "hi", "--workdir", str(tmp_path), "--set", "context_char_limit=lots")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["ctxtui: error: --set: context_char_limit needs a whole number, got 'lots'"]


# --------------------------------------------------------------------------- issue 18, item 15: the demo's folder


def run_demo(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    import tui.app
    import tui.cli

    monkeypatch.setattr(tui.app, "CtxApp", _AppThatQuitsAtOnce)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = tui.cli.main(["--demo", *args])
    return code, capsys.readouterr().err.splitlines()


def test_the_demo_never_changes_a_file_in_a_given_workdir(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    mine = tmp_path / "project"
    (mine / "src").mkdir(parents=True)
    (mine / "README.md").write_text("my readme\n", encoding="utf-8")
    (mine / "src" / "module_01.py").write_text("my code\n", encoding="utf-8")
    code, lines = run_demo(monkeypatch, capsys, "--workdir", str(mine))
    assert code == 0
    assert (mine / "README.md").read_text(encoding="utf-8") == "my readme\n"
    assert (mine / "src" / "module_01.py").read_text(encoding="utf-8") == "my code\n"
    said = [line for line in lines if "is not empty" in line]
    assert len(said) == 1 and str(mine) in said[0], lines
    fresh = Path(said[0].split("a new folder inside it, ")[1].split(" (")[0])
    assert fresh.parent == mine and (fresh / "README.md").read_text(encoding="utf-8").startswith("# Demo project")
    assert any(f"kept at {fresh}" in line for line in lines)


def test_the_demo_uses_an_empty_or_missing_workdir_as_it_is(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for folder in (tmp_path / "empty", tmp_path / "missing" / "deeper"):
        if folder.name == "empty":
            folder.mkdir()
        code, lines = run_demo(monkeypatch, capsys, "--workdir", str(folder))
        assert code == 0 and (folder / "logs" / "build.log").is_file()
        assert not [line for line in lines if "is not empty" in line]


def test_the_demo_refuses_a_workdir_that_is_a_file(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n", encoding="utf-8")
    code, lines = run_demo(monkeypatch, capsys, "--workdir", str(mine))
    assert code == 2 and lines == [f"ctxtui: error: --demo: --workdir {mine} is not a directory"]
    assert mine.read_text(encoding="utf-8") == "mine\n"
