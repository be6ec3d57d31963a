"""Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

One record a line, `{"timestamp", "type", "payload"}` (codex-rs/protocol: `RolloutLine`,
`RolloutItem`). `session_meta` carries `base_instructions` (the Responses API `instructions`: the
system prompt; older files: `instructions`) and `dynamic_tools`; `turn_context` the `model`;
`response_item` one item of the model's input or output (`ResponseItem`): `message` (role user,
assistant or developer; `input_text` / `output_text` parts), `function_call` (`name`, `arguments`: a
JSON string, `call_id`), `function_call_output` (`call_id`, `output`: a string, or content items),
`custom_tool_call` (`input`: free text) and its `custom_tool_call_output`, `local_shell_call`
(`action.command`), `reasoning` (encrypted), `web_search_call`, `compaction` (encrypted);
`event_msg` what the UI showed (the same conversation again, token counts); `compacted` a summary
that replaced the history (`message`, `replacement_history`).

The items the model produced between two inputs form one assistant turn. Developer messages before
the first reply join the system prompt; a later one stays where the model read it, as user text.
A compaction is noted: every item is kept as the model first read it, the summaries are left out,
so an engine replays the uncompacted run. Encrypted items (reasoning, a server compaction) and web
searches the provider ran carry nothing readable: counted in `skipped` and noted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.trajectories.fields import (
    arguments_dict,
    as_dict,
    epoch_seconds,
    model_name,
    parts_text,
    tool_definitions,
)
from core.trajectories.model import HistoryBuilder, Trajectory, TrajectoryError, as_text

RECORD_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output")
UNREADABLE = {
    "reasoning": "reasoning item(s) (encrypted)",
    "web_search_call": "web search(es) the provider ran",
    "compaction": "server compaction item(s) (encrypted)",
    "compaction_summary": "server compaction item(s) (encrypted)",
}
PROBE = 50  # records looked at to recognise a rollout


def _is_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") in RECORD_TYPES
        and isinstance(record.get("payload"), dict)
    )


def looks_like(data: Any) -> bool:
    """A Codex rollout: JSON Lines records of Codex's `type` + `payload` shape, with a session or an item."""
    records = [data] if isinstance(data, dict) else data
    if not isinstance(records, list):
        return False
    probe = [record for record in records[:PROBE] if isinstance(record, dict)]
    known = [record for record in probe if _is_record(record)]
    return 2 * len(known) >= len(probe) and any(
        record["type"] in ("session_meta", "response_item") for record in known
    )


def _output_text(payload: dict[str, Any]) -> tuple[str, bool]:
    """A tool output as the model read it, and whether it reports a failure."""
    output = payload.get("output", payload.get("result"))
    if isinstance(output, dict):  # older files, and MCP results: {"content": ..., "success": ...}
        failed = output.get("success") is False or output.get("is_error") is True
        return parts_text(output.get("content", output.get("Ok", output.get("Err"))))[0], failed
    return parts_text(output)[0], False


