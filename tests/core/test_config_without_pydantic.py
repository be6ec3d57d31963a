"""The config is read without pydantic (the first frame does not wait for importing it), and converts
a raw value exactly as pydantic's lax mode does.

core/setting.py converts every layer itself, from each setting's declared type. The properties: any
value is accepted with the value and type pydantic gives for that type, or refused by both (a bool for
a number is refused too, as pydantic's int would take it for 1); and a layer is either every value so
converted or one line naming the layer, the first bad key and what it needs.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from core import config
from core.config import COMPACTION_FIELDS, SETTINGS, TOP_LEVEL_FIELDS, ConfigError
from core.setting import NotAllowed, Setting

ROOT = Path(__file__).resolve().parents[2]
KINDS = {item.kind for item in SETTINGS}
SPACES = ["", " ", "\t", "\n", "\xa0", "\u2007", "\u3000", "\x1c", "\x85"]
NUMBERISH = st.builds(
    lambda before, sign, digits, after: before + sign + digits + after,
    st.sampled_from(SPACES),
    st.sampled_from(["", "+", "-", "+-"]),
    st.text(alphabet="0123456789_.eE", max_size=8) | st.sampled_from(["nan", "inf", "Infinity", "1.00", "٣", "７"]),
    st.sampled_from(SPACES),
)
SCALARS = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(),
    st.sampled_from([2.0**63, -(2.0**63), 2.0**63 - 1024, 1e20]),
    st.booleans(),
    st.text(max_size=8),
    NUMBERISH,
    st.sampled_from(["80000", "0.5", "true", "TRUE", " true", "yes", "Off", "n", "5m", "1h", "cache-aware", ""]),
    st.lists(st.integers(), max_size=2),
    st.none(),
)


def typed(value: Any) -> Any:
    """The value with the type of every leaf, so 1 and 1.0 (and True) differ, and nan equals nan."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def pydantic_says(kind: Any, value: Any) -> tuple[str, Any]:
    """What pydantic makes of a value; for a number written with underscores, what Python's literals
    say instead (pydantic reads "in_f" as inf and "0__1" as 1)."""
    if isinstance(value, bool) and kind in (int, float):
        return "refused", None
    if isinstance(value, str) and "_" in value and kind in (int, float):
        return python_says(kind, value)
    try:
        return "ok", typed(TypeAdapter(kind).validate_python(value))
    except ValidationError:
        return "refused", None


def python_says(kind: Any, value: str) -> tuple[str, Any]:
    """What Python's int() and float() make of a number's text (blanks around it stripped; an int may
    end in ".0")."""
    text = value.strip(" \t\n\x0b\x0c\r\x85\xa0\u2007\u3000")
    if not text.isascii() or text != text.strip():
        return "refused", None
    whole, dot, zeros = text.partition(".")
    try:
        if kind is int and (not dot or (zeros and set(zeros) == {"0"})):
            return "ok", typed(int(whole))
        if kind is float:
            return "ok", typed(float(text))
    except ValueError:
        pass
    return "refused", None


@pytest.mark.parametrize(("kind", "text", "expected"), [
    (int, "8_000", 8000), (int, " 8_000.0 ", 8000), (int, "0__1", None), (int, "_1", None), (int, "1_", None),
    (float, "1_000.5", 1000.5), (float, "1e1_0", 1e10), (float, "in_f", None), (float, "1__0", None),
])
def test_underscores_in_a_number_follow_python(kind: Any, text: str, expected: Any) -> None:
    item = next(item for item in SETTINGS if item.kind is kind)
    assert we_say(item, text) == (("ok", typed(expected)) if expected is not None else ("refused", None))


def we_say(item: Setting, value: Any) -> tuple[str, Any]:
    try:
        return "ok", typed(item.convert(value))
    except NotAllowed as error:
        assert "\n" not in str(error) and str(error).startswith(("needs ", "is not"))
        return "refused", None


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(sorted(SETTINGS, key=lambda item: str(item.kind))), SCALARS)
def test_a_value_converts_as_pydantic_converts_it(item: Setting, value: Any) -> None:
    assert we_say(item, value) == pydantic_says(item.kind, value)


TOP_KEYS = st.sampled_from([*TOP_LEVEL_FIELDS, "unknown_key", "context_char_limit"])
COMPACTION_KEYS = st.sampled_from([*COMPACTION_FIELDS, "model", "no_such_field"])
LAYERS = st.builds(
    lambda top, table, table_kind: {
        **top,
        **({} if table_kind == "absent" else {"compaction": table if table_kind == "table" else 5}),
    },
    st.dictionaries(TOP_KEYS, SCALARS, max_size=4),
    st.dictionaries(COMPACTION_KEYS, SCALARS, max_size=4),
    st.sampled_from(["absent", "table", "table", "not a table"]),
)


def leaves(values: dict[str, Any]) -> list[tuple[tuple[str, ...], Any]]:
    """The layer's keys and values in its order ([compaction]'s inside it; a table that is not one as a key)."""
    found: list[tuple[tuple[str, ...], Any]] = []
    for name, value in values.items():
        if name == "compaction" and isinstance(value, dict):
            found += [((name, inner), item) for inner, item in value.items()]
        else:
            found.append(((name,), value))
    return found


def pydantic_layer(values: dict[str, Any]) -> tuple[str, Any]:
    """("ok", the converted layer as `typed` shows it), or ("refused", the first key that is not a setting
    or whose value pydantic refuses)."""
    converted: dict[str, Any] = {}
    for key, value in leaves(values):
        item = config.setting_of(key)
        said, result = pydantic_says(item.kind, value) if item is not None else ("refused", None)
        if said != "ok":
            return "refused", key
        (converted.setdefault(key[0], {}) if len(key) > 1 else converted)[key[-1]] = result
    return "ok", converted | {name: {} for name, value in values.items() if value == {}}


@settings(max_examples=400, deadline=None)
@given(LAYERS)
def test_a_layer_is_every_value_converted_or_one_line_naming_the_first_bad_key(values: dict[str, Any]) -> None:
    said, expected = pydantic_layer(values)
    try:
        checked = config._validate_layer(values, "the layer", lambda key: ".".join(key))
    except ConfigError as error:
        message = str(error)
        assert said == "refused" and "\n" not in message
        assert message.startswith(f"the layer: {'.'.join(expected)} "), (message, expected)
        return
    assert said == "ok" and typed(checked) == expected


def test_reading_settings_that_need_converting_imports_no_pydantic(tmp_path: Path) -> None:
    """The start reads its config file, CTXTUI_* and --set without pydantic, whatever they hold."""
    (tmp_path / "ctxtui").mkdir()
    (tmp_path / "ctxtui" / "config.toml").write_text('theme = "nord"\n[compaction]\nkeep_recent_results = 4.0\n',
                                                     encoding="utf-8")
    code = (
        "import sys; from core.config import resolve_config\n"
        f"config = resolve_config(overrides=['auto_compact=no'], environ={{'XDG_CONFIG_HOME': {str(tmp_path)!r},"
        " 'CTXTUI_MAX_TOKENS': ' 9_000 '})\n"
        "assert config.top['max_tokens'] == 9000 and config.compaction.keep_recent_results == 4\n"
        "assert config.top['auto_compact'] is False\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
