"""The agent loop: prepare the context, stream the model, run the tools, repeat.

`Agent.run_turn(text)` is an async generator of events (core/events.py), yielded in the order
things happen: it is the only channel from the core to a UI. A tool that needs consent yields
`PermissionRequested` and waits for its `reply` future. Whatever happens (an API error, a failed
summary, a cancelled task, a closed generator) one place, `_finish`, ends the turn, and the history
it leaves is API-valid: every tool_use is answered and no half-written assistant message is kept.

The Agent's other jobs live in parts it inherits, one module each: `core.agent_base` (the shared
state, history changes, the session log, measuring), `core.agent_compaction` (running the pipeline's
steps and keeping them for undo), `core.agent_steering` (the user's actions on the context) and
`core.agent_sessions` (new session, resume). This module holds the Agent itself: its state, how it
is built, and the turn loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from core.agent.base import Message
from core.agent.compacting import AgentCompaction
from core.agent.sessions import AgentSessions, resumed_session
from core.agent.steering import AgentSteering
from core.archive import Archive
from core.compaction import Compactor
from core.compaction.pipeline import Summarize
from core.compaction.steering import Compaction
from core.config import Settings
from core.events import (
    PERMISSION_CHOICES,
    AgentEvent,
    AssistantMessage,
    CompactionStep,
    ContextSampled,
    ErrorEvent,
    Notice,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from core.history.messages import interrupted_result, last_user_request, text_of, user_pin_key
from core.history.sizes import dumps
from core.history.store import History
from core.history.tokens import TokenCounter
from core.markers import parse_marker
from core.model.base import Model, ModelError, ModelResponse, PromptTooLongError, Retrying, TextChunk
from core.sessions.log import SessionLog
from core.tools import COMPACT_TOOL_OUTPUT, PERMISSION_DENIED, ToolBox, ToolOutput, Workspace
from core.usage.prices import price_for
from core.usage.timeline import Timeline

SYSTEM_PROMPT = """You are a coding agent working in the directory {workdir} through tools: bash, read_file, \
write_file, edit_file, glob and compact. Work step by step, read before you edit, and keep answers short.

