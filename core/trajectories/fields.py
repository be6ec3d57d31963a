"""Field values of untrusted trajectory files, read one way by every importer.

Times (ISO 8601 strings or epoch numbers), tool-call arguments (a JSON object, or a string holding
one), model names, tool definitions (OpenAI or Messages API shape) and content parts appear in
ATIF, Codex and OpenHands files alike. Each helper takes any JSON value and returns a plain value
or None: a wrong-typed field costs that field, never the file.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from core import jsonlines
from core.trajectories.model import as_text

MAX_EPOCH = 1e11  # seconds; anything later (or a millisecond count) is not a time this reader trusts
MAX_TIME_CHARS = 64
MAX_NAME_CHARS = 200


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a wrong-typed field reads as absent)."""
    return value if isinstance(value, dict) else {}


def epoch_seconds(value: Any) -> float | None:
    """Seconds since the epoch of an ISO 8601 string (no zone: UTC) or a number of seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and 0 < len(value) <= MAX_TIME_CHARS:
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = moment.timestamp()
    else:
        return None
    return seconds if math.isfinite(seconds) and 0 < seconds < MAX_EPOCH else None


def arguments_dict(raw: Any) -> dict[str, Any]:
    """A tool call's input as a dict: an object as it is, a string parsed when it holds a JSON
    object, anything else (or a string that does not) kept whole under `arguments`."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        parsed = jsonlines.parse_json(raw) if raw.lstrip().startswith("{") else None
        if isinstance(parsed, dict):
            return parsed
        return {"arguments": raw}
    if raw is None:
        return {}
    return {"arguments": as_text(raw)}


def model_name(value: Any) -> str | None:
    """A model name without its provider prefix (`openai/gpt-4o` -> `gpt-4o`), or None."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_CHARS:
        return None
    return value.strip().rsplit("/", 1)[-1] or None


def tool_definitions(value: Any) -> list[dict[str, Any]]:
    """Messages API tool definitions (`name`, `description`, `input_schema`) from a list of OpenAI
    function tools (`{"type": "function", "function": {...}}`), bare functions or Messages API
    tools; entries without a name are left out."""
    if not isinstance(value, list):
        return []
    tools: list[dict[str, Any]] = []
    for entry in value:
        if not isinstance(entry, dict):
            continue
        function = as_dict(entry.get("function")) or entry
        name = function.get("name")
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            continue
        schema = next(
            (
                function[key]
                for key in ("input_schema", "parameters", "inputSchema")
                if isinstance(function.get(key), dict)
            ),
            {"type": "object", "properties": {}},
        )
        description = function.get("description")
        tools.append(
            {
                "name": name,
                "description": description if isinstance(description, str) else "",
                "input_schema": schema,
            }
        )
    return tools


def parts_text(value: Any) -> tuple[str, int]:
    """The text a message's content carries, and how many non-text parts (images, audio) it had.

    A string is itself; a list of parts gives the `text` of each part that has one, joined by
    newlines, and `[image]` (the part's type) for each part that has none.
    """
    if isinstance(value, str):
        return value, 0
    if not isinstance(value, list):
        return as_text(value), 0
    texts: list[str] = []
    other = 0
    for part in value:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            other += 1
            kind = part.get("type") if isinstance(part, dict) else None
            texts.append(f"[{kind if isinstance(kind, str) and len(kind) <= 40 else 'part'}]")
    return "\n".join(texts), other
