"""ATIF trajectories (Agent Trajectory Interchange Format, Harbor's `trajectory.json`).

One JSON object: `schema_version` ("ATIF-v1.x"), `agent` (`name`, `model_name`, `tool_definitions`:
OpenAI-style function tools), `steps` in turn order, optionally `continued_trajectory_ref` (a file
that continues the run, e.g. after a context summarization) and `subagent_trajectories`. A step has
`source` (system, user or agent), `message` (a string or a list of content parts), `timestamp` (ISO
8601) and, on agent steps, `model_name`, `reasoning_content`, `tool_calls` (`tool_call_id`,
`function_name`, `arguments`) and `observation.results` (`source_call_id`, `content`). Read with
plain dict access (not the `atif` package's pydantic models, which refuse a whole file for one
stray field, where a partial history is what inspection wants).

System steps before the conversation starts are the system prompt; a later system step is an
infrastructure event (OpenHands' "Added workspace context", Terminus' summarization hand-off) the
model did not read: left out and noted. A result without `source_call_id` (agents that parse tool
calls out of text, such as Terminus) answers the step's calls in order; with no call left it is the
text the model read next.
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
from core.trajectories.model import HistoryBuilder, Trajectory, TrajectoryError

SOURCES = ("system", "user", "agent")


def looks_like(data: Any) -> bool:
    """An ATIF document: a `schema_version` starting "ATIF", or `steps` beside an `agent` object."""
    if not isinstance(data, dict):
        return False
    version = data.get("schema_version")
    if isinstance(version, str) and version[:4].upper() == "ATIF":
        return True
    agent = data.get("agent")
    return isinstance(data.get("steps"), list) and isinstance(agent, dict) and "name" in agent


class _Reader:
    """The state of one ATIF file's conversion."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.builder = HistoryBuilder()
        self.system: list[str] = []
        self.malformed = 0
        self.late_system: list[str] = []
        self.reasoning = 0
        self.paired_in_order = 0
        self.media = 0
        self.models: list[str] = []

    def text(self, value: Any) -> str:
        text, media = parts_text(value)
        self.media += media
        return text

    def step(self, step: Any) -> None:
        if not isinstance(step, dict) or step.get("source") not in SOURCES:
            self.malformed += 1
            return
        source = step["source"]
        message = self.text(step.get("message"))
        if source == "system":
            if self.builder.messages:
                self.late_system.append(message[:80])
            else:
                self.system.append(message)
            return
        if source == "user":
            self.builder.user_text(message)
            self.observation(step.get("observation"), [])
            return
        self.agent(step, message)

    def agent(self, step: dict[str, Any], message: str) -> None:
        name = model_name(step.get("model_name"))
        if name and name not in self.models:
            self.models.append(name)
        if step.get("reasoning_content"):
            self.reasoning += 1
        calls: list[tuple[str, str, dict[str, Any]]] = []
        raw_calls = step.get("tool_calls")
        for call in raw_calls if isinstance(raw_calls, list) else []:
            if not isinstance(call, dict):
                continue
            call_id = call.get("tool_call_id")
            function = call.get("function_name")
            calls.append(
                (
                    call_id if isinstance(call_id, str) else "",
                    function if isinstance(function, str) else "tool",
                    arguments_dict(call.get("arguments")),
                )
            )
        self.builder.assistant(message, calls, epoch_seconds(step.get("timestamp")))
        uses = [block for block in self.builder.messages[-1]["content"] if block.get("type") == "tool_use"]
        # The builder makes a repeated id unique: pair each call's id in the file with the id it got.
        mine = uses[len(uses) - len(calls) :]
        given = [(call[0], block["id"]) for call, block in zip(calls, mine, strict=True)]
        self.observation(step.get("observation"), given)

    def observation(self, observation: Any, calls: list[tuple[str, str]]) -> None:
        """Results of this step's `calls` ((file id, history id) pairs), then any other results."""
        results = observation.get("results") if isinstance(observation, dict) else None
        if not isinstance(results, list):
            return
        open_calls = list(calls)
        for result in results:
            if not isinstance(result, dict):
                self.malformed += 1
                continue
            content = self.text(result.get("content"))
            if not content and result.get("subagent_trajectory_ref"):
                content = "[a sub-agent's trajectory: not in this file]"
            source = result.get("source_call_id")
            named = next((call for call in open_calls if isinstance(source, str) and call[0] == source), None)
            if named is not None:
                open_calls.remove(named)
                self.builder.tool_result(named[1], content)
            elif isinstance(source, str) and source:
                self.builder.tool_result(source, content)  # an earlier step's call, or else kept as text
            elif open_calls:
                self.paired_in_order += 1
                self.builder.tool_result(open_calls.pop(0)[1], content)
            else:
                self.builder.user_text(content)

    def notes(self, data: dict[str, Any]) -> list[str]:
        notes: list[str] = []
        if self.late_system:
            notes.append(
                f"{len(self.late_system)} system step(s) after the conversation began left out "
                f"(events the model did not read), first: {self.late_system[0]!r}"
            )
        if self.paired_in_order:
            notes.append(
                f"{self.paired_in_order} observation result(s) without source_call_id answered "
                "their step's tool calls in order"
            )
        if self.reasoning:
            notes.append(f"{self.reasoning} agent step(s) carried reasoning_content: left out")
        if self.media:
            notes.append(f"{self.media} image or audio part(s) kept as a placeholder")
        if len(self.models) > 1:
            notes.append(f"models used: {', '.join(self.models)}; the trajectory's model is the first")
        reference = data.get("continued_trajectory_ref")
        if isinstance(reference, str) and reference:
            notes.append(f"the run continues in {reference[:200]!r} (not read)")
        embedded = data.get("subagent_trajectories")
        if isinstance(embedded, list) and embedded:
            notes.append(f"{len(embedded)} embedded sub-agent trajectory(ies) not read")
        return notes


def read(path: Path, data: dict[str, Any]) -> Trajectory:
    """The trajectory in `data` (already parsed from `path`)."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise TrajectoryError(f"{path}: an ATIF trajectory without a list of steps")
    reader = _Reader(path)
    for step in steps:
        reader.step(step)
    history, times, notes = reader.builder.finish()
    if not any(message["role"] == "assistant" for message in history):
        raise TrajectoryError(f"{path}: an ATIF trajectory with no agent step")
    agent = as_dict(data.get("agent"))
    model = model_name(agent.get("model_name")) or (reader.models[0] if reader.models else None)
    notes.extend(reader.notes(data))
    if reader.malformed:
        notes.append(f"{reader.malformed} step(s) or result(s) not of ATIF's shape left out")
    return Trajectory(
        path,
        "atif",
        history,
        system="\n\n".join(reader.system) or None,
        tools=tool_definitions(agent.get("tool_definitions")),
        model=model,
        times=times,
        notes=notes,
        skipped=reader.malformed + len(reader.late_system),
    )
