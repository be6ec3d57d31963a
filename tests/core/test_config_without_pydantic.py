"""The config check without pydantic (the first frame does not wait for importing it).

A layer whose values already have their field's type is accepted as it is; anything else goes to
pydantic. The property: whatever the layer, `_validate_layer` returns exactly what the pydantic
check returns (same values, same types), or raises the same one-line error.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core import config
from core.config import COMPACTION_FIELDS, TOP_LEVEL_FIELDS, ConfigError

SCALARS = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False),
    st.booleans(),
    st.text(max_size=8),
    st.sampled_from(["80000", "0.5", "true", " 7 ", "x", ""]),
    st.lists(st.integers(), max_size=2),
)
TOP_KEYS = st.sampled_from([*TOP_LEVEL_FIELDS, "unknown_key", "context_char_limit"])
COMPACTION_KEYS = st.sampled_from([*COMPACTION_FIELDS, "model", "no_such_field"])
LAYERS = st.builds(
    lambda top, table, table_kind: {**top, **({} if table_kind == "absent" else
                                              {"compaction": table if table_kind == "table" else 5})},
    st.dictionaries(TOP_KEYS, SCALARS, max_size=4),
    st.dictionaries(COMPACTION_KEYS, SCALARS, max_size=4),
    st.sampled_from(["absent", "table", "table", "not a table"]),
)


def typed(value: Any) -> Any:
    """The value with the type of every leaf, so 1 and 1.0 (and True) differ."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    return (type(value).__name__, value)


def outcome(check: Any, values: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", typed(check(values, "the layer", lambda key: ".".join(key)))
    except ConfigError as error:
        return "error", str(error)


@settings(max_examples=300, deadline=None)
@given(LAYERS)
def test_the_quick_check_agrees_with_pydantic(values: dict[str, Any]) -> None:
    assert outcome(config._validate_layer, values) == outcome(config._validate_with_pydantic, values)


def test_typical_layers_take_the_quick_path() -> None:
    """What a TOML file and an empty environment give needs no pydantic (the path the TUI starts on)."""
    assert config._exact_layer({}) == {}
    layer = {"theme": "nord", "bash_timeout": 30, "auto_compact": False,
             "compaction": {"context_char_limit": 90_000, "micro_target_ratio": 1}}
    assert typed(config._exact_layer(layer)) == typed(
        {"theme": "nord", "bash_timeout": 30.0, "auto_compact": False,
         "compaction": {"context_char_limit": 90_000, "micro_target_ratio": 1.0}})
    for needs_pydantic in ({"max_tokens": "8000"}, {"max_tokens": True}, {"auto_compact": 1},
                           {"compaction": {"bogus": 1}}, {"compaction": 3}, {"bogus": "x"}):
        assert config._exact_layer(needs_pydantic) is None
