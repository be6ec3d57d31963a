"""`tui.cli.parse_arguments`: the TUI's argv is parsed without the sub-commands' parsers and modules, and
every argv is parsed exactly as the full parser (`build_parser`) parses it: namespace, help, errors, exit."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import clean_cli_env, env_without_key
from tui.cli import COMMANDS, build_parser, parse_arguments

SUB_COMMAND_MODULES = ("tui.cli.proxy", "tui.cli.replay", "tui.cli.search", "core.engines")


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_cli_env(tmp_path / "config", monkeypatch)
    monkeypatch.setenv("COLUMNS", "100")  # the help's and usage's width


def test_a_tui_argv_loads_no_sub_command_module_and_a_sub_command_still_parses(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "import tui.cli\n"
        "args = tui.cli.parse_arguments(['--offline', '--workdir', sys.argv[1], '--resume', 'abc', '-v'])\n"
        f"print(json.dumps([m for m in {SUB_COMMAND_MODULES!r} if m in sys.modules]))\n"
        "print(json.dumps([args.command, str(args.workdir), args.offline, args.resume, args.verbose]))\n"
        "args = tui.cli.parse_arguments(['proxy', '--port', '9', '--headless'])\n"
        "print(json.dumps([args.command, args.proxy_port, args.headless, 'tui.cli.proxy' in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env_without_key(),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    loaded, tui_args, proxy_args = (json.loads(line) for line in result.stdout.splitlines())
    assert loaded == []
    assert tui_args == [None, str(tmp_path), True, "abc", True]
    assert proxy_args == ["proxy", "9", True, True]


def outcome(parse: Callable[[list[str]], argparse.Namespace], argv: list[str]) -> tuple[Any, ...]:
    """What parsing argv does: the exit status (None when it returns), stdout, stderr, the namespace."""
    out, err = io.StringIO(), io.StringIO()
    status, namespace = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            namespace = vars(parse(list(argv)))
        except SystemExit as error:
            status = error.code
    return status, out.getvalue(), err.getvalue(), namespace


@pytest.mark.parametrize("argv", [
    [], ["--offline", "--workdir", "w"], ["-p", "-"], ["--model", "proxy"], ["--resume", "proxy"], ["--resume"],
    ["--serv", "--por", "0", "--off"], ["--set", "a=b", "--set", "c=d"], ["--port", "-1"], ["-p", "-h foo"],
    ["-vp", "x"], ["-ph"], ["--workdir=--help"],
    # help and version, wherever argparse takes them
    ["-h"], ["--help"], ["--he"], ["-vh"], ["--version"], ["--vers"], ["--help", "proxy"], ["-h", "bogus"],
    ["bogus", "--version"], ["proxy", "--version"], ["proxy", "--help"], ["sessions", "--help"],
    ["config", "--help"], ["inspect", "--help"], ["replay", "--help"], ["search", "--help"],
    # sub-commands, wherever argparse takes them
    ["proxy", "--port", "9"], ["--workdir", "w", "proxy", "--headless"], ["--model", "m", "sessions"],
    ["sessions", "--prune", "--keep", "2"], ["search", "q", "--limit", "3"], ["replay", "a", "--engines", "none"],
    ["inspect", "f", "--report", "--workdir", "w"], ["config", "--markdown"],
    # errors
    ["bogus"], ["prox"], ["--", "proxy"], ["--"], ["-"], ["--offline", "x"], ["--port", "abc"], ["--h"], ["--ver"],
    ["--bogus"], ["--bogus", "proxy", "--nope"], ["--output-format", "xml"], ["--workdir"], ["-p"], ["search"],
    ["proxy", "-h", "--bogus"], ["--help=x"], ["-p", "--mod=x y"],
])
def test_parse_arguments_does_what_the_full_parser_does(argv: list[str]) -> None:
    assert outcome(parse_arguments, argv) == outcome(lambda argv: build_parser().parse_args(argv), argv)


def test_the_usage_line_names_every_sub_command() -> None:
    """The light parser's usage (an error without a sub-command) is the full parser's (a bad
    sub-command), and COMMANDS, which both show, are the full parser's sub-commands."""
    light_status, _, light_error, _ = outcome(parse_arguments, ["--port", "abc"])
    full_status, _, full_error, _ = outcome(parse_arguments, ["bogus"])
    assert light_status == full_status == 2
    assert light_error.splitlines()[:-1] == full_error.splitlines()[:-1]
    assert "{" + ",".join(COMMANDS) + "} ..." in light_error
    choices = re.search(r"invalid choice: 'bogus' \(choose from (.*)\)$", full_error.splitlines()[-1])
    assert choices is not None and re.findall(r"[a-z]+", choices.group(1)) == list(COMMANDS)