class _Reader:
    """The state of one rollout's conversion."""

    def __init__(self, use_user_events: bool) -> None:
        self.builder = HistoryBuilder()
        self.use_user_events = use_user_events
        self.system: list[str] = []
        self.tools: list[dict[str, Any]] = []
        self.models: list[str] = []
        self.skipped = 0
        self.unreadable: dict[str, int] = {}
        self.late_developer = 0
        self.compactions: list[int] = []  # the call each compaction came before
        self.compaction_events = 0
        self.started: float | None = None  # when the response being read began (its first item)
        self.texts: list[str] = []  # the response being read: its messages and calls, sent as one turn
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def record(self, record: Any) -> None:
        if not _is_record(record):
            self.skipped += 1
            return
        kind, payload = record["type"], record["payload"]
        time = epoch_seconds(record.get("timestamp"))
        if kind == "session_meta":
            self.session(payload)
        elif kind == "turn_context":
            name = model_name(payload.get("model"))
            if name and name not in self.models:
                self.models.append(name)
        elif kind == "compacted":
            self.flush()
            self.compactions.append(len(self.builder.times) + 1)
        elif kind == "event_msg":
            self.event(payload)
        else:
            self.item(payload, time)

    def session(self, payload: dict[str, Any]) -> None:
        instructions = payload.get("base_instructions", payload.get("instructions"))
        text = instructions.get("text") if isinstance(instructions, dict) else instructions
        if isinstance(text, str) and text and text not in self.system:
            self.system.insert(0, text)
        self.tools.extend(
            tool
            for tool in tool_definitions(payload.get("dynamic_tools"))
            if tool["name"] not in {known["name"] for known in self.tools}
        )

    def event(self, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind == "context_compacted":
            self.compaction_events += 1
        elif kind == "user_message" and self.use_user_events and isinstance(payload.get("message"), str):
            self.flush()
            self.builder.user_text(payload["message"])

    def item(self, payload: dict[str, Any], time: float | None) -> None:
        kind = payload.get("type") if isinstance(payload.get("type"), str) else ""
        if kind in UNREADABLE:
            self.skipped += 1
            self.unreadable[UNREADABLE[kind]] = self.unreadable.get(UNREADABLE[kind], 0) + 1
            self.started = time if self.started is None else self.started
        elif kind == "message":
            self.message(payload, time)
        elif kind in CALLS:
            self.started = time if self.started is None else self.started
            self.calls.append(self.call(payload))
        elif kind in OUTPUTS:
            self.flush()
            call_id = payload.get("call_id")
            text, failed = _output_text(payload)
            self.builder.tool_result(call_id if isinstance(call_id, str) else "", text, is_error=failed)
        else:
            self.skipped += 1
            self.unreadable["other item(s)"] = self.unreadable.get("other item(s)", 0) + 1

    def message(self, payload: dict[str, Any], time: float | None) -> None:
        role = payload.get("role")
        text = parts_text(payload.get("content"))[0]
        if role == "assistant":
            self.started = time if self.started is None else self.started
            self.texts.append(text)
        elif role in ("developer", "system") and not (self.builder.times or self.texts or self.calls):
            if text:
                self.system.append(text)
        elif role in ("developer", "system", "user"):
            self.flush()
            self.late_developer += role != "user"
            self.builder.user_text(text)
        else:
            self.skipped += 1

    def call(self, payload: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        kind = payload["type"]
        call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else payload.get("id")
        name = payload["name"] if isinstance(payload.get("name"), str) else "tool"
        if kind == "function_call":
            arguments = arguments_dict(payload.get("arguments"))
        elif kind == "custom_tool_call":
            arguments = {"input": as_text(payload.get("input"))}
        else:
            name, arguments = "local_shell", as_dict(payload.get("action"))
        return (call_id if isinstance(call_id, str) else "", name, arguments)

    def flush(self) -> None:
        """The response read so far as one assistant turn, timed by its first item (reasoning included)."""
        if self.texts or self.calls:
            self.builder.assistant("\n".join(text for text in self.texts if text), self.calls, self.started)
        self.texts, self.calls, self.started = [], [], None

    def notes(self) -> list[str]:
        notes = [f"{count} {what} left out" for what, count in self.unreadable.items()]
        compactions = len(self.compactions) or self.compaction_events
        if compactions:
            where = f" (before call {', '.join(map(str, self.compactions))})" if self.compactions else ""
            notes.append(
                f"Codex compacted the history {compactions} time(s){where}: every item is kept "
                "as the model first read it, Codex's summaries are left out"
            )
        if self.late_developer:
            notes.append(
                f"{self.late_developer} developer message(s) after the first reply kept in place as user text"
            )
        if self.use_user_events:
            notes.append(
                "no user message items: the user's messages are taken from the UI's user_message events"
            )
        if len(self.models) > 1:
            notes.append(f"models used: {', '.join(self.models)}; the trajectory's model is the first")
        return notes


def read(path: Path, data: Any) -> Trajectory:
    """The trajectory in `data` (the parsed records of `path`)."""
    records = [data] if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise TrajectoryError(f"{path}: a Codex rollout that is not a list of records")
    has_user_items = any(
        _is_record(record)
        and record["type"] == "response_item"
        and record["payload"].get("type") == "message"
        and record["payload"].get("role") == "user"
        for record in records
    )
    reader = _Reader(use_user_events=not has_user_items)
    for record in records:
        reader.record(record)
    reader.flush()
    history, times, notes = reader.builder.finish()
    if not any(message["role"] == "assistant" for message in history):
        raise TrajectoryError(f"{path}: a Codex rollout with no model reply")
    notes.extend(reader.notes())
    bad = sum(1 for record in records if not _is_record(record))
    if bad:
        notes.append(f"{bad} line(s) not a Codex record left out")
    return Trajectory(
        path,
        "codex",
        history,
        system="\n\n".join(reader.system) or None,
        tools=reader.tools,
        model=reader.models[0] if reader.models else None,
        times=times,
        notes=notes,
        skipped=reader.skipped,
    )