Your context is kept small by a compaction pipeline. Older tool results may be replaced by \
`[Earlier tool result saved at PATH]`, large ones by a `<persisted-output>` block with a preview, and \
old messages by `[N messages archived at PATH]`; a `[Compacted]` message holds the current request and \
a summary. Every PATH is relative to the working directory: read it with read_file (use offset/limit \
for large files) when you need the full text again. Call the compact tool when a phase of work is done \
and its details are no longer needed."""

DEFAULT_MAX_STEPS = 50


@dataclass
class _Turn:
    """What one turn has done so far: the batch being answered, the final text, how it ended."""

    request: str
    batch: list[Message] = field(default_factory=list)  # tool_use blocks of the reply being answered
    answered: list[Message] = field(default_factory=list)  # their tool_results so far
    waiting: asyncio.Future[str] | None = None  # an unanswered PermissionRequested.reply
    response: ModelResponse | None = None
    final_text: str = ""
    error: str | None = None
    error_kind: str = "error"
    finished: bool = False

    def fail(self, message: str, kind: str) -> None:
        self.error, self.error_kind = message, kind


class Agent(AgentSteering, AgentSessions, AgentCompaction):
    """One conversation with a model, its tools and its compaction pipeline."""

    def __init__(
        self,
        model: Model,
        toolbox: ToolBox,
        compactor: Compactor,
        *,
        settings: Settings | None = None,
        session: SessionLog | None = None,
        messages: list[Message] | None = None,
        token_counter: TokenCounter | None = None,
        system_prompt: str | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        allow_all: bool | None = None,
    ) -> None:
        self.model = model
        self.toolbox = toolbox
        self.compactor = compactor
        self.settings = settings or Settings(workdir=toolbox.workspace.root)
        self.session = session
        self._messages = History(messages or [])
        self.tokens = token_counter or TokenCounter()
        self.system_prompt = system_prompt or SYSTEM_PROMPT.format(workdir=toolbox.workspace.root)
        self.max_steps = max_steps
        self.allow_all = self.settings.yes if allow_all is None else allow_all
        """Run tools that need consent without asking (`--yes`)."""
        self.allowed_for_session: set[str] = set()
        """Tools the user allowed for the rest of this session ("session" answers)."""
        self.last_request = last_user_request(self._messages)
        self.last_input_tokens: int | None = None
        self.running = False
        self.resumed_from: str | None = None
        self._announce: Notice | None = None  # said once, at the start of the first turn
        self._steps: list[CompactionStep] = []  # what the compactor reported during the current call
        self.compactions: list[Compaction] = []
        """Every compaction applied to this history, oldest first (what `undo_compaction` reverses)."""
        self.auto_compact = self.settings.auto_compact
        """False pauses the pipeline before each call; reactive_compact still guards an API refusal."""
        self._session_error: str | None = None
        self._timeline = Timeline(None if model.offline else price_for(model.name), offline=model.offline)
        compactor.on_event = self._steps.append
        if compactor.summarize is not None and self.settings.summary_instructions.strip():
            compactor.summarize = _with_instructions(compactor.summarize, self.settings.summary_instructions)

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, *, model: Model | None = None, allow_all: bool | None = None) -> Agent:
        """Build the whole stack from settings: model (offline without a key), tools, archive, session."""
        workdir = settings.workdir.resolve()
        settings.workdir = workdir
        if model is None:
            model = make_model(settings)
        archive = Archive(workdir)
        toolbox = ToolBox(
            Workspace(workdir),
            bash_timeout=settings.bash_timeout,
            max_bash_timeout=settings.max_bash_timeout,
            output_limit=settings.tool_output_limit,
            read_line_limit=settings.read_line_limit,
            spill_dir=archive.tool_results_dir,
            spill_byte_limit=settings.spill_byte_limit,
            glob_time_budget=settings.glob_time_budget,
        )
        compactor = Compactor(archive, summarize=model.summarize, settings=settings.compaction)
        replay, resumed = resumed_session(settings)
        session = SessionLog.create(settings.state_dir, {"model": model.name, "workdir": str(workdir)})
        agent = cls(model, toolbox, compactor, settings=settings, session=session, messages=replay.messages,
                    allow_all=allow_all)
        agent._take_over(replay.compactions, replay.pins)
        if resumed is not None:
            agent.resumed_from = str(resumed)
            agent._announce = Notice(f"resumed {len(replay.messages)} messages from {resumed}")
        return agent

    # --- the turn -------------------------------------------------------------------------------

    async def run_turn(self, text: str) -> AsyncIterator[AgentEvent]:
        """Run one user turn to the end, yielding every event as it happens."""
        if self.running:
            yield ErrorEvent("a turn is already running", "busy")
            return
        self.running = True
        turn = _Turn(text)
        self.last_request = text
        try:
            async with contextlib.aclosing(self._turn(turn)) as events:
                async for event in events:
                    yield self._log(event)
                    if notice := self._session_notice():
                        yield notice
            if turn.error is not None:
                yield self._log(ErrorEvent(turn.error, turn.error_kind))
            turn.finished = True
            usage = dict(turn.response.usage) if turn.response is not None and turn.error is None else {}
            yield TurnFinished(turn.final_text, error=turn.error, usage=usage)
        finally:
            self._finish(turn)

    async def _turn(self, turn: _Turn) -> AsyncGenerator[AgentEvent, None]:
        """Prepare, one model call, one tool batch; again until the model stops calling tools."""
        async for event in self._add_request(turn.request):
            yield event
        yield TurnStarted(turn.request)
        if self._announce is not None:
            yield self._announce
            self._announce = None
        reactive_retries = 0
        for _ in range(self.max_steps):
            async for event in self._prepare():
                yield event
            measured = await self.measure()
            yield measured
            turn.response = None
            self._timeline.start(measured.chars, measured.messages, measured.tokens)
            try:
                async with contextlib.aclosing(self._call_model(turn)) as stream:
                    async for event in stream:
                        yield event
            except ModelError as error:
                yield ContextSampled(self._timeline.finish(None, str(error)))
                if not isinstance(error, PromptTooLongError):
                    turn.fail(str(error), error.kind)
                    return
                if reactive_retries >= self.compactor.settings.max_reactive_retries:
                    turn.fail(f"the API still refuses the context after reactive compaction: {error}", error.kind)
                    return
                reactive_retries += 1
                async for event in self._compaction("reactive_compact", None):
                    yield event
                continue
            response = turn.response
            yield ContextSampled(self._timeline.finish(None if response is None else response.usage))
            if response is None:
                turn.fail("the model stream ended without a message", "api")
                return
            async for event in self._record_reply(turn, response):
                yield event
            if not turn.batch:
                yield await self.measure()
                return
            async for event in self._run_tools(turn):
                yield event
        turn.fail(f"stopped after {self.max_steps} model calls in one turn", "limit")

    async def _add_request(self, request: str) -> AsyncGenerator[AgentEvent, None]:
        """Append the request so that the model sees one clear request.

        A turn that failed leaves its request unanswered at the end of the history. The same text
        sent again is that request again (kept once); a different one follows the earlier request,
        which is marked as unanswered so the model does not take both for the current one (unless
        it is pinned: a pinned message stays byte-exact).
        """
        last = self._messages[-1] if self._messages else None
        # a pinned message is never rewritten (it may also just follow a summary that carried it)
        if last is not None and _unanswered_request(last) and user_pin_key(last) not in self.pinned:
            if last["content"] == request:
                return
            marked = {**last, "content": f"{UNANSWERED_MARK}\n{last['content']}"}
            if changed := self._replace([*self._messages[:-1], marked], "unanswered request"):
                yield changed
        if self.oversize(request) is not None:
            yield Notice(
                f"this message alone is {len(request):,} chars, over the {self.compactor.settings.context_char_limit:,}"
                "-char context limit: no compaction step can shrink it (archive it as a file for the model to read)",
                "warning",
            )
        yield self._append({"role": "user", "content": request}, "user")

    def oversize(self, request: str) -> int | None:
        """The size of `request` as a message's content (JSON chars) when it alone is over the context
        limit, which no compaction step can shrink; None when it fits."""
        size = len(dumps(request))
        return size if size > self.compactor.settings.context_char_limit else None

    async def _call_model(self, turn: _Turn) -> AsyncGenerator[AgentEvent, None]:
        """Stream one model call; the complete reply lands in `turn.response`."""
        stream = self.model.stream(
            system=self.system_prompt,
            messages=self._messages,
            tools=self.toolbox.schemas,
            max_tokens=self.settings.max_tokens,
        )
        async with contextlib.aclosing(stream):  # type: ignore[type-var]  # the protocol says AsyncIterator
            async for chunk in stream:
                if isinstance(chunk, TextChunk):
                    yield TextDelta(chunk.text)
                elif isinstance(chunk, Retrying):
                    yield Notice(f"retrying: {chunk.message}", "retry")
                else:
                    turn.response = chunk

    async def _record_reply(self, turn: _Turn, response: ModelResponse) -> AsyncGenerator[AgentEvent, None]:
        """Append the complete assistant message; its tool calls become the batch to answer."""
        if response.prompt_tokens:
            self.last_input_tokens = response.prompt_tokens  # with caching, input_tokens is only the uncached part
        content = [block for block in response.content if isinstance(block, dict)]
        if not content:
            content = [{"type": "text", "text": "(no reply)"}]
        turn.batch = [block for block in content if block.get("type") == "tool_use"]
        turn.answered = []
        yield self._append({"role": "assistant", "content": content}, "assistant")
        yield AssistantMessage(content, response.stop_reason)
        turn.final_text = text_of({"content": content}) or turn.final_text

    async def _run_tools(self, turn: _Turn) -> AsyncGenerator[AgentEvent, None]:
        """Run the batch in order (asking for consent where needed), then the compact tool if called."""
        compact_requested = False
        compact_focus: str | None = None
        for block in turn.batch:
            tool_use_id = str(block.get("id"))
            name = str(block.get("name", ""))
            raw_input = block.get("input")
            tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
            yield ToolCallStarted(tool_use_id, name, tool_input)
            allowed = True
            if self.toolbox.needs_permission(name, tool_input) and not self._pre_approved(name):
                reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()
                preview = await self.toolbox.permission_preview(name, tool_input)
                turn.waiting = reply
                yield PermissionRequested(tool_use_id, name, tool_input, reply, preview)
                choice = await asyncio.shield(reply)  # a cancel leaves `reply` to `_finish`, which denies it
                turn.waiting = None
                if choice == "session":
                    self.allowed_for_session.add(name)
                allowed = choice in ("once", "session")
            started = time.monotonic()
            output = await self.toolbox.run(name, tool_input) if allowed else ToolOutput(PERMISSION_DENIED, is_error=True)
            elapsed = time.monotonic() - started
            if name == "compact" and output.content == COMPACT_TOOL_OUTPUT:
                compact_requested = True
                focus = tool_input.get("focus")
                compact_focus = str(focus) if focus else compact_focus
            result: Message = {"type": "tool_result", "tool_use_id": block.get("id"), "content": output.content}
            if output.is_error:
                result["is_error"] = True
            turn.answered.append(result)
            yield ToolCallFinished(
                tool_use_id, name, tool_input, output.content, len(output.content), elapsed, output.is_error
            )
        answered, turn.batch, turn.answered = turn.answered, [], []
        yield self._append({"role": "user", "content": answered}, "tools")
        if compact_requested:
            async for event in self._compaction("compact_history", compact_focus):
                yield event
            yield await self.measure()

    def _pre_approved(self, tool: str) -> bool:
        return self.allow_all or tool in self.allowed_for_session

    def _finish(self, turn: _Turn) -> None:
        """The one place a turn ends (completed, failed, cancelled or closed): repair and record it."""
        if turn.waiting is not None and not turn.waiting.done():
            turn.waiting.set_result("deny")
        self._timeline.abandon("cancelled")
        if turn.batch:
            done = {result.get("tool_use_id") for result in turn.answered}
            results = [*turn.answered] + [
                interrupted_result(str(block.get("id"))) for block in turn.batch if block.get("id") not in done
            ]
            self._append({"role": "user", "content": results}, "interrupted")
        self.running = False
        if not turn.finished and self.session is not None:
            self.session.record({"type": "event", "kind": "TurnCancelled", "event": {}})

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
        await self.model.aclose()


UNANSWERED_MARK = "[An earlier request that got no answer: the turn ended before a reply. The current request follows.]"


def _with_instructions(summarize: Summarize, instructions: str) -> Summarize:
    """`summarize` with the user's standing summary instructions added to every focus."""

    async def summarize_with(text: str, focus: str | None) -> str:
        standing = f"Always: {instructions.strip()}"
        return await summarize(text, f"{focus}\n{standing}" if focus else standing)

    summarize_with.__wrapped__ = summarize  # type: ignore[attr-defined]
    return summarize_with


def _unanswered_request(message: Message) -> bool:
    """A plain user request (not a marker, not tool results) that no assistant message answered."""
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and not content.startswith(UNANSWERED_MARK)
        and parse_marker(content) is None
    )


def make_model(settings: Settings) -> Model:
    """The Anthropic model when a key is configured (and --offline is not set), else the offline one."""
    if settings.use_offline:
        from core.model.offline import OfflineModel

        why = "offline model (--offline)" if settings.offline else "offline model (no API key)"
        return OfflineModel(chunk_delay=settings.offline_chunk_delay, label=why)
    from core.model.anthropic import AnthropicModel

    return AnthropicModel(
        settings.model,
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
        timeout=settings.request_timeout,
        max_retries=settings.max_retries,
        retry_after_cap=settings.retry_after_cap,
    )


__all__ = ["PERMISSION_CHOICES", "Agent", "make_model"]
