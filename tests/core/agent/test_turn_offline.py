"""Integration tests of the agent loop without a network: the offline model, or a scripted one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.events import (
    AgentEvent,
    CompactionStep,
    ErrorEvent,
    HistoryChanged,
    ToolCallFinished,
    TurnFinished,
)
from core.history import estimate_chars, pairing_problems
from core.markers import parse_marker
from core.model.base import ModelEvent, ModelResponse, TextChunk
from core.model.offline import OfflineModel
from core.tools import COMPACT_TOOL_OUTPUT, PERMISSION_DENIED
from tests.support.permission import answered, give_policy, run
from tui.demo import DEMO_COMMANDS, build_demo_workspace

Message = dict[str, Any]


@pytest.fixture(autouse=True)
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may reach a network: no key, and a base URL nobody listens on."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")


def settings_for(workdir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"workdir": workdir, "offline": True, "compaction": CompactionSettings()}
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
async def agents() -> AsyncIterator[list[Agent]]:
    created: list[Agent] = []
    yield created
    for agent in created:
        await agent.aclose()


def make(agents: list[Agent], workdir: Path, permission: Any = None, model: Any = None, **overrides: Any) -> Agent:
    agent = give_policy(Agent.from_settings(settings_for(workdir, **overrides), model=model), permission)
    agents.append(agent)
    return agent


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def tool_results(messages: list[Message]) -> list[dict[str, Any]]:
    return [
        block
        for message in messages
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def assert_valid(agent: Agent) -> None:
    assert pairing_problems(agent.messages) == []
    assert agent.chars == estimate_chars(agent.messages)


# --------------------------------------------------------------------------- workspace and permission


async def test_the_offline_model_is_chosen_without_a_key(agents: list[Agent], tmp_path: Path) -> None:
    agent = make(agents, tmp_path, offline=False)
    assert isinstance(agent.model, OfflineModel)


async def test_reading_outside_the_workspace_is_refused(agents: list[Agent], tmp_path: Path) -> None:
    workdir = tmp_path / "project" / "inner"
    workdir.mkdir(parents=True)
    (tmp_path / "project" / "secret.txt").write_text("TOP-SECRET-CONTENT\n", encoding="utf-8")
    agent = make(agents, workdir)
    events = await run(agent, "read ../secret.txt ../../etc/passwd /etc/passwd")
    finished_calls = of(events, ToolCallFinished)
    assert [call.input["path"] for call in finished_calls] == ["../secret.txt", "../../etc/passwd", "/etc/passwd"]
    results = tool_results(agent.messages)
    assert len(results) == 3
    for call, result in zip(finished_calls, results, strict=True):
        assert call.is_error and result.get("is_error") is True
        assert call.output == result["content"]
        if call.input["path"].startswith(".."):
            assert "outside" in result["content"]
        else:  # an absolute path is refused with its own message
            assert "not allowed" in result["content"] or "outside" in result["content"]
        assert "TOP-SECRET-CONTENT" not in result["content"] and "root:" not in result["content"]
    assert of(events, TurnFinished)[0].error is None
    assert_valid(agent)


async def test_bash_is_denied_without_a_permission_callback(agents: list[Agent], tmp_path: Path) -> None:
    agent = make(agents, tmp_path, permission=None)
    events = await run(agent, "run touch made.txt")
    (result,) = tool_results(agent.messages)
    assert result["content"] == PERMISSION_DENIED
    assert "denied" in result["content"].lower()
    assert result.get("is_error") is True
    assert of(events, ToolCallFinished)[0].is_error
    assert not (tmp_path / "made.txt").exists()
    assert_valid(agent)


async def test_bash_runs_when_the_callback_allows_it(agents: list[Agent], tmp_path: Path) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def allow(tool_name: str, tool_input: dict[str, Any]) -> bool:
        asked.append((tool_name, dict(tool_input)))
        return True

    agent = make(agents, tmp_path, permission=allow)
    await run(agent, "run touch made.txt && echo made-it")
    assert asked == [("bash", {"command": "touch made.txt && echo made-it"})]
    (result,) = tool_results(agent.messages)
    assert not result.get("is_error")
    assert "made-it" in result["content"] and "[exit code 0]" in result["content"]
    assert (tmp_path / "made.txt").exists()
    assert_valid(agent)


async def test_bash_refused_by_the_callback_is_denied(agents: list[Agent], tmp_path: Path) -> None:
    async def refuse(tool_name: str, tool_input: dict[str, Any]) -> bool:
        return False

    agent = make(agents, tmp_path, permission=refuse)
    await run(agent, "run touch made.txt")
    (result,) = tool_results(agent.messages)
    assert result["content"] == PERMISSION_DENIED and result.get("is_error") is True
    assert not (tmp_path / "made.txt").exists()


# --------------------------------------------------------------------------- the compact tool


class ScriptedModel:
    """Answers with scripted content blocks (one list per call); records summary calls."""

    name = "scripted"
    offline = True

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        self.replies = list(replies)
        self.calls: list[list[Message]] = []
        self.summaries: list[tuple[str, str | None]] = []

    async def stream(
        self, *, system: str, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> AsyncIterator[ModelEvent]:
        self.calls.append(list(messages))
        content = self.replies.pop(0) if self.replies else [{"type": "text", "text": "(script ran dry)"}]
        for block in content:
            if block["type"] == "text":
                yield TextChunk(block["text"])
        has_tools = any(block["type"] == "tool_use" for block in content)
        yield ModelResponse(content=content, stop_reason="tool_use" if has_tools else "end_turn")

    async def summarize(self, conversation_text: str, focus: str | None) -> str:
        self.summaries.append((conversation_text, focus))
        return f"SCRIPTED-SUMMARY (focus: {focus})"

    async def aclose(self) -> None:
        pass


async def allow_writes(tool_name: str, tool_input: dict[str, Any]) -> bool:
    return tool_name in ("write_file", "edit_file")


async def test_compact_tool_runs_after_the_whole_batch(agents: list[Agent], tmp_path: Path) -> None:
    model = ScriptedModel([
        [
            {"type": "text", "text": "Saving the notes, then compacting."},
            # compact comes first in the batch: it must still run only after write_file
            {"type": "tool_use", "id": "toolu_compact", "name": "compact", "input": {"focus": "the notes"}},
            {"type": "tool_use", "id": "toolu_write", "name": "write_file",
             "input": {"path": "notes/todo.md", "content": "- ship it\n"}},
        ],
        [{"type": "text", "text": "Compacted; the notes are saved."}],
    ])
    agent = make(agents, tmp_path, permission=allow_writes, model=model)
    events = await run(agent, "save my notes and compact")
    assert of(events, TurnFinished)[0].error is None
    assert not of(events, ErrorEvent)
    assert (tmp_path / "notes" / "todo.md").read_text(encoding="utf-8") == "- ship it\n"

    finished_calls = [call.name for call in of(events, ToolCallFinished)]
    assert finished_calls == ["compact", "write_file"]
    assert [step.step for step in of(events, CompactionStep)] == ["compact_history"]
    step_index = next(i for i, e in enumerate(events) if isinstance(e, CompactionStep))
    last_tool_index = max(i for i, e in enumerate(events) if isinstance(e, ToolCallFinished))
    assert last_tool_index < step_index

    # one summary call, with the focus, over a conversation where every tool_use is answered
    assert len(model.summaries) == 1
    text, focus = model.summaries[0]
    assert focus == "the notes"
    assert "toolu_write" in text and COMPACT_TOOL_OUTPUT in text

    messages = agent.messages
    assert len(messages) == 2
    marker = parse_marker(messages[0]["content"])
    assert marker is not None and marker.kind == "compacted"
    assert marker.request == "save my notes and compact"
    assert marker.summary == "SCRIPTED-SUMMARY (focus: the notes)"
    assert messages[1] == {"role": "assistant", "content": [{"type": "text", "text": "Compacted; the notes are saved."}]}
    # the model saw the compacted history on its second call
    assert model.calls[1] == [messages[0]]

    transcript = await agent.archive.read_transcript(marker.path)
    assert pairing_problems(transcript) == []
    assert [m["role"] for m in transcript] == ["user", "assistant", "user"]
    results = {block["tool_use_id"]: block for block in transcript[2]["content"]}
    assert set(results) == {"toolu_compact", "toolu_write"}
    assert results["toolu_compact"]["content"] == COMPACT_TOOL_OUTPUT
    assert "notes/todo.md" in results["toolu_write"]["content"]
    assert not results["toolu_write"].get("is_error")
    assert_valid(agent)


class FocusSpy(OfflineModel):
    def __init__(self) -> None:
        super().__init__()
        self.focuses: list[str | None] = []

    async def summarize(self, conversation_text: str, focus: str | None) -> str:
        self.focuses.append(focus)
        return await super().summarize(conversation_text, focus)


async def test_agent_compact_passes_the_focus_to_the_summarizer(agents: list[Agent], tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    model = FocusSpy()
    agent = make(agents, tmp_path, model=model)
    await run(agent, "read a.txt")
    assert len(agent.messages) == 4
    events = [event async for event in agent.compact("the alpha file")]
    assert model.focuses == ["the alpha file"]
    (step,) = of(events, CompactionStep)
    assert step.step == "compact_history" and "the alpha file" in step.detail
    assert of(events, HistoryChanged)
    assert not of(events, ErrorEvent)
    (message,) = agent.messages
    assert message["content"].startswith("[Compacted]")
    marker = parse_marker(message["content"])
    assert marker is not None and marker.kind == "compacted"
    assert marker.request == "read a.txt"
    assert marker.summary is not None and "Focus: the alpha file" in marker.summary
    assert agent.archive.resolve(marker.path) is not None
    assert len(await agent.archive.read_transcript(marker.path)) == 4
    assert_valid(agent)


async def test_agent_compact_refuses_an_empty_history(agents: list[Agent], tmp_path: Path) -> None:
    agent = make(agents, tmp_path)
    events = [event async for event in agent.compact("anything")]
    assert [type(event) for event in events] == [ErrorEvent]
    assert agent.messages == []


# --------------------------------------------------------------------------- the demo


class SizeSpy(OfflineModel):
    """The offline model, recording the size of every context it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def stream(self, **kwargs: Any) -> AsyncIterator[ModelEvent]:
        self.sizes.append(estimate_chars(kwargs["messages"]))
        return super().stream(**kwargs)


