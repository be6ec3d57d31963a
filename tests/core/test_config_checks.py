"""Settings are checked once, where they are read, and what sets nothing is said.

- A text setting holding bytes that are not UTF-8 (os.environ and argv keep them as lone surrogates) and
  an empty `model` were accepted, then failed every turn; now one line names the key, the value (made
  visible) and its source, and the command exits 2.
- A misspelled `CTXTUI_*` variable was ignored without a word; now one warning line on stderr, once,
  with what was probably meant. `--set nosuch=1` listed only the compaction settings; now all of them,
  with a suggestion. Unknown config file keys get a suggestion too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import COMPACTION_FIELDS, TOP_LEVEL_FIELDS, ConfigError, resolve_config, save_setting
from tests.support.cli import ctxtui, env_without_key

BAD_BYTE = "\udcff"  # how os.environ and sys.argv hold the byte 0xff of a value that is not UTF-8


def write_config(home: Path, text: str) -> Path:
    path = home / "ctxtui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def resolve_error(tmp_path: Path, **kwargs: object) -> str:
    environ = {"XDG_CONFIG_HOME": str(tmp_path), **kwargs.pop("environ", {})}  # type: ignore[dict-item]
    with pytest.raises(ConfigError) as caught:
        resolve_config(environ=environ, **kwargs)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message and message.encode("utf-8")  # one line, printable as it is
    return message


@pytest.mark.parametrize(("layer", "source"), [
    ({"environ": {"CTXTUI_COMPACT_INSTRUCTIONS": f"keep {BAD_BYTE} it"}}, "env CTXTUI_COMPACT_INSTRUCTIONS"),
    ({"environ": {"CTXTUI_MODEL": f"claude{BAD_BYTE}"}}, "env CTXTUI_MODEL"),
    ({"environ": {"ANTHROPIC_MODEL": f"claude{BAD_BYTE}"}}, "env ANTHROPIC_MODEL"),
    ({"overrides": [f"summary_instructions=a{BAD_BYTE}b"]}, "flag --set"),
    ({"flags": {"model": f"claude{BAD_BYTE}"}}, "flag --model"),
])
def test_a_setting_with_bytes_that_are_not_utf8_is_refused_where_it_is_read(
        tmp_path: Path, layer: dict[str, object], source: str) -> None:
    message = resolve_error(tmp_path, **layer)
    assert "\\xff" in message and f"({source})" in message and "not UTF-8" in message


def test_a_long_value_is_shown_around_its_bad_byte(tmp_path: Path) -> None:
    value = "a" * 500 + BAD_BYTE + "b" * 500
    message = resolve_error(tmp_path, environ={"CTXTUI_COMPACT_INSTRUCTIONS": value})
    assert "a\\xffb" in message and len(message) < 300 and "character 501" in message


@pytest.mark.parametrize("layer", [
    {"overrides": ["model="]}, {"overrides": ["model=   "]}, {"flags": {"model": ""}},
    {"file": 'model = ""\n'},
])
def test_an_empty_model_is_refused(tmp_path: Path, layer: dict[str, object]) -> None:
    if "file" in layer:
        write_config(tmp_path, str(layer.pop("file")))
    message = resolve_error(tmp_path, **layer)
    assert message.startswith("model = ") and "is empty" in message


def test_the_theme_the_app_saves_is_checked_alike(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not UTF-8"):
        save_setting("theme", f"nord{BAD_BYTE}", tmp_path / "config.toml")
    assert not (tmp_path / "config.toml").exists()


def test_the_command_exits_2_with_one_line_naming_key_value_and_source(tmp_path: Path) -> None:
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path), CTXTUI_MODEL=f"claude{BAD_BYTE}")
    result = ctxtui("config", env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        'ctxtui: error: model = "claude\\xff" (env CTXTUI_MODEL) holds bytes that are not UTF-8 '
        "(character 7): no request could carry it; set it in UTF-8"]
    plain = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    result = ctxtui("-p", "hi", "--offline", "--set", "model=", env=plain)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == ['ctxtui: error: model = "" (flag --set) is empty: name a model, '
                                          "or leave it unset for the default"]


def test_a_misspelled_variable_is_warned_about_once_in_one_line(tmp_path: Path) -> None:
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path), CTXTUI_CONTEXT_LIMIT="80000", CTXTUI_MODLE="x",
                          CTXTUI_TOOL_RUN="a-tag")  # the run tag of ctxtui's own tool processes is not a typo
    result = ctxtui("config", env=env)
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "ctxtui: warning: ignored CTXTUI_CONTEXT_LIMIT (did you mean CTXTUI_CONTEXT_CHAR_LIMIT?), "
        "CTXTUI_MODLE (did you mean CTXTUI_MODEL?): not a setting of ctxtui (ctxtui config lists them)"]
    config = resolve_config(environ={"XDG_CONFIG_HOME": str(tmp_path), "ctxtui_model": "x"})
    assert config.warnings == ("ignored ctxtui_model (did you mean CTXTUI_MODEL?): not a setting of ctxtui "
                               "(ctxtui config lists them)",)
    assert resolve_config(environ={"XDG_CONFIG_HOME": str(tmp_path), "CTXTUI_MODEL": "x"}).warnings == ()


def test_set_of_an_unknown_field_lists_every_setting_and_suggests_one(tmp_path: Path) -> None:
    message = resolve_error(tmp_path, overrides=["context_limit=1"])
    assert "did you mean context_char_limit?" in message
    listed = message.split("FIELD is one of: ")[1].split(", ")
    assert listed == [*TOP_LEVEL_FIELDS, *COMPACTION_FIELDS] and "model" in listed and "theme" in listed
    assert "did you mean" not in resolve_error(tmp_path, overrides=["nosuch=1"])


@pytest.mark.parametrize(("text", "hint"), [
    ('modle = "x"\n', "did you mean model?"),
    ("[compaction]\nkeep_recent = 3\n", "did you mean keep_recent_results?"),
    ("context_char_limit = 90000\n", "put it under [compaction]"),
    ('[compaction]\ntheme = "nord"\n', "put it above [compaction]"),
])
def test_an_unknown_config_file_key_gets_a_suggestion(tmp_path: Path, text: str, hint: str) -> None:
    path = write_config(tmp_path, text)
    message = resolve_error(tmp_path)
    assert message.startswith(f"config file {path}: ") and hint in message and "is not a setting" in message
