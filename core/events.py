"""Typed events produced by the core; the TUI turns each into a Textual message.

`Agent.run_turn` yields them in the order things happened; each carries the figures it reports, so
a consumer never has to ask the agent again. `PermissionRequested` is the only event that expects an
answer: its `reply` future.

Made of value types only (core/values/): this module imports nothing else of the core, so every
layer above the values may produce events.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

# The value types the events carry (core/values/), re-exported: `CacheMiss` is a contract name of
# core.events, and a consumer of the events finds the types of their fields here too.
from core.values.markers import MARKER_KINDS as MARKER_KINDS
from core.values.markers import MarkerKind as MarkerKind
from core.values.miss import CacheMiss as CacheMiss
from core.values.miss import cache_cost_line as cache_cost_line
from core.values.miss import tokens_text as _tokens
from core.values.notes import NotesChanged as NotesChanged
from core.values.records import Fact as Fact
from core.values.records import LedgerChanged as LedgerChanged
from core.values.records import LedgerEntry as LedgerEntry
from core.values.samples import ContextSample as ContextSample
from core.values.samples import TokenCount as TokenCount
from core.values.splice import Splice as Splice

PipelineStep = Literal[
    "tool_result_budget",
    "snip_compact",
    "micro_compact",
    "fit_tool_results",
    "compact_history",
    "reactive_compact",
]
"""The compaction steps, in pipeline order (reactive_compact is the fallback after an API refusal)."""

ServerStep = Literal[
    "server:clear_tool_uses_20250919",
    "server:clear_thinking_20251015",
    "server:compact_20260112",
]
"""What the API did on its side to a request (a server engine: core/engines/), "server:" + the edit type."""

StepName = PipelineStep | ServerStep

STEP_ORDER: tuple[PipelineStep, ...] = get_args(PipelineStep)
SERVER_STEPS: tuple[ServerStep, ...] = get_args(ServerStep)


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


PermissionChoice = Literal["once", "session", "deny"]
PERMISSION_CHOICES: tuple[PermissionChoice, ...] = get_args(PermissionChoice)


@dataclass(frozen=True)
class PermissionRequested:
    """A tool that needs consent is about to run; set `reply` to "once", "session" or "deny".

    The turn waits for the answer. Closing the turn while it waits denies the call (its result is
    `[interrupted]`) and resolves `reply` with "deny". `preview` is what the tool would change
    (a diff for file writes; empty for bash, whose `input` is shown whole).
    """

    tool_use_id: str
    tool: str
    input: dict[str, Any]
    reply: asyncio.Future[str]
    preview: str = ""


@dataclass(frozen=True)
class ToolOutputDelta:
    """A piece of a running tool's output as it prints it (bash), for a view to show while it runs.
    The whole output comes in `ToolCallFinished`; a cancelled call keeps what was printed."""

    tool_use_id: str
    text: str


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
    """One compaction step changed the history (`step` is one of STEP_ORDER), or the API changed what
    it showed the model (one of SERVER_STEPS: the history itself is unchanged; `cleared` names the
    tool results it cleared, by tool_use id).

    `changed_at` is the (message, block) of the first block the step changed (None: it changed
    nothing). What the step cost the prompt cache (DESIGN.md, "Cache, thinking and cost truth"):
    `cache_invalidated_tokens`, the last request's cached tokens from that block to the end that
    the next call writes again (0 when the cache is cold or an earlier change gave them up already),
    `saved_tokens` the step's saving in the same tokens, and `break_even_calls` the calls after which
    the cheaper reads pay for the write; all None offline (no cache, no price).
    """

    step: StepName
    chars_before: int
    chars_after: int
    messages_affected: int
    files_written: tuple[str, ...] = ()
    detail: str = ""
    changed_at: tuple[int, int] | None = None
    cache_invalidated_tokens: int | None = None
    break_even_calls: float | None = None
    saved_tokens: int | None = None
    ledger: tuple[LedgerEntry, ...] = ()
    """What the step took out of the context, one entry per tool result or run of messages."""
    cleared: tuple[str, ...] = ()

    @property
    def saved(self) -> int:
        return self.chars_before - self.chars_after

    def describe(self) -> str:
        """One line, as printed on stderr by `ctxtui -p` (its cache cost is `cost_line`, which `-v` adds)."""
        files = ", ".join(self.files_written) if self.files_written else "-"
        if self.step in SERVER_STEPS:
            return f"[{self.step}] {self.detail}"
        return (
            f"[{self.step}] {self.chars_before:,} -> {self.chars_after:,} chars, "
            f"{self.messages_affected} message(s) affected, files: {files}"
        )

    def cost_line(self) -> str:
        """What the step saved and what it cost the cache, in one line (empty offline)."""
        cost = cache_cost_line(self.cache_invalidated_tokens, self.break_even_calls)
        if not cost:
            return ""
        tokens = f" ({_tokens(self.saved_tokens)} tokens)" if self.saved_tokens else ""
        return f"{self.step} saved {self.saved:,} chars{tokens}, {cost}"


@dataclass(frozen=True)
class CompactionHeld:
    """Cache-aware timing: the steps that would break the warm cached prefix wait (DESIGN.md, "Cache,
    thinking and cost truth"). `steps` is what would run now (the dry run, with each step's cache
    cost); they run together once the cache goes cold (`cache_expires_at`, epoch seconds), the next
    request reaches `ceiling` tokens (it is `tokens` now), or the person compacts."""

    steps: tuple[CompactionStep, ...]
    cache_expires_at: float
    tokens: int | None
    ceiling: int

    def describe(self) -> str:
        names = " + ".join(dict.fromkeys(step.step for step in self.steps))
        invalidated = sum(step.cache_invalidated_tokens or 0 for step in self.steps)
        size = f"{self.tokens:,}" if self.tokens is not None else "?"
        return (
            f"cache-aware: {names} wait{'s' if len(self.steps) == 1 else ''} while the cache is warm "
            f"({size}/{self.ceiling:,} tokens; running now would re-write {_tokens(invalidated)} cached tokens)"
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
class ContextSampled:
    """One model call ended (answered or failed): its sample, as it now stands in `agent.timeline`,
    and the session's cost so far (None when nothing could be priced)."""

    sample: ContextSample
    session_cost: float | None = None


