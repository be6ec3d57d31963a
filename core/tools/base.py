"""What every tool shares: the result type, the tool-level error, the tool protocol and input checks.

Each tool module holds its schema beside its implementation; this module is the one place the
checks of model-chosen input live, so every tool refuses bad input with the same one-line errors.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

OutputSink = Callable[[str], None]
"""Takes a running tool's output in pieces as it prints it (a tool with `streams_output` calls it)."""


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns to the model: text, and whether it describes a failure."""

    content: str
    is_error: bool = False


class ToolError(Exception):
    """A tool-level failure reported to the model as an error result (one line)."""


class Tool(Protocol):
    """One tool: its name, whether it needs the user's consent, its schema and its implementation."""

    name: str
    needs_permission: bool

    def schema(self) -> dict[str, Any]:
        """The Anthropic tool definition (a fresh dict each call)."""
        ...

    async def run(self, tool_input: dict[str, Any]) -> ToolOutput:
        """Do the work; raise ToolError (or WorkspaceError, OSError) for a failure the model should read."""
        ...

    async def preview(self, tool_input: dict[str, Any]) -> str:
        """What the consent dialog shows besides the exact input ("" when there is nothing to add)."""
        ...


def fold_lines(text: str) -> str:
    """`text` with every line break (and the blanks around it) folded into one space."""
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


def not_relative(text: str, noun: str) -> str | None:
    """Why `text` cannot name something inside the workspace (empty, NUL byte, absolute), or None."""
    if not text.strip():
        return f"{noun.capitalize()} is empty."
    if "\x00" in text:
        return f"{noun.capitalize()} {text!r} contains a NUL byte."
    if os.path.isabs(text):
        return f"Absolute {noun} {text!r} is not allowed; use a {noun} relative to the workspace root."
    return None


def require_str(tool_input: dict[str, Any], key: str, *, allow_empty: bool = True) -> str:
    """The string field `key`; missing, non-string (and, unless allowed, empty) values are refused."""
    value = tool_input.get(key)
    if value is None:
        raise ToolError(f"Missing required input field {key!r}.")
    if not isinstance(value, str):
        raise ToolError(f"Input field {key!r} must be a string, got {type(value).__name__}.")
    if not allow_empty and value == "":
        raise ToolError(f"Input field {key!r} must not be empty.")
    return value


def optional_str(tool_input: dict[str, Any], key: str) -> str | None:
    """The string field `key` if present (None when absent); other types are refused."""
    value = tool_input.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ToolError(f"Input field {key!r} must be a string, got {type(value).__name__}.")


def optional_positive_int(tool_input: dict[str, Any], key: str) -> int | None:
    """A positive whole number (2.0 counts as 2), or None when absent."""
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError(f"Input field {key!r} must be a positive integer, got {value!r}.")
    return value


def optional_seconds(tool_input: dict[str, Any], key: str) -> float | None:
    """A positive, finite number of seconds, or None when absent."""
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ToolError(f"Input field {key!r} must be a positive number of seconds, got {value!r}.")
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float: as large as a float goes
        return sys.float_info.max
