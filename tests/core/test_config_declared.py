"""Each setting is declared once (core/config.py, core/compaction/settings.py) and everything else is
made from that declaration: its help, its range and the refusal of a value outside it in any layer,
its `CTXTUI_*` variable, the help of `ctxtui --help`, `ctxtui config` and the README's tables.

`python -m tests.core.test_config_declared` writes the README's tables anew from the declarations.
"""

from __future__ import annotations

import math
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import (
    SETTINGS,
    ConfigError,
    config_path,
    resolve_config,
    save_setting,
    settings_help,
    settings_table_markdown,
)
from core.setting import Setting
from tests.support.cli import ctxtui, env_without_key

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
START, END = "<!-- settings:start -->\n", "<!-- settings:end -->\n"
NUMERIC = [item for item in SETTINGS if item.range is not None]
NOWHERE = {"XDG_CONFIG_HOME": "/nonexistent-ctxtui-config"}


def readme_tables(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0]


def write_readme() -> None:
    text = README.read_text(encoding="utf-8")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    README.write_text(before + START + "\n" + settings_table_markdown() + "\n" + END + after, encoding="utf-8")


def test_the_readme_tables_are_the_declarations() -> None:
    shown = readme_tables(README.read_text(encoding="utf-8")).strip("\n") + "\n"
    assert shown == settings_table_markdown(), (
        "README.md's settings tables differ from the declarations: run python -m tests.core.test_config_declared"
    )


def test_every_setting_is_declared_with_help_and_a_default_it_allows() -> None:
    assert len({item.name for item in SETTINGS}) == len(SETTINGS)  # one CTXTUI_<NAME> per setting
    for item in SETTINGS:
        assert item.help.strip() and "\n" not in item.help, item.name
        assert item.convert(item.default) == item.default, item.name
        assert item.refusal(item.default, "default") is None, item.name
        if item.kind in (int, float):
            assert item.range is not None, f"{item.name}: a number without a range"
        else:
            assert item.range is None and (item.kind in (bool, str) or get_origin(item.kind) is Literal), item.name


def test_every_setting_has_its_own_variable_that_sets_it() -> None:
    environ = dict(NOWHERE)
    for item in SETTINGS:
        environ[item.env[0]] = sample(item)
    config = resolve_config(environ=environ)
    for item in SETTINGS:
        assert config.source(*item.key) == f"env {item.env[0]}", item.name
        assert config.value(item) == item.convert(sample(item)), item.name
    assert config.warnings == ()


def sample(item: Setting) -> str:
    """A valid value as a variable writes it (not the default, so the variable is seen to take effect)."""
    if item.kind is bool:
        return "false" if item.default else "true"
    if get_origin(item.kind) is Literal:
        return str(get_args(item.kind)[-1])
    if item.kind is str:
        return "text_1"
    allowed = item.range
    assert allowed is not None
    return str(next(value for value in (item.default + 1, item.default - 1, allowed.high) if allowed.holds(value)))


def outside(item: Setting) -> st.SearchStrategy[Any]:
    """Values of the setting's type that its range refuses."""
    allowed = item.range
    assert allowed is not None
    if item.kind is int:
        return st.one_of(st.integers(max_value=math.floor(allowed.low) - (0 if allowed.above else 1)),
                         st.integers(min_value=math.floor(allowed.high) + 1))
    low = st.floats(max_value=allowed.low, exclude_max=not allowed.above, allow_nan=False)
    high = st.floats(min_value=allowed.high, exclude_min=True, allow_nan=False)
    return st.one_of(low, high, st.just(math.nan))


@st.composite
def refused(draw: st.DrawFn) -> tuple[Setting, Any, str]:
    item = draw(st.sampled_from(NUMERIC))
    return item, draw(outside(item)), draw(st.sampled_from(["file", "env", "--set", "save_setting"]))


@settings(max_examples=200, deadline=None)
@given(refused())
def test_a_value_outside_the_declared_range_is_refused_in_one_line_naming_layer_and_key(
        case: tuple[Setting, Any, str]) -> None:
    item, value, layer = case
    text = "nan" if value != value else repr(value)
    with tempfile.TemporaryDirectory() as home:
        environ = {"XDG_CONFIG_HOME": home}
        path = config_path(environ)
        with pytest.raises(ConfigError) as caught:
            if layer == "file":
                path.parent.mkdir(parents=True)
                document = tomlkit.document()
                target = document if item.table is None else document.setdefault(item.table, tomlkit.table())
                target[item.name] = value
                path.write_text(tomlkit.dumps(document), encoding="utf-8")
                resolve_config(environ=environ)
            elif layer == "env":
                resolve_config(environ={**environ, item.env[0]: text})
            elif layer == "--set":
                resolve_config(environ=environ, overrides=[f"{item.name}={text}"])
            else:
                save_setting(item.dotted, value, path)
        assert not path.exists() or layer == "file"  # save_setting wrote nothing
    message = str(caught.value)
    where = {"file": f"file {path}", "env": f"env {item.env[0]}", "--set": "flag --set",
             "save_setting": f"save_setting {item.dotted}"}[layer]
    assert "\n" not in message
    assert message.startswith(f"{item.name} = ") and f" ({where}) is out of range: it must be " in message
    assert message.endswith(item.range.describe() if item.range else "")


def test_help_and_ctxtui_config_list_every_setting(tmp_path: Path) -> None:
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    helped = ctxtui("--help", env=env)
    assert helped.returncode == 0
    listed = settings_help(tmp_path / "ctxtui" / "config.toml")
    assert listed in helped.stdout.replace("\r", "")
    for item in SETTINGS:
        line = next(line for line in listed.splitlines() if line.split()[:1] == [item.name])
        assert item.help in line and item.allowed() in line, item.name
    shown = ctxtui("config", env=env)
    assert shown.returncode == 0, shown.stderr
    parsed = tomllib.loads(shown.stdout)
    for item in SETTINGS:
        table = parsed if item.table is None else parsed[item.table]
        assert table[item.name] == item.default, item.name
    assert len(parsed) == len([item for item in SETTINGS if item.table is None]) + 1  # + [compaction]
    markdown = ctxtui("config", "--markdown", env=env)
    assert markdown.returncode == 0 and markdown.stdout == settings_table_markdown()


if __name__ == "__main__":
    write_readme()
