"""OpenHands trajectories: the event list OpenHands saves (`save_trajectory_path`, the UI's download,
`{"trajectory": [...]}` from its API) or an evaluation record's `history` (`output.jsonl`: one
instance a line; its model is the one the responses name, else `metadata.llm_config.model`).

Each event (openhands/events/serialization/event.py) has `id`, `timestamp` (ISO, the machine's
local time without a zone: read as UTC), `source` (user, agent, environment) and either `action`
(message, system, run, read, edit, think, finish, recall, condensation...) with `args`, or
`observation` (run, read, edit, error, recall, agent_state_changed, null...) with `content`,
`extras` and `cause`. An action the model chose carries `tool_call_metadata` (`tool_call_id`,
`function_name`, `model_response`: the provider's whole reply); so does its observation.

Converted as OpenHands' ConversationMemory builds its prompt: the `system` action is the system
prompt and its `tools` the tools; the actions of one model response (one `model_response.id`) are
one assistant turn, its text the response's message content and its tool calls the response's
`tool_calls` (the arguments the model wrote; the action's `args` when the response is missing); an
observation with `tool_call_metadata` is that call's result (a command's output with the exit-code
lines OpenHands appends). User messages are user text; environment bookkeeping (state changes, null
observations) is skipped. What OpenHands renders from a template (the workspace context of a recall)
is approximated from its fields, and a condensation is noted: every event is kept as the model
first read it, its summaries are left out.
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

SOURCES = ("user", "agent", "environment")
PROBE = 20  # events looked at to recognise a trajectory
QUIET_OBSERVATIONS = ("null", "agent_state_changed", "loop_detection", "success")
QUIET_ACTIONS = (
    "null",
    "change_agent_state",
    "recall",
    "pause",
    "resume",
    "stop",
    "condensation_request",
    "loop_recovery",
    "start",
    "reject",
)
BOOKKEEPING_ARGS = (
    "thought",
    "confirmation_state",
    "hidden",
    "impl_source",
    "is_static",
    "blocking",
    "security_risk",
)


def _is_event(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("source") in SOURCES
        and (isinstance(value.get("action"), str) or isinstance(value.get("observation"), str))
    )


def _events(data: Any) -> tuple[list[Any] | None, dict[str, Any], int]:
    """The events of the file, its evaluation record (or {}), and how many more records the file has."""
    if isinstance(data, dict):
        for key in ("history", "trajectory"):
            if isinstance(data.get(key), list):
                return data[key], data, 0
        return None, {}, 0
    if not isinstance(data, list):
        return None, {}, 0
    if any(_is_event(event) for event in data[:PROBE]):
        return data, {}, 0
    records = [
        record for record in data if isinstance(record, dict) and isinstance(record.get("history"), list)
    ]
    if records:
        return records[0]["history"], records[0], len(records) - 1
    return None, {}, 0


def looks_like(data: Any) -> bool:
    """A list of OpenHands events (or a record holding one under `history` or `trajectory`)."""
    events, _, _ = _events(data)
    return events is not None and any(_is_event(event) for event in events[:PROBE])


def _run_output(event: dict[str, Any]) -> str:
    """A command's output as the model read it (CmdOutputObservation.to_agent_observation)."""
    extras = as_dict(event.get("extras"))
    metadata = as_dict(extras.get("metadata"))
    text = as_text(metadata.get("prefix")) + as_text(event.get("content")) + as_text(metadata.get("suffix"))
    if isinstance(metadata.get("working_dir"), str) and metadata["working_dir"]:
        text += f"\n[Current working directory: {metadata['working_dir']}]"
    if isinstance(metadata.get("py_interpreter_path"), str) and metadata["py_interpreter_path"]:
        text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
    exit_code = metadata.get("exit_code", extras.get("exit_code"))
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != -1:
        text += f"\n[Command finished with exit code {exit_code}]"
    return text


def _observation_text(event: dict[str, Any]) -> str:
    kind = event.get("observation")
    content = as_text(event.get("content"))
    if kind == "run":
        return _run_output(event)
    if kind == "error":
        return content + "\n[Error occurred in processing last action]"
    if kind == "user_rejected":
        return "OBSERVATION:\n" + content + "\n[Last action has been rejected by the user]"
    return content


def _recall_text(event: dict[str, Any]) -> str:
    """The workspace context and knowledge a recall added, approximated from its fields (OpenHands
    renders them through its prompt templates, which the file does not hold)."""
    extras = as_dict(event.get("extras"))
    parts = [
        extras[key]
        for key in ("repo_instructions", "additional_agent_instructions", "conversation_instructions")
        if isinstance(extras.get(key), str)
    ]
    knowledge = extras.get("microagent_knowledge")
    for agent in knowledge if isinstance(knowledge, list) else []:
        if isinstance(agent, dict) and isinstance(agent.get("content"), str):
            parts.append(agent["content"])
    return "\n\n".join(part for part in parts if part.strip())


