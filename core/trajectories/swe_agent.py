"""SWE-agent and mini-swe-agent trajectories (`*.traj.json`, `*.traj`).

mini-swe-agent writes `{"trajectory_format": "mini-swe-agent-1.x", "messages": [...], "info": {...}}`:
OpenAI chat messages (`system`, `user`, `assistant` with `tool_calls`, `tool` with `tool_call_id`, and a
last `exit` message that the model never read). SWE-agent writes `{"history": [...], "trajectory": [...],
"info": {...}}` with the same chat messages (a `tool` message may name its call in `tool_call_ids`).
Text-based runs (no function calling) have no tool calls: their observations stay user text.

Each message's `extra` (the raw output again, the provider's full response) is not what the model read
and is left out; its timestamp (`extra.response.created`, `extra.timestamp`) times the call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.jsonlines import BadLine, parse_json
from core.trajectories.model import HistoryBuilder, Trajectory, TrajectoryError, as_text

BASH_TOOL = {
    "name": "bash",
    "description": "Execute a bash command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
        "required": ["command"],
    },
}
"""The one tool mini-swe-agent offers (its BASH_TOOL), as a Messages API definition."""

CHAT_ROLES = ("system", "user", "assistant", "tool", "exit")


def looks_like(data: Any) -> bool:
    """A SWE-agent or mini-swe-agent trajectory: chat messages under `messages` or `history`."""
    if not isinstance(data, dict):
        return False
    if str(data.get("trajectory_format", "")).startswith("mini-swe-agent"):
        return True
    messages = data.get("messages") if isinstance(data.get("messages"), list) else data.get("history")
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
        return False
    roles = {message.get("role") for message in messages[:50] if isinstance(message, dict)}
    return "system" in roles or "tool" in roles or ("trajectory" in data and "info" in data)


def _time(message: dict[str, Any]) -> float | None:
    extra = message.get("extra")
    if isinstance(extra, dict):
        response = extra.get("response")
        for value in (
            (response or {}).get("created") if isinstance(response, dict) else None,
            extra.get("timestamp"),
        ):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e11:
                return float(value)
    return None


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        parsed = parse_json(raw)  # core/jsonlines.py: not JSON, or nested too deep, stays the text it is
        if isinstance(parsed, BadLine):
            return {"arguments": raw}
        return parsed if isinstance(parsed, dict) else {"arguments": parsed}
    return {"arguments": as_text(raw)}


def _model(data: dict[str, Any]) -> str | None:
    info = data.get("info")
    config = info.get("config") if isinstance(info, dict) else None
    model = config.get("model") if isinstance(config, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    if isinstance(name, str) and name:
        return name.rsplit("/", 1)[-1]
    return None


def read(path: Path, data: dict[str, Any]) -> Trajectory:
    """The trajectory in `data` (already parsed from `path`)."""
    messages = data.get("messages") if isinstance(data.get("messages"), list) else data.get("history")
    if not isinstance(messages, list):
        raise TrajectoryError(f"{path}: a SWE-agent trajectory without a list of messages")
    builder = HistoryBuilder()
    system: list[str] = []
    skipped = 0
    tools_used = False
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in CHAT_ROLES:
            skipped += 1
            continue
        role = message["role"]
        content = as_text(message.get("content"))
        if role == "system":
            system.append(content)
        elif role == "exit":
            continue  # the harness's record of the end; never sent to the model
        elif role == "user":
            builder.user_text(content)
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    continue
                calls.append(
                    (
                        str(call.get("id") or ""),
                        str(function.get("name") or "tool"),
                        _arguments(function.get("arguments")),
                    )
                )
            tools_used = tools_used or bool(calls)
            builder.assistant(content, calls, _time(message))
        else:
            use_id = message.get("tool_call_id")
            if use_id is None and isinstance(message.get("tool_call_ids"), list) and message["tool_call_ids"]:
                use_id = message["tool_call_ids"][0]
            builder.tool_result(str(use_id), content)
    history, times, notes = builder.finish()
    if not any(message["role"] == "assistant" for message in history):
        raise TrajectoryError(f"{path}: a SWE-agent trajectory with no assistant message")
    if skipped:
        notes.append(f"{skipped} message(s) not of a chat shape left out")
    return Trajectory(
        path,
        "swe-agent",
        history,
        system="\n\n".join(system) or None,
        tools=[BASH_TOOL] if tools_used else [],
        model=_model(data),
        times=times,
        notes=notes,
        skipped=skipped,
    )
