"""Headless output formats, `-p -`, oversized prompts, closed pipes and the session log's failures."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import api_env, command, ctxtui, env_without_key
from tests.support.fakeapi import FakeAnthropicServer, text_reply, tool_reply

COMPACTING = ("--set", "context_char_limit=5000", "--set", "tool_result_batch_char_limit=10000",
              "--set", "large_result_char_limit=5000")


def script_a_compacting_turn(fake_api: FakeAnthropicServer, workdir: Path) -> None:
    (workdir / "big.txt").write_text("".join(f"big {n:05d} ".ljust(99, "b") + "\n" for n in range(80)))
    (workdir / "mid.txt").write_text("".join(f"mid {n:05d} ".ljust(99, "m") + "\n" for n in range(70)))
    fake_api.script(
        tool_reply([("toolu_big", "read_file", {"path": "big.txt"}), ("toolu_mid", "read_file", {"path": "mid.txt"})],
                   text="Reading both."),
        text_reply("Read both."),
    )


@pytest.mark.slow
def test_stream_json_is_one_object_per_line_in_order_with_result_last(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    script_a_compacting_turn(fake_api, tmp_path)
    result = ctxtui("-p", "read both", "--workdir", str(tmp_path), "--output-format", "stream-json", *COMPACTING,
                    env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(isinstance(record.get("type"), str) for record in records)
    types = [record["type"] for record in records]
    assert types[-1] == "result" and types.count("result") == 1
    assert records[-1]["text"] == "Read both." and records[-1]["exit_code"] == 0
    # the first call's context record comes when that call ended: after its text, before its tool calls
    assert types.index("context") < types.index("tool_call") and records[types.index("context")]["call"] == 1
    # the order of the turn: first call's text, its tool calls and results, the steps, the second call
    first_tool = types.index("tool_call")
    assert "text" in types[:first_tool]
    assert [r["id"] for r in records if r["type"] == "tool_call"] == ["toolu_big", "toolu_mid"]
    assert [r["id"] for r in records if r["type"] == "tool_result"] == ["toolu_big", "toolu_mid"]
    compactions = [r for r in records if r["type"] == "compaction"]
    assert [r["step"] for r in compactions] == ["tool_result_budget", "fit_tool_results"]
    for record in compactions:
        assert record["after"] < record["before"]
        assert all((tmp_path / path).is_file() for path in record["files"])
        # what the step took out: one ledger entry per result, in the file it wrote (not restorable: each
        # result alone is over the 5,000-char limit, which restore refuses)
        assert [entry["path"] for entry in record["ledger"]] == record["files"]
        assert all(entry["kind"] == "tool_result" and entry["step"] == record["step"] and entry["call"] == 2
                   and not entry["restorable"] and entry["chars"] > 7000 for entry in record["ledger"])
    contexts = [r for r in records if r["type"] == "context"]
    assert [r["call"] for r in contexts] == [1, 2]  # one per model call
    assert contexts[1]["steps"] == ["tool_result_budget", "fit_tool_results"]
    assert contexts[1]["chars_before"] == compactions[0]["before"]
    assert contexts[1]["chars_after"] == compactions[-1]["after"] <= 5000
    assert types.index("compaction") > types.index("tool_result") and types.index("compaction") < len(types) - 1
    text = "".join(r["text"] for r in records if r["type"] == "text")
    assert text == "Reading both.Read both."
    assert result.stderr == ""  # the compaction lines are in the JSON, not on stderr


@pytest.mark.slow
def test_json_is_one_object_at_the_end_with_every_event(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    script_a_compacting_turn(fake_api, tmp_path)
    result = ctxtui("-p", "read both", "--workdir", str(tmp_path), "--output-format", "json", *COMPACTING,
                    env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert data["type"] == "result" and data["text"] == "Read both." and data["exit_code"] == 0
    kinds = [event["type"] for event in data["events"]]
    assert kinds.count("compaction") == 2 and kinds.count("context") == 2 and "result" not in kinds


@pytest.mark.slow
def test_json_reports_an_api_error_with_exit_1(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    from tests.support.fakeapi import error_reply

    fake_api.script(error_reply(401, "authentication_error", "invalid x-api-key"))
    result = ctxtui("-p", "hello", "--workdir", str(tmp_path), "--output-format", "stream-json",
                    env=api_env(fake_api, key="sk-bad"))
    assert result.returncode == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[-1]["type"] == "result" and records[-1]["exit_code"] == 1
    assert any(record["type"] == "error" for record in records)


def test_untrusted_text_cannot_reach_the_terminal_raw(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text("title \x1b]2;pwned\x07 and \x9b31m\n", encoding="utf-8")
    for output_format in ("text", "stream-json"):
        result = ctxtui("-p", "read evil.txt", "--offline", "--workdir", str(tmp_path), "--output-format",
                        output_format, "-v")
        assert result.returncode == 0, result.stderr
        for stream in (result.stdout, result.stderr):
            assert "\x1b" not in stream and "\x07" not in stream and "\x9b" not in stream
        assert "\\x1b" in result.stdout or "\\u001b" in result.stdout


def run_with_stdin(args: list[str], data: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command(), *args], input=data, env=env or env_without_key(), capture_output=True,
                          text=True, timeout=60)


def test_prompt_from_stdin_of_a_megabyte_warns_and_goes_on(tmp_path: Path) -> None:
    prompt = "help " + "z" * 1_000_000
    result = run_with_stdin(["-p", "-", "--offline", "--workdir", str(tmp_path), "--output-format", "json"], prompt)
    assert result.returncode == 0, result.stderr[-500:]
    warning = [line for line in result.stderr.splitlines() if "alone is" in line]  # said once (the agent's notice)
    assert len(warning) == 1 and "over the 50,000-char context limit" in warning[0]
    assert "compact_history" not in result.stderr  # no step that changed nothing
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["exit_code"] == 0
    said = [event for event in data["events"] if event["type"] in ("notice", "compaction")]
    assert len(said) == 1 and said[0]["kind"] == "warning"


def test_prompt_from_stdin(tmp_path: Path) -> None:
    result = run_with_stdin(["-p", "-", "--offline", "--workdir", str(tmp_path)], "help\n")
    assert result.returncode == 0, result.stderr
    assert "offline model" in result.stdout
    assert "warning" not in result.stderr
    empty = run_with_stdin(["-p", "-", "--offline", "--workdir", str(tmp_path)], "")
    assert empty.returncode == 2 and "stdin was empty" in empty.stderr


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    shell = f"{' '.join(command())} -p help --offline --workdir {tmp_path} | true"
    result = subprocess.run(["bash", "-c", f"set -o pipefail; {shell}"], env=env_without_key(), capture_output=True,
                            text=True, timeout=60)
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
    assert result.stderr == ""


def test_a_failing_session_log_is_said_on_stderr(tmp_path: Path) -> None:
    (tmp_path / ".ctxtui").write_text("not a directory")
    result = ctxtui("-p", "help", "--offline", "--workdir", str(tmp_path))
    assert result.returncode == 0
    assert "offline model" in result.stdout
    lines = [line for line in result.stderr.splitlines() if "session" in line]
    assert lines and all("cannot write session log" in line for line in lines), result.stderr
    assert any("not saved" in line for line in lines)


@pytest.mark.slow
def test_verbose_prints_one_context_line_per_model_call(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    script_a_compacting_turn(fake_api, tmp_path)
    result = ctxtui("-p", "read both", "--workdir", str(tmp_path), "--model", "claude-haiku-4-5", "-v",
                    *COMPACTING, env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("[call ")]
    assert [line.split("]")[0] for line in lines] == ["[call 1", "[call 2"]
    bodies = [r.body for r in fake_api.requests if r.path == "/v1/messages"]
    assert len(bodies) == 2  # one line per model call, no more
    # the second call's line names the steps before it, its tokens from the API's usage and its cost
    assert "after tool_result_budget -" in lines[1] and "fit_tool_results -" in lines[1]
    assert "tokens (input " in lines[1] and "cache read " in lines[1] and "$" in lines[1]


@pytest.mark.slow
def test_stream_json_context_records_are_the_timeline_samples(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    script_a_compacting_turn(fake_api, tmp_path)
    result = ctxtui("-p", "read both", "--workdir", str(tmp_path), "--model", "claude-haiku-4-5",
                    "--output-format", "stream-json", *COMPACTING, env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    contexts = [r for r in records if r["type"] == "context"]
    assert len(contexts) == 2
    for record in contexts:
        for field in ("call", "chars_before", "chars_after", "steps", "saved", "messages", "estimated_tokens",
                      "input_tokens", "cache_read_tokens", "cache_creation_tokens", "output_tokens", "cost"):
            assert field in record, field
        # online: the usage the API reported, not nulls, and a price from the table
        assert isinstance(record["input_tokens"], int) and isinstance(record["output_tokens"], int)
        assert isinstance(record["cache_read_tokens"], int) and record["cost"] > 0
        assert record["tokens"] == record["input_tokens"] + record["cache_read_tokens"] + record[
            "cache_creation_tokens"]
    assert contexts[1]["saved"] == [c["before"] - c["after"] for c in records if c["type"] == "compaction"]


# --------------------------------------------------------------------------- issue 18, item 22


@pytest.mark.slow
def test_a_prompt_from_stdin_loses_the_newline_that_ends_it(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(text_reply("one"), text_reply("two"), text_reply("three"))
    for data, sent in (("what is 2+2?\n", "what is 2+2?"), ("two lines\nhere\r\n", "two lines\nhere"),
                       ("kept as typed  \n\n", "kept as typed  \n")):
        result = run_with_stdin(["-p", "-", "--workdir", str(tmp_path)], data, env=api_env(fake_api))
        assert result.returncode == 0, result.stderr
        assert fake_api.message_requests()[-1]["messages"] == [{"role": "user", "content": sent}]


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_json_output_without_p_is_a_usage_error_not_a_tui_in_a_pipe(tmp_path: Path, output_format: str) -> None:
    result = ctxtui("--output-format", output_format, "--offline", "--workdir", str(tmp_path), timeout=20)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [f"ctxtui: error: --output-format {output_format} is for -p (one headless "
                                          "turn); the TUI draws on the terminal, not JSON"]
    assert not (tmp_path / ".ctxtui").exists()


def readme_block(after: str) -> list[str]:
    """The lines of the README's first fenced block after the line `after`."""
    lines = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("```sh", lines.index(after)) + 1
    return lines[start : lines.index("```", start)]


