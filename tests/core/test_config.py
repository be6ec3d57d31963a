"""The config file, CTXTUI_* variables and flags: precedence, sources, one-line errors, saving."""

from __future__ import annotations

import dataclasses
import math
import stat
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.compaction import CompactionSettings
from core.config import (
    COMPACTION_FIELDS,
    TOP_LEVEL_FIELDS,
    ConfigError,
    resolve_config,
    save_setting,
    top_level_defaults,
)
from core.config_ranges import range_of
from tests.support.cli import ctxtui, env_without_key


def write_config(home: Path, text: str) -> Path:
    path = home / "ctxtui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_precedence_is_flags_then_env_then_file_then_defaults(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'model = "from-file"\ntheme = "nord"\n[compaction]\n'
                        "context_char_limit = 90000\nkeep_recent_results = 7\nsnip_trigger_messages = 60\n")
    environ = {"XDG_CONFIG_HOME": str(tmp_path), "CTXTUI_KEEP_RECENT_RESULTS": "5", "CTXTUI_MODEL": "from-env",
               "CTXTUI_SNIP_TRIGGER_MESSAGES": "70"}
    config = resolve_config(flags={"model": "from-flag"}, overrides=["snip_trigger_messages=80"], environ=environ)
    assert config.path == path
    assert config.top["model"] == "from-flag" and config.source("model") == "flag --model"
    assert config.top["theme"] == "nord" and config.source("theme") == f"file {path}"
    assert config.compaction.context_char_limit == 90_000
    assert config.compaction.keep_recent_results == 5
    assert config.source("compaction", "keep_recent_results") == "env CTXTUI_KEEP_RECENT_RESULTS"
    assert config.compaction.snip_trigger_messages == 80
    assert config.source("compaction", "snip_trigger_messages") == "flag --set"
    assert config.compaction.micro_min_chars == 120 and config.source("compaction", "micro_min_chars") == "default"