def marker_paths(messages: list[Message]) -> list[tuple[str, str]]:
    """(kind, path) of every marker in a history: string contents and tool_result contents."""
    found: list[tuple[str, str]] = []
    for message in messages:
        content = message.get("content")
        candidates: list[Any] = [content] if isinstance(content, str) else []
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    candidates.append(block.get("content"))
                elif isinstance(block, dict) and block.get("type") == "text":
                    candidates.append(block.get("text"))
        for candidate in candidates:
            marker = parse_marker(candidate)
            if marker is not None:
                found.append((marker.kind, marker.path))
    return found


async def test_demo_session_fires_every_step_and_keeps_the_history_valid(
    agents: list[Agent], tmp_path: Path
) -> None:
    async def allow(tool_name: str, tool_input: dict[str, Any]) -> bool:
        return True

    await build_demo_workspace(tmp_path)
    model = SizeSpy()
    agent = make(agents, tmp_path, permission=allow, model=model)
    steps: list[str] = []
    kinds: set[str] = set()
    checked = 0
    for command in DEMO_COMMANDS:
        async for event in answered(agent, agent.run_turn(command)):
            if isinstance(event, CompactionStep):
                steps.append(event.step)
            if isinstance(event, HistoryChanged):  # an intermediate history
                for kind, path in marker_paths(agent.messages):
                    assert agent.archive.resolve(path) is not None, (kind, path)
                    kinds.add(kind)
                    checked += 1
            assert not isinstance(event, ErrorEvent), event
        assert pairing_problems(agent.messages) == [], command[:40]
        assert agent.chars == estimate_chars(agent.messages), command[:40]
        for kind, path in marker_paths(agent.messages):
            assert agent.archive.resolve(path) is not None, (kind, path)
            kinds.add(kind)
            checked += 1
    assert {"tool_result_budget", "snip_compact", "micro_compact", "fit_tool_results", "compact_history"} <= set(
        steps
    ), steps
    assert steps.index("tool_result_budget") < steps.index("fit_tool_results") < steps.index("micro_compact")
    assert {"persisted", "placeholder", "snip", "compacted"} <= kinds
    assert checked > 0
    # every model call saw a context within the limit
    assert model.sizes and max(model.sizes) <= agent.compactor.settings.context_char_limit
    # the last command is a manual compact with a focus: the history ends as one [Compacted] message
    final = agent.messages
    assert final[0]["content"].startswith("[Compacted]")
    assert "Focus: the incident and the module reads" in final[0]["content"]
    assert (tmp_path / "notes" / "incident.md").is_file()