@dataclass(frozen=True)
class HistoryChanged:
    """The history changed: its new length and size, and the splices that turn the old into the new.

    Applying `changes` in order to the previous history gives the current one, so a view can update
    only what changed. `reason` says why ("user", "assistant", "tools", a step name, "resume", ...).
    """

    length: int
    chars: int = 0
    changes: tuple[Splice, ...] = ()
    reason: str = ""
    cache_invalidated_tokens: int | None = None  # a steering action's cost to the cache (see CompactionStep)
    break_even_calls: float | None = None
    facts: tuple[Fact, ...] = ()
    """The facts this change made new, or whose visibility or archive file it changed (in the order
    first seen): a view of `agent.facts()` keyed by (kind, text) applies them."""
    ledger: LedgerChanged | None = None
    """What the change did to `agent.ledger` (a compaction's or a drop's entries; entries a restore
    or an undo brought back)."""


@dataclass(frozen=True)
class NextCallPreview:
    """What the next call's prepare would do now (`Compactor.dry_run`: writes nothing, calls no
    model): its steps, the tool results it would shorten (their tool_use ids), what is pinned, and
    whether automatic compaction is paused (then nothing would run). Each step carries its cost to
    the cache. `timing` is the compaction timing in force; with "cache-aware", `held` are the steps
    that would wait for the cache (then `steps` is what runs meanwhile)."""

    steps: tuple[CompactionStep, ...] = ()
    shortened: frozenset[str] = frozenset()
    pinned: frozenset[str] = frozenset()
    paused: bool = False
    timing: str = "eager"
    held: tuple[CompactionStep, ...] = ()

    at_risk: tuple[Fact, ...] = ()
    """When the next call would summarise: the visible facts only the summary could keep (constraints
    first): neither the request nor anything pinned holds them."""

    server: str | None = None
    """Under a server engine, what the API does to the request on its side (`steps` is then what the
    client runs: tool_result_budget only); None for the client engine."""

    @property
    def fired(self) -> tuple[StepName, ...]:
        """The steps that would change the history (a summary always would), each once, in order."""
        return tuple(
            dict.fromkeys(
                step.step for step in self.steps if step.saved > 0 or step.step == "compact_history"
            )
        )


NoticeKind = Literal["info", "retry", "session", "warning"]


@dataclass(frozen=True)
class Notice:
    """Something worth telling the user that is not an error.

    kind: "retry" (a model call is retried), "session" (the session log cannot be written),
    "warning" (something the user should act on), "info" (anything else, e.g. a resumed session).
    """

    message: str
    kind: NoticeKind = "info"
    cache_invalidated_tokens: int | None = None  # pin, unpin: the change in the next call's cache cost
    break_even_calls: float | None = None


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
    usage: dict[str, int | None] = field(default_factory=dict)


AgentEvent = (
    TurnStarted
    | TextDelta
    | AssistantMessage
    | ToolCallStarted
    | PermissionRequested
    | ToolOutputDelta
    | ToolCallFinished
    | CompactionStep
    | CompactionHeld
    | ContextMeasured
    | ContextSampled
    | HistoryChanged
    | NotesChanged
    | Notice
    | ErrorEvent
    | TurnFinished
)
"""What `Agent.run_turn` (and `Agent.compact`) yield."""

Forecast = NextCallPreview | ContextMeasured | TokenCount
"""What `Agent.forecast` yields after a change: the preview of the next call, the history's figures,
then the next request's size."""