def test_ctxtui_config_prints_valid_toml_naming_each_source(tmp_path: Path) -> None:
    path = write_config(tmp_path, "# mine\n[compaction]\ncontext_char_limit = 80000\n")
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path), CTXTUI_FIT_PREVIEW_CHARS="700")
    result = ctxtui("config", "--set", "keep_recent_results=4", env=env)
    assert result.returncode == 0, result.stderr
    parsed = tomllib.loads(result.stdout)
    assert parsed["compaction"]["context_char_limit"] == 80_000
    assert parsed["compaction"]["fit_preview_chars"] == 700
    assert parsed["compaction"]["keep_recent_results"] == 4
    lines = {line.split(" =")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert lines["context_char_limit"].endswith(f"# file {path}")
    assert lines["fit_preview_chars"].endswith("# env CTXTUI_FIT_PREVIEW_CHARS")
    assert lines["keep_recent_results"].endswith("# flag --set")
    assert lines["micro_min_chars"].endswith("# default")


def test_the_file_takes_effect_in_a_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, "[compaction]\ncontext_char_limit = 300\nfit_preview_chars = 50\nmicro_min_chars = 20\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a" * 2000)
    result = ctxtui("-p", "read a.txt", "--offline", "--workdir", str(work),
                    env=env_without_key(XDG_CONFIG_HOME=str(home)))
    assert result.returncode == 0, result.stderr
    assert "[fit_tool_results]" in result.stderr or "[micro_compact]" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[compaction]\ncontext_char_limit = 1.5\n", "compaction.context_char_limit needs a whole number, got 1.5"),
        ("[compaction]\ncontext_char_limit = \"lots\"\n", "compaction.context_char_limit needs a whole number"),
        ("[compaction]\nno_such = 1\n", "compaction.no_such is not a setting"),
        ("colour = 1\n", "colour is not a setting"),
        ("[compaction\n", "not valid TOML"),
        ("bash_timeout = true\n", "bash_timeout needs a"),
    ],
)
def test_a_broken_file_is_one_line_naming_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write_config(tmp_path, text)
    result = ctxtui("config", env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 2
    error = [line for line in result.stderr.splitlines() if line.startswith("ctxtui: error:")]
    assert len(error) == 1, result.stderr
    assert str(path) in error[0] and expected in error[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("context_char_limit=1.5", "needs a whole number, got '1.5'"),
        ("micro_target_ratio=x", "needs a number, got 'x'"),
        ("fit_preview_chars=45000", "fit_preview_chars must be below the micro target"),
        ("persisted_preview_chars=40000", "persisted_preview_chars must be below large_result_char_limit"),
        ("large_result_char_limit=300000", "large_result_char_limit must not exceed tool_result_batch_char_limit"),
    ],
)
def test_set_errors_say_what_is_expected(tmp_path: Path, override: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(overrides=[override], environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    result = ctxtui("-p", "hi", "--workdir", str(tmp_path), "--set", override,
                    env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 2 and expected in result.stderr


def test_save_setting_keeps_other_keys_and_comments(tmp_path: Path) -> None:
    path = write_config(tmp_path, "# my settings\nmodel = \"m\"  # keep me\n\n[compaction]\ncontext_char_limit = 70000\n")
    save_setting("theme", "gruvbox", path)
    save_setting("compaction.keep_recent_results", 4, path)
    text = path.read_text(encoding="utf-8")
    assert "# my settings" in text and "# keep me" in text
    parsed = tomllib.loads(text)
    assert parsed == {"model": "m", "theme": "gruvbox", "compaction": {"context_char_limit": 70000,
                                                                       "keep_recent_results": 4}}
    config = resolve_config(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert config.top["theme"] == "gruvbox" and config.source("theme") == f"file {path}"
    with pytest.raises(ConfigError):
        save_setting("compaction.keep_recent_results", "many", path)
    assert tomllib.loads(path.read_text(encoding="utf-8")) == parsed  # a refused value changes nothing


def test_save_setting_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "ctxtui" / "config.toml"
    save_setting("theme", "nord", path)
    assert tomllib.loads(path.read_text(encoding="utf-8")) == {"theme": "nord"}


def test_help_lists_the_settings_and_the_config_path(tmp_path: Path) -> None:
    result = ctxtui("--help", env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 0
    assert str(tmp_path / "ctxtui" / "config.toml") in result.stdout
    for name in ("context_char_limit", "fit_preview_chars", "summary_input_char_limit", "theme", "bash_timeout",
                 "summary_instructions", "sessions", "inspect", "--output-format", "--serve"):
        assert name in result.stdout, name


async def test_tool_limits_from_the_file_and_env_reach_the_toolbox(tmp_path: Path) -> None:
    """max_bash_timeout, spill_byte_limit, glob_time_budget, bash_timeout and tool_output_limit are
    settings: their file / CTXTUI_* values are what the tools run with and tell the model."""
    from core.agent import Agent
    from core.config import Settings, apply_config

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    path = write_config(home, "max_bash_timeout = 7\nspill_byte_limit = 123456\nglob_time_budget = 3.5\n"
                        "bash_timeout = 2\n")
    environ = {"XDG_CONFIG_HOME": str(home), "CTXTUI_TOOL_OUTPUT_LIMIT": "4321"}
    config = resolve_config(environ=environ)
    assert config.source("max_bash_timeout") == f"file {path}"
    assert config.source("tool_output_limit") == "env CTXTUI_TOOL_OUTPUT_LIMIT"
    agent = Agent.from_settings(apply_config(Settings(workdir=work, offline=True), config))
    try:
        described = {tool["name"]: tool["description"] for tool in agent.toolbox.schemas}
        assert "at most 7)" in described["bash"] and "123,456 bytes" in described["bash"]
        assert "after 3.5 seconds" in described["glob"]
        clamped = await agent.toolbox.run("bash", {"command": "echo hi", "timeout": 100})
        assert "above the 7s maximum; 7s was used" in clamped.content
        long = await agent.toolbox.run("bash", {"command": "yes aaaaaaa | head -c 20000"})
        assert len(long.content) < 5_000 and "(20,000 bytes) is saved at" in long.content
    finally:
        await agent.aclose()


def test_ctxtui_config_lists_the_tool_limits_with_their_source(tmp_path: Path) -> None:
    path = write_config(tmp_path, "spill_byte_limit = 1000000\n")
    result = ctxtui("config", env=env_without_key(XDG_CONFIG_HOME=str(tmp_path), CTXTUI_GLOB_TIME_BUDGET="2"))
    assert result.returncode == 0, result.stderr
    lines = {line.split(" =")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert lines["spill_byte_limit"].startswith("spill_byte_limit = 1000000") and lines["spill_byte_limit"].endswith(
        f"# file {path}")
    assert lines["glob_time_budget"].endswith("# env CTXTUI_GLOB_TIME_BUDGET")
    assert lines["max_bash_timeout"].startswith("max_bash_timeout = 600.0") and lines["max_bash_timeout"].endswith(
        "# default")


# --------------------------------------------------------------------------- issue 18, item 12: ranges


NUMERIC = [*(name for name in TOP_LEVEL_FIELDS if isinstance(top_level_defaults()[name], int | float)
             and not isinstance(top_level_defaults()[name], bool)), *COMPACTION_FIELDS]


def test_every_numeric_setting_has_a_range_holding_its_default() -> None:
    defaults = {**top_level_defaults(), **dataclasses.asdict(CompactionSettings())}
    for name in NUMERIC:
        key = ("compaction", name) if name in COMPACTION_FIELDS else (name,)
        allowed = range_of(key)
        assert allowed is not None, name
        assert allowed.holds(defaults[name]), (name, defaults[name])


@pytest.mark.parametrize(
    ("variable", "value", "shown"),
    [
        ("CTXTUI_BASH_TIMEOUT", "nan", "bash_timeout = nan"),
        ("CTXTUI_BASH_TIMEOUT", "inf", "bash_timeout = inf"),
        ("CTXTUI_BASH_TIMEOUT", "0", "bash_timeout = 0.0"),
        ("CTXTUI_MAX_BASH_TIMEOUT", "-1", "max_bash_timeout = -1.0"),
        ("CTXTUI_GLOB_TIME_BUDGET", "nan", "glob_time_budget = nan"),
        ("CTXTUI_SPILL_BYTE_LIMIT", "0", "spill_byte_limit = 0"),
        ("CTXTUI_TOOL_OUTPUT_LIMIT", "-5", "tool_output_limit = -5"),
        ("CTXTUI_READ_LINE_LIMIT", "0", "read_line_limit = 0"),
        ("CTXTUI_MAX_TOKENS", "0", "max_tokens = 0"),
        ("CTXTUI_UNDO_DEPTH", "-1", "undo_depth = -1"),
        ("CTXTUI_CONTEXT_CHAR_LIMIT", "0", "context_char_limit = 0"),
        ("CTXTUI_MICRO_TARGET_RATIO", "nan", "micro_target_ratio = nan"),
        ("CTXTUI_PERSISTED_PREVIEW_CHARS", "-1", "persisted_preview_chars = -1"),
        ("CTXTUI_SUMMARY_INPUT_CHAR_LIMIT", "99999999999", "summary_input_char_limit = 99999999999"),
    ],
)
def test_a_value_out_of_range_is_refused_naming_key_value_and_range(variable: str, value: str, shown: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(environ={"XDG_CONFIG_HOME": "/nonexistent-ctxtui-config", variable: value})
    message = str(caught.value)
    assert message.startswith(f"{shown} (env {variable}) is out of range: it must be ") and "\n" not in message
    assert " from " in message or " above " in message


def test_a_range_error_from_the_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = write_config(tmp_path, "bash_timeout = nan\n")
    result = ctxtui("-p", "hi", "--offline", "--workdir", str(tmp_path),
                    env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"ctxtui: error: bash_timeout = nan (file {path}) is out of range: it must be a number of seconds above 0 "
        "and at most 86,400"]


def test_bash_timeout_may_not_exceed_max_bash_timeout(tmp_path: Path) -> None:
    environ = {"XDG_CONFIG_HOME": str(tmp_path), "CTXTUI_BASH_TIMEOUT": "700"}
    with pytest.raises(ConfigError) as caught:
        resolve_config(environ=environ)
    assert "bash_timeout = 700.0 (env CTXTUI_BASH_TIMEOUT) is above max_bash_timeout = 600.0 (default)" in str(
        caught.value)
    # only the maximum set below the default timeout: the default follows it down, and says so
    config = resolve_config(environ={"XDG_CONFIG_HOME": str(tmp_path), "CTXTUI_MAX_BASH_TIMEOUT": "30"})
    assert config.top["bash_timeout"] == 30.0 and config.source("bash_timeout") == "default, lowered to max_bash_timeout"


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(NUMERIC), value=st.one_of(st.floats(), st.integers(-(10**15), 10**15)))
def test_any_number_is_either_used_within_its_range_or_refused_in_one_line(name: str, value: float) -> None:
    text = "nan" if value != value else str(value)
    environ = {"XDG_CONFIG_HOME": "/nonexistent-ctxtui-config", f"CTXTUI_{name.upper()}": text}
    try:
        config = resolve_config(environ=environ)
    except ConfigError as error:
        assert "\n" not in str(error)
        return
    key = ("compaction", name) if name in COMPACTION_FIELDS else (name,)
    used = getattr(config.compaction, name) if name in COMPACTION_FIELDS else config.top[name]
    allowed = range_of(key)
    assert allowed is not None and allowed.holds(used) and math.isfinite(used)


def test_save_setting_refuses_a_value_out_of_range(tmp_path: Path) -> None:
    path = write_config(tmp_path, "theme = \"nord\"\n")
    with pytest.raises(ConfigError) as caught:
        save_setting("compaction.context_char_limit", -1, path)
    assert "out of range" in str(caught.value)
    assert path.read_text(encoding="utf-8") == "theme = \"nord\"\n"


def test_saving_into_a_symlinked_config_writes_through_the_link_and_keeps_the_mode(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "ctxtui.toml"
    dotfiles.parent.mkdir()
    dotfiles.write_text("# kept in my dotfiles repository\nmodel = \"m\"\n", encoding="utf-8")
    dotfiles.chmod(0o640)
    link = tmp_path / "config" / "ctxtui" / "config.toml"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    save_setting("theme", "gruvbox", link)
    assert link.is_symlink() and link.resolve() == dotfiles.resolve()
    assert tomllib.loads(dotfiles.read_text(encoding="utf-8")) == {"model": "m", "theme": "gruvbox"}
    assert "# kept in my dotfiles repository" in dotfiles.read_text(encoding="utf-8")
    assert stat.S_IMODE(dotfiles.stat().st_mode) == 0o640
    assert sorted(path.name for path in dotfiles.parent.iterdir()) == ["ctxtui.toml"]  # no temporary file left