class _Reader:
    """The state of one trajectory's conversion."""

    def __init__(self) -> None:
        self.builder = HistoryBuilder()
        self.system: list[str] = []
        self.tools: list[dict[str, Any]] = []
        self.models: list[str] = []
        self.skipped = 0
        self.malformed = 0
        self.response: str | None = None  # the model response whose calls the last assistant turn holds
        self.condensations = 0
        self.recalls = 0
        self.text_actions = 0

    def event(self, event: Any) -> None:
        if not _is_event(event):
            self.malformed += 1
            return
        if isinstance(event.get("action"), str):
            self.action(event)
        else:
            self.observation(event)

    def action(self, event: dict[str, Any]) -> None:
        kind, source = event["action"], event["source"]
        args = as_dict(event.get("args"))
        metadata = as_dict(event.get("tool_call_metadata"))
        if kind == "system":
            text = args.get("content", event.get("message"))
            if isinstance(text, str) and text:
                self.system.append(text)
            self.tools = self.tools or tool_definitions(args.get("tools"))
        elif kind == "message":
            text = parts_text(args.get("content", event.get("message")))[0]
            if source == "agent":
                self.response = None
                self.builder.assistant(text, [], self.time(event, metadata))
            else:
                self.user(text)
        elif metadata and source == "agent":
            self.tool_call(event, args, metadata)
        elif kind == "run" and source == "user":
            self.user("User executed the command:\n" + as_text(args.get("command")))
        elif kind == "condensation":
            self.condensations += 1
            self.skipped += 1
        elif kind in QUIET_ACTIONS or source != "agent":
            self.skipped += 1
        else:  # an agent action without function calling: what the model wrote is not in the file
            self.text_actions += 1
            self.response = None
            texts = [args.get("thought"), args.get("final_thought"), event.get("message")]
            self.builder.assistant(
                "\n".join(text for text in texts if isinstance(text, str) and text),
                [],
                self.time(event, metadata),
            )

    def tool_call(self, event: dict[str, Any], args: dict[str, Any], metadata: dict[str, Any]) -> None:
        """An action the model chose: one turn per model response, holding all of the response's calls."""
        response = as_dict(metadata.get("model_response"))
        response_id = response.get("id") if isinstance(response.get("id"), str) else None
        if response_id is not None and response_id == self.response:
            return  # another action of the response already added (it holds every call of the response)
        name = model_name(response.get("model"))
        if name and name not in self.models:
            self.models.append(name)
        choices = response.get("choices")
        message = as_dict(as_dict(choices[0]).get("message")) if isinstance(choices, list) and choices else {}
        calls = []
        raw_calls = message.get("tool_calls")
        for call in raw_calls if isinstance(raw_calls, list) else []:
            function = as_dict(as_dict(call).get("function"))
            call_id, function_name = as_dict(call).get("id"), function.get("name")
            if isinstance(call_id, str) and isinstance(function_name, str):
                calls.append((call_id, function_name, arguments_dict(function.get("arguments"))))
        if not calls:
            call_id, function_name = metadata.get("tool_call_id"), metadata.get("function_name")
            calls = [
                (
                    call_id if isinstance(call_id, str) else "",
                    function_name if isinstance(function_name, str) else event["action"],
                    {key: value for key, value in args.items() if key not in BOOKKEEPING_ARGS},
                )
            ]
        text = message.get("content") if isinstance(message.get("content"), str) else args.get("thought")
        self.builder.assistant(
            text.strip() if isinstance(text, str) else "", calls, self.time(event, metadata)
        )
        self.response = response_id

    def observation(self, event: dict[str, Any]) -> None:
        kind = event["observation"]
        metadata = as_dict(event.get("tool_call_metadata"))
        call_id = metadata.get("tool_call_id")
        if isinstance(call_id, str) and call_id:
            self.builder.tool_result(call_id, _observation_text(event), is_error=kind == "error")
        elif kind == "recall":
            text = _recall_text(event)
            self.recalls += 1
            if text:
                self.user(text)
        elif kind in QUIET_OBSERVATIONS or not as_text(event.get("content")):
            self.skipped += 1
        elif kind == "run":
            self.user("\nObserved result of command executed by user:\n" + _run_output(event))
        else:
            self.user(_observation_text(event))

    def user(self, text: str) -> None:
        self.response = None
        self.builder.user_text(text)

    @staticmethod
    def time(event: dict[str, Any], metadata: dict[str, Any]) -> float | None:
        """When the model replied: its response's `created`, else the event's timestamp."""
        created = as_dict(metadata.get("model_response")).get("created")
        return epoch_seconds(created) or epoch_seconds(event.get("timestamp"))

    def notes(self) -> list[str]:
        notes: list[str] = []
        if self.condensations:
            notes.append(
                f"OpenHands condensed the history {self.condensations} time(s): every event is "
                "kept as the model first read it, the summaries are left out"
            )
        if self.recalls:
            notes.append(
                f"{self.recalls} recall observation(s): the workspace context is approximated "
                "from its fields (OpenHands renders it with templates the file does not hold)"
            )
        if self.text_actions:
            notes.append(
                f"{self.text_actions} agent action(s) without tool_call_metadata (no function "
                "calling) kept as assistant text"
            )
        if self.malformed:
            notes.append(f"{self.malformed} entry(ies) not an OpenHands event left out")
        if len(self.models) > 1:
            notes.append(f"models used: {', '.join(self.models)}; the trajectory's model is the first")
        return notes


def read(path: Path, data: Any) -> Trajectory:
    """The trajectory in `data` (already parsed from `path`)."""
    events, record, more = _events(data)
    if events is None:
        raise TrajectoryError(f"{path}: an OpenHands trajectory without a list of events")
    reader = _Reader()
    for event in events:
        reader.event(event)
    history, times, notes = reader.builder.finish()
    if not any(message["role"] == "assistant" for message in history):
        raise TrajectoryError(f"{path}: an OpenHands trajectory with no agent turn")
    notes.extend(reader.notes())
    if more:
        notes.append(f"{more} more evaluation record(s) in the file not read (the first is)")
    configured = model_name(as_dict(as_dict(record.get("metadata")).get("llm_config")).get("model"))
    return Trajectory(
        path,
        "openhands",
        history,
        system="\n\n".join(reader.system) or None,
        tools=reader.tools,
        model=reader.models[0] if reader.models else configured,
        times=times,
        notes=notes,
        skipped=reader.skipped + reader.malformed,
    )
