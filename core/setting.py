"""One setting, declared once: its type, default, help, allowed values and where it may come from.

A settings dataclass declares each setting as a field, `name: type = setting(default, help=...,
range=...)`; everything else is read from that declaration (`declared`): the `CTXTUI_<NAME>` variable,
the help of `ctxtui --help`, `ctxtui config` and the README's table, the conversion of a raw value (a
variable's text, a TOML value) to the field's type, and the refusal of a value it does not allow, in
one line naming where the value came from.

Only the standard library: a start reads its config file and environment without importing a
validation library. The conversions accept what pydantic's lax mode accepts for these types (a test
holds them to it): "8000" and " 8000 " and "8000.0" for an int, "nan" for a float (the range refuses
it), "yes" / "off" / "1" for a bool; never a bool for a number. Underscores in a number follow Python's
literals (`8_000`, single and between digits), where pydantic has quirks of its own.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, get_args, get_origin, get_type_hints

from core.text import valid_utf8, visible

ENV_PREFIX = "CTXTUI_"
_SETTING = "ctxtui.setting"  # the key of a field's metadata that holds its declaration


# --- what a declaration may say --------------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """Allowed numbers: from `low` (excluded when `above`) to `high`, finite; `whole` for integers."""

    low: float
    high: float
    unit: str
    whole: bool = True
    above: bool = False

    def holds(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.whole and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        low_ok = value > self.low if self.above else value >= self.low
        return low_ok and value <= self.high

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        unit = f" of {self.unit}" if self.unit else ""
        low = f"above {_figure(self.low)}" if self.above else f"from {_figure(self.low)}"
        high = f"at most {_figure(self.high)}" if self.above else f"to {_figure(self.high)}"
        return f"{kind}{unit} {low} {'and ' if self.above else ''}{high}"


def _figure(value: float) -> str:
    return f"{value:,}" if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Check:
    """A rule on a text setting beyond its type: `says` what it allows (for the help), `refuses` gives
    why a value is not allowed (the end of the one-line error, after `name = "value" (source)`) or None."""

    says: str
    refuses: Callable[[str], str | None]


@dataclass(frozen=True)
class Setting:
    """One setting as declared. `help`, `range`, `check`, `flag` and `also_env` are what `setting()`
    was given; `name`, `table`, `kind` and `default` are filled in from the dataclass field."""

    help: str
    range: Range | None = None
    check: Check | None = None
    flag: str | None = None  # the command-line flag that sets it too (besides --set)
    also_env: tuple[str, ...] = ()  # variables read after CTXTUI_<NAME>, when it is not set
    name: str = ""
    table: str | None = None  # the config file's table that holds it ([compaction]); None: top level
    kind: Any = None  # int, float, bool, str or a Literal of strings
    default: Any = None

    @property
    def key(self) -> tuple[str, ...]:
        """("model",) or ("compaction", "context_char_limit"): where it sits in the config file."""
        return (self.name,) if self.table is None else (self.table, self.name)

    @property
    def dotted(self) -> str:
        """The key as `save_setting` and the messages about the config file write it."""
        return ".".join(self.key)

    @property
    def env(self) -> tuple[str, ...]:
        """The variables that set it, the first set one wins: CTXTUI_<NAME>, then `also_env`."""
        return (ENV_PREFIX + self.name.upper(), *self.also_env)

    @property
    def is_text(self) -> bool:
        return self.kind is str

    def allowed(self) -> str:
        """What a value must be, for the help and the README: its range, its choices or its rule."""
        if self.range is not None:
            return self.range.describe()
        if get_origin(self.kind) is Literal:
            choices = [f'"{choice}"' for choice in get_args(self.kind)]
            return f"{', '.join(choices[:-1])} or {choices[-1]}" if len(choices) > 1 else choices[0]
        if self.kind is bool:
            return "true or false"
        return self.check.says if self.check is not None else "text"

    def also(self, code: Callable[[str], str] = str) -> str:
        """Where it may be set besides the config file, CTXTUI_<NAME> and --set ("" when nowhere else),
        each name passed through `code` (backticks for Markdown)."""
        found = [code(self.flag)] if self.flag else []
        found += [f"{code(name)} (below {code(self.env[0])})" for name in self.also_env]
        return ", ".join(found)

    def convert(self, value: Any) -> Any:
        """`value` as the field's type (NotAllowed with what the setting needs when it cannot be)."""
        converted = _convert(self.kind, value)
        if converted is _REFUSED:
            raise NotAllowed(f"{_needs(self.kind)}, got {value!r}")
        return converted

    def refusal(self, value: Any, source: str) -> str | None:
        """Why `value` (already of the field's type) cannot be used, in one line that names the setting,
        the value and where it came from; None when it can."""
        if isinstance(value, str):
            bad = _not_utf8_at(value)
            if bad is not None:
                return (
                    f"{self.name} = {shown_text(value, bad)} ({source}) holds bytes that are not UTF-8 "
                    f"(character {bad + 1:,}): no request could carry it; set it in UTF-8"
                )
            why = self.check.refuses(value) if self.check is not None else None
            return None if why is None else f"{self.name} = {shown_text(value)} ({source}) {why}"
        if self.range is not None and not self.range.holds(value):
            return f"{self.name} = {value!r} ({source}) is out of range: it must be {self.range.describe()}"
        return None