def test_the_readme_stream_json_example_is_the_order_the_program_prints(tmp_path: Path) -> None:
    block = readme_block("## Headless JSON")
    assert block[0].startswith("$ ctxtui ")
    documented = [line.split('"type": "')[1].split('"')[0] for line in block[1:]]
    (tmp_path / "notes.txt").write_text("hello notes\n", encoding="utf-8")
    result = ctxtui(*shlex.split(block[0].removeprefix("$ ctxtui ")), "--workdir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line)["type"] for line in result.stdout.splitlines()]
    collapsed = [kind for number, kind in enumerate(printed) if number == 0 or printed[number - 1] != kind
                 or kind != "text"]  # text deltas of one block shown as one line
    assert collapsed == documented


def test_yes_allows_file_writes_too_and_says_so(tmp_path: Path) -> None:
    denied = ctxtui("-p", "write made.txt\nmade by the model", "--offline", "--workdir", str(tmp_path))
    assert denied.returncode == 0 and not (tmp_path / "made.txt").exists()
    assert "write_file denied: headless mode runs it only with --yes" in denied.stderr
    allowed = ctxtui("-p", "write made.txt\nmade by the model", "--offline", "--workdir", str(tmp_path), "--yes")
    assert allowed.returncode == 0 and (tmp_path / "made.txt").read_text(encoding="utf-8").startswith("made by")
    help_text = ctxtui("--help").stdout
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `--yes`"))
    for documented in (" ".join(help_text.split()), row):
        assert "allow bash and file writes without asking" in documented, documented
