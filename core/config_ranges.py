"""The range of every numeric setting, and the one-line refusal of a value outside it.

A type check alone let through `bash_timeout = nan` (every command killed at once), `inf`, zero and
negative sizes and times, and values so large they mean nothing. Every numeric setting has a range
here; `check_ranges` refuses the first value outside its range (or `bash_timeout` above
`max_bash_timeout`) naming the key, the value, where it came from and the range.

Text settings are checked here too (`check_text`): a value holding bytes that are not UTF-8 (what
os.environ and argv give as lone surrogates) was accepted and then failed every request with a
UnicodeEncodeError, and an empty `model` was accepted and refused by the API on every turn.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.text import valid_utf8, visible

GIGA = 1_000_000_000
COMPACT_TRIGGER_MIN = 50_000  # the API refuses a compact_20260112 trigger below this
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")  # what the API accepts as a tool name


@dataclass(frozen=True)
class Range:
    """Allowed values: from `low` (excluded when `above`) to `high`, finite; `whole` for integers."""

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


TOP_LEVEL_RANGES: dict[str, Range] = {
    "max_tokens": Range(1, 1_000_000, "tokens"),
    "bash_timeout": Range(0, 86_400, "seconds", whole=False, above=True),
    "max_bash_timeout": Range(0, 86_400, "seconds", whole=False, above=True),
    "spill_byte_limit": Range(1, 100 * GIGA, "bytes"),
    "glob_time_budget": Range(0, 3_600, "seconds", whole=False, above=True),
    "tool_output_limit": Range(1, GIGA, "characters"),
    "read_line_limit": Range(1, 100_000_000, "lines"),
    "undo_depth": Range(0, 1_000, "compactions"),
    "cache_ceiling_tokens": Range(0, 100_000_000, "tokens"),
    "clear_trigger_tokens": Range(1, 100_000_000, "tokens"),
    "clear_keep_tool_uses": Range(0, 1_000_000, "tool uses"),
    "clear_at_least_tokens": Range(0, 100_000_000, "tokens"),
    "clear_thinking_keep": Range(0, 1_000_000, "assistant turns"),
    "compact_trigger_tokens": Range(COMPACT_TRIGGER_MIN, 100_000_000, "tokens"),
    "proxy_request_limit": Range(1024, 4 * GIGA, "bytes"),
    "proxy_body_limit": Range(1024, 4 * GIGA, "bytes"),
    "proxy_reply_limit": Range(1024, 4 * GIGA, "bytes"),
}

COMPACTION_RANGES: dict[str, Range] = {
    "context_char_limit": Range(1, GIGA, "characters"),
    "micro_target_ratio": Range(0, 1, "", whole=False, above=True),
    "tool_result_batch_char_limit": Range(1, GIGA, "characters"),
    "large_result_char_limit": Range(1, GIGA, "characters"),
    "persisted_preview_chars": Range(1, GIGA, "characters"),
    "fit_preview_chars": Range(1, GIGA, "characters"),
    "keep_recent_results": Range(0, 1_000_000, "tool results"),
    "micro_min_chars": Range(0, GIGA, "characters"),
    "snip_trigger_messages": Range(3, 1_000_000, "messages"),
    "snip_target_messages": Range(3, 1_000_000, "messages"),
    "snip_keep_head": Range(1, 1_000_000, "messages"),
    "reactive_keep_messages": Range(1, 1_000_000, "messages"),
    "max_reactive_retries": Range(0, 10, "retries"),
    "summary_input_char_limit": Range(1, GIGA, "characters"),
}


class RangeError(ValueError):
    """A setting outside its range: one line naming the key, the value, its source and the range."""


def range_of(key: tuple[str, ...]) -> Range | None:
    """The range of a setting by its key: ("bash_timeout",) or ("compaction", "context_char_limit")."""
    if key[:1] == ("compaction",):
        return COMPACTION_RANGES.get(key[-1])
    return TOP_LEVEL_RANGES.get(key[-1]) if len(key) == 1 else None


def check_ranges(
    top: Mapping[str, Any], compaction: Mapping[str, Any], sources: Mapping[tuple[str, ...], str]
) -> None:
    """Refuse (RangeError) the first value outside its range, then a bash_timeout above max_bash_timeout."""
    values: list[tuple[tuple[str, ...], Any]] = [((name,), value) for name, value in top.items()]
    values += [(("compaction", name), value) for name, value in compaction.items()]
    for key, value in values:
        allowed = range_of(key)
        if allowed is not None and not allowed.holds(value):
            raise RangeError(
                f"{key[-1]} = {value!r} ({sources.get(key, 'default')}) is out of range: "
                f"it must be {allowed.describe()}"
            )
    timeout, most = top.get("bash_timeout"), top.get("max_bash_timeout")
    if isinstance(timeout, int | float) and isinstance(most, int | float) and timeout > most:
        raise RangeError(
            f"bash_timeout = {timeout!r} ({sources.get(('bash_timeout',), 'default')}) is above "
            f"max_bash_timeout = {most!r} ({sources.get(('max_bash_timeout',), 'default')}): "
            "a command may not run longer than the most any command may ask for"
        )


def exclude_tools(value: str) -> list[str]:
    """The `clear_exclude_tools` setting as the edit's `exclude_tools` list (blank items dropped)."""
    return [name.strip() for name in value.split(",") if name.strip()]


def check_engine(top: Mapping[str, Any], sources: Mapping[tuple[str, ...], str]) -> None:
    """Refuse (RangeError) engine parameters the API would refuse: an excluded tool name that is not
    a tool name, and a compaction instruction that is only whitespace (the API counts it as absent)."""
    raw = top.get("clear_exclude_tools", "")
    for name in exclude_tools(raw if isinstance(raw, str) else ""):
        if not TOOL_NAME.fullmatch(name):
            raise RangeError(
                f"clear_exclude_tools = {raw!r} ({sources.get(('clear_exclude_tools',), 'default')}): "
                f"{name!r} is not a tool name (1 to 128 of a-z A-Z 0-9 _ -)"
            )
    instructions = top.get("compact_instructions", "")
    if isinstance(instructions, str) and instructions and not instructions.strip():
        raise RangeError(
            f"compact_instructions ({sources.get(('compact_instructions',), 'default')}) is only "
            "whitespace: leave it empty for the API's own summary prompt"
        )


NOT_BLANK = ("model",)  # text settings that must name something
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


def check_text(top: Mapping[str, Any], sources: Mapping[tuple[str, ...], str]) -> None:
    """Refuse (RangeError) a text setting no request can carry: one holding bytes that are not UTF-8, and an
    empty (or blank) `model`. One line: the key, the value made visible, where it came from, and why."""
    for name, value in top.items():
        if not isinstance(value, str):
            continue
        where = sources.get((name,), "default")
        bad = _not_utf8_at(value)
        if bad is not None:
            raise RangeError(
                f"{name} = {shown_text(value, bad)} ({where}) holds bytes that are not UTF-8 "
                f"(character {bad + 1:,}): no request could carry it; set it in UTF-8"
            )
        if name in NOT_BLANK and not value.strip():
            raise RangeError(
                f"{name} = {shown_text(value)} ({where}) is empty: name a model, "
                "or leave it unset for the default"
            )
