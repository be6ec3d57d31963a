"""Typed events produced by the core; the TUI turns each into a Textual message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

StepName = Literal[
    "tool_result_budget",
    "snip_compact",
    "micro_compact",
    "fit_tool_results",
    "compact_history",
    "reactive_compact",
]
"""The compaction steps, in pipeline order (reactive_compact is the fallback after an API refusal)."""

STEP_ORDER: tuple[StepName, ...] = get_args(StepName)

MarkerKind = Literal["persisted", "placeholder", "snip", "compacted", "reactive"]
"""The markers compaction leaves in the history (see core/markers.py for their exact text)."""

MARKER_KINDS: tuple[MarkerKind, ...] = get_args(MarkerKind)


@dataclass(frozen=True)
class TurnStarted:
    """A user turn began; `request` is the active user request."""

    request: str


@dataclass(frozen=True)
class TextDelta:
    """A fragment of assistant text as it streams."""

    text: str


@dataclass(frozen=True)
class AssistantMessage:
    """A complete assistant message was appended to the history (plain-dict content blocks)."""

    content: list[dict[str, Any]]
    stop_reason: str | None = None


@dataclass(frozen=True)
class ToolCallStarted:
    """The agent is about to run a tool."""

    tool_use_id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool finished (or was denied / interrupted)."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    output: str
    output_chars: int
    duration: float
    is_error: bool = False


@dataclass(frozen=True)
class CompactionStep:
    """One compaction step changed the history (`step` is one of STEP_ORDER)."""

    step: StepName
    chars_before: int
    chars_after: int
    messages_affected: int
    files_written: tuple[str, ...] = ()
    detail: str = ""

    @property
    def saved(self) -> int:
        return self.chars_before - self.chars_after

    def describe(self) -> str:
        """One line, as printed on stderr by `ctxtui -p`."""
        files = ", ".join(self.files_written) if self.files_written else "-"
        return (
            f"[{self.step}] {self.chars_before:,} -> {self.chars_after:,} chars, "
            f"{self.messages_affected} message(s) affected, files: {files}"
        )


@dataclass(frozen=True)
class ContextMeasured:
    """The size of the context sent to the model (after prepare)."""

    chars: int
    limit: int
    messages: int
    tokens: int | None = None
    input_tokens: int | None = None


@dataclass(frozen=True)
class HistoryChanged:
    """The agent's history was replaced or appended to; widgets should re-read `agent.messages`."""

    length: int


@dataclass(frozen=True)
class Notice:
    """Something worth telling the user that is not an error (a retry, a resumed session)."""

    message: str


@dataclass(frozen=True)
class ErrorEvent:
    """A one-line error; the turn ends after it and the history stays API-valid."""

    message: str
    kind: str = "error"


@dataclass(frozen=True)
class TurnFinished:
    """The turn ended. `text` is the final assistant text."""

    text: str
    cancelled: bool = False
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


AgentEvent = (
    TurnStarted
    | TextDelta
    | AssistantMessage
    | ToolCallStarted
    | ToolCallFinished
    | CompactionStep
    | ContextMeasured
    | HistoryChanged
    | Notice
    | ErrorEvent
    | TurnFinished
)