class NotAllowed(ValueError):
    """A raw value that cannot become the setting's type; the message is what the setting needs."""


def setting(
    default: Any,
    *,
    help: str,
    range: Range | None = None,
    check: Check | None = None,
    flag: str | None = None,
    also_env: tuple[str, ...] = (),
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A dataclass field that is a setting. `default` is its default as the config sees it; `factory`,
    when given, makes the default of a dataclass built in code (model: $ANTHROPIC_MODEL first)."""
    declared = Setting(help=help, range=range, check=check, flag=flag, also_env=also_env, default=default)
    if factory is not None:
        return field(default_factory=factory, metadata={_SETTING: declared})
    return field(default=default, metadata={_SETTING: declared})


@cache
def declared(kind: type) -> tuple[Setting, ...]:
    """The settings `kind` declares, in order: its own first, then those of each field that is a dataclass
    of settings itself (a table of the config file named after the field, with `table` set)."""
    hints = get_type_hints(kind)
    own: list[Setting] = []
    tables: list[Setting] = []
    for item in dataclasses.fields(kind):
        hint = hints[item.name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            tables.extend(dataclasses.replace(inner, table=item.name) for inner in declared(hint))
            continue
        spec = item.metadata.get(_SETTING)
        if spec is not None:
            own.append(dataclasses.replace(spec, name=item.name, kind=hint))
    return (*own, *tables)


# --- conversion: what pydantic's lax mode accepts for these types ------------------------------------

_REFUSED = object()
# Unicode's White_Space, what pydantic strips around a number (str.strip() would also take \x1c-\x1f)
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_WHOLE = re.compile(r"[+-]?([0-9](?:_?[0-9])*)(?:\.0+)?")
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_INT64 = 2**63


def _convert(kind: Any, value: Any) -> Any:
    if get_origin(kind) is Literal:
        return value if isinstance(value, str) and value in get_args(kind) else _REFUSED
    if kind is str:
        return value if isinstance(value, str) else _REFUSED
    if kind is bool:
        return _to_bool(value)
    if isinstance(value, bool):
        return _REFUSED  # true is not 1 here
    if kind is int:
        return _to_int(value)
    if kind is float:
        return _to_float(value)
    return _REFUSED


def _to_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    return _REFUSED


def _to_int(value: Any) -> Any:
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        fits = math.isfinite(value) and value.is_integer() and -_INT64 < value < _INT64
        return int(value) if fits else _REFUSED
    if isinstance(value, str):
        whole = _WHOLE.fullmatch(value.strip(_SPACE))
        if whole is None:
            return _REFUSED
        try:
            return int(whole.group(0).split(".")[0])
        except ValueError:  # more digits than int() reads
            return _REFUSED
    return _REFUSED


def _to_float(value: Any) -> Any:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip(_SPACE)
        if not text.isascii() or text != text.strip():
            return _REFUSED
        try:
            return float(text)  # Python's float literal: underscores only between digits
        except ValueError:
            return _REFUSED
    return _REFUSED


def _needs(kind: Any) -> str:
    if get_origin(kind) is Literal:
        choices = [repr(choice) for choice in get_args(kind)]
        return (
            f"needs one of {', '.join(choices[:-1])} or {choices[-1]}"
            if len(choices) > 1
            else f"needs {choices[0]}"
        )
    return {
        int: "needs a whole number",
        float: "needs a number",
        bool: "needs true or false",
        str: "needs a string",
    }.get(kind, "is not valid")


# --- text as a one-line message shows it -----------------------------------------------------------

_SHOWN_CHARS = 60


def shown_text(value: str, around: int = 0) -> str:
    """A text setting as a one-line message shows it: quoted, bytes that are not UTF-8 as `\\xNN`, control
    characters (newlines too) as escapes; a long value cut to the part around the character at `around`."""
    start = max(0, min(around - _SHOWN_CHARS // 3, len(value) - _SHOWN_CHARS))
    piece = value[start : start + _SHOWN_CHARS]
    text = visible(valid_utf8(piece)).replace("\n", "\\n").replace("\t", "\\t")
    return f'"{"…" if start else ""}{text}{"…" if start + _SHOWN_CHARS < len(value) else ""}"'


def _not_utf8_at(value: str) -> int | None:
    """The index of the first character of `value` that cannot be encoded as UTF-8 (a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None
