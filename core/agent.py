"""The agent loop: prepare the context, stream the model, run the tools, repeat.

`Agent.run_turn(text)` is an async generator of events (core/events.py). Whatever happens (an API
error, a failed summary, a cancelled task, a closed generator) the history it leaves is API-valid:
every tool_use is answered and no half-written assistant message is kept.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from core.archive import Archive
from core.compaction import CompactionError, Compactor
from core.config import Settings
from core.events import (
    AgentEvent,
    AssistantMessage,
    CompactionStep,
    ContextMeasured,
    ErrorEvent,
    HistoryChanged,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from core.history import interrupted_result, text_of
from core.model.base import Model, ModelError, ModelResponse, PromptTooLongError, TextChunk
from core.session import SessionLog
from core.tokens import TokenCounter
from core.tools import COMPACT_TOOL_OUTPUT, PermissionCallback, ToolBox, Workspace

Message = dict[str, Any]

SYSTEM_PROMPT = """You are a coding agent working in the directory {workdir} through tools: bash, read_file, \
write_file, edit_file, glob and compact. Work step by step, read before you edit, and keep answers short.

Your context is kept small by a compaction pipeline. Older tool results may be replaced by \
`[Earlier tool result saved at PATH]`, large ones by a `<persisted-output>` block with a preview, and \
old messages by `[N messages archived at PATH]`; a `[Compacted]` message holds the current request and \
a summary. Every PATH is relative to the working directory: read it with read_file (use offset/limit \
for large files) when you need the full text again. Call the compact tool when a phase of work is done \
and its details are no longer needed."""

DEFAULT_MAX_STEPS = 50


class Agent:
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
    ) -> None:
        self.model = model
        self.toolbox = toolbox
        self.compactor = compactor
        self.settings = settings or Settings(workdir=toolbox.workspace.root)
        self.session = session
        self._messages: list[Message] = list(messages or [])
        self.tokens = token_counter or TokenCounter()
        self.system_prompt = system_prompt or SYSTEM_PROMPT.format(workdir=toolbox.workspace.root)
        self.max_steps = max_steps
        self.last_request = _last_request(self._messages)
        self.last_input_tokens: int | None = None
        self.running = False
        self._pending: list[AgentEvent] = []
        self._reported_session_error: str | None = None
        compactor.on_event = self._on_compaction
        if hasattr(model, "on_retry"):
            model.on_retry = self._on_retry

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        permission: PermissionCallback | None = None,
        model: Model | None = None,
    ) -> Agent:
        """Build the whole stack from settings: model (offline without a key), tools, archive, session."""
        workdir = settings.workdir.resolve()
        settings.workdir = workdir
        if model is None:
            model = make_model(settings)
        archive = Archive(workdir)
        toolbox = ToolBox(
            Workspace(workdir),
            permission=permission,
            bash_timeout=settings.bash_timeout,
            output_limit=settings.tool_output_limit,
            read_line_limit=settings.read_line_limit,
            spill_dir=archive.tool_results_dir,
        )
        compactor = Compactor(archive, summarize=model.summarize, settings=settings.compaction)
        messages: list[Message] = []
        notice = None
        if settings.resume:
            latest = SessionLog.latest(settings.state_dir)
            if latest is not None:
                messages = SessionLog.load(latest)
                notice = f"resumed {len(messages)} messages from {latest}"
        session = SessionLog.create(settings.state_dir, {"model": model.name, "workdir": str(workdir)})
        agent = cls(model, toolbox, compactor, settings=settings, session=session, messages=messages)
        if messages:
            session.replace(messages, "resume")
        if notice:
            agent._pending.append(Notice(notice))
        return agent

    # --- state ----------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The current history (plain dicts, Messages API shape)."""
        return self._messages

    @property
    def archive(self) -> Archive:
        return self.compactor.archive

    @property
    def chars(self) -> int:
        return self.compactor.estimate_chars(self._messages)

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        if self.session is not None:
            self.session.message(message)

    def _replace(self, messages: list[Message], reason: str) -> None:
        self._messages = list(messages)
        if self.session is not None:
            self.session.replace(self._messages, reason)

    def _on_compaction(self, step: CompactionStep) -> None:
        self._pending.append(step)

    def _on_retry(self, message: str) -> None:
        self._pending.append(Notice(f"retrying: {message}"))

    def _drain(self) -> list[AgentEvent]:
        if self.session is not None and self.session.error and self.session.error != self._reported_session_error:
            self._reported_session_error = self.session.error
            self._pending.append(Notice(f"{self.session.error} (kept in memory, retried on the next write)"))
        events, self._pending = self._pending, []
        if self.session is not None:
            for event in events:
                self.session.event(event)
        return events

    async def measure(self) -> ContextMeasured:
        tokens: int | None
        try:
            tokens = await self.tokens.count_async(self._messages)
        except Exception:
            tokens = None
        return ContextMeasured(
            chars=self.chars,
            limit=self.compactor.settings.context_char_limit,
            messages=len(self._messages),
            tokens=tokens,
            input_tokens=self.last_input_tokens,
        )

    def new_session(self) -> None:
        """Forget the history and start a new session file (archives and old sessions stay on disk)."""
        self._messages = []
        self.last_request = ""
        self.last_input_tokens = None
        if self.session is not None:
            old = self.session
            self.session = SessionLog.create(self.settings.state_dir, {"model": self.model.name})
            old.close_soon()

    # --- the loop -------------------------------------------------------------------------------

    async def run_turn(self, text: str) -> AsyncIterator[AgentEvent]:
        """Run one user turn to the end, yielding events as they happen."""
        if self.running:
            yield ErrorEvent("a turn is already running", "busy")
            return
        self.running = True
        self.last_request = text
        batch: list[Message] = []  # tool_use blocks of the assistant message being answered
        answered: list[Message] = []  # their tool_results so far
        final_text = ""
        finished = False
        try:
            self._append({"role": "user", "content": text})
            yield TurnStarted(text)
            for event in self._drain():
                yield event
            reactive_retries = 0
            steps = 0
            while True:
                steps += 1
                if steps > self.max_steps:
                    message = f"stopped after {self.max_steps} model calls in one turn"
                    yield ErrorEvent(message, "limit")
                    yield TurnFinished(final_text, error=message)
                    finished = True
                    return
                async for event in self._prepare():
                    yield event
                yield await self.measure()

                response: ModelResponse | None = None
                streamed: list[str] = []
                try:
                    async for chunk in self.model.stream(
                        system=self.system_prompt,
                        messages=self._messages,
                        tools=self.toolbox.schemas,
                        max_tokens=self.settings.max_tokens,
                    ):
                        if isinstance(chunk, TextChunk):
                            streamed.append(chunk.text)
                            yield TextDelta(chunk.text)
                        else:
                            response = chunk
                        for event in self._drain():
                            yield event
                except PromptTooLongError as error:
                    for event in self._drain():
                        yield event
                    if reactive_retries >= self.compactor.settings.max_reactive_retries:
                        message = f"the API still refuses the context after reactive compaction: {error}"
                        yield ErrorEvent(message, error.kind)
                        yield TurnFinished(final_text, error=message)
                        finished = True
                        return
                    reactive_retries += 1
                    async for event in self._reactive():
                        yield event
                    continue
                except ModelError as error:
                    for event in self._drain():
                        yield event
                    yield ErrorEvent(str(error), error.kind)
                    yield TurnFinished(final_text, error=str(error))
                    finished = True
                    return
                for event in self._drain():
                    yield event
                if response is None:
                    message = "the model stream ended without a message"
                    yield ErrorEvent(message, "api")
                    yield TurnFinished(final_text, error=message)
                    finished = True
                    return
                if response.input_tokens:
                    self.last_input_tokens = response.input_tokens
                content = [block for block in response.content if isinstance(block, dict)]
                if not content:
                    content = [{"type": "text", "text": "".join(streamed) or "(no reply)"}]
                tool_uses = [block for block in content if block.get("type") == "tool_use"]
                batch, answered = tool_uses, []
                self._append({"role": "assistant", "content": content})
                yield AssistantMessage(content, response.stop_reason)
                yield HistoryChanged(len(self._messages))
                final_text = text_of({"content": content}) or final_text
                if not tool_uses:
                    yield await self.measure()
                    yield TurnFinished(final_text, usage=dict(response.usage))
                    finished = True
                    return

                compact_focus: str | None = None
                compact_requested = False
                for block in tool_uses:
                    name = str(block.get("name", ""))
                    tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
                    assert isinstance(tool_input, dict)
                    yield ToolCallStarted(str(block.get("id")), name, tool_input)
                    started = time.monotonic()
                    waited = self.toolbox.permission_wait
                    output = await self.toolbox.run(name, tool_input)
                    started += self.toolbox.permission_wait - waited  # time asking the user is not run time
                    if name == "compact" and output.content == COMPACT_TOOL_OUTPUT:
                        compact_requested = True
                        focus = tool_input.get("focus")
                        compact_focus = str(focus) if focus else compact_focus
                    result: Message = {
                        "type": "tool_result",
                        "tool_use_id": block.get("id"),
                        "content": output.content,
                    }
                    if output.is_error:
                        result["is_error"] = True
                    answered.append(result)
                    yield ToolCallFinished(
                        str(block.get("id")), name, tool_input, output.content, len(output.content),
                        time.monotonic() - started, output.is_error,
                    )
                self._append({"role": "user", "content": answered})
                batch, answered = [], []
                yield HistoryChanged(len(self._messages))
                if compact_requested:
                    async for event in self._compact(compact_focus):
                        yield event
        finally:
            self._close_batch(batch, answered)
            self.running = False
            if not finished and self.session is not None:
                self.session.record({"type": "event", "kind": "TurnCancelled", "event": {}})

    def _close_batch(self, batch: list[Message], answered: list[Message]) -> None:
        """After a cancel: answer every tool_use of the interrupted batch so the history stays valid."""
        if not batch:
            return
        done = {result.get("tool_use_id") for result in answered}
        results = list(answered) + [
            interrupted_result(str(block.get("id"))) for block in batch if block.get("id") not in done
        ]
        self._append({"role": "user", "content": results})

    async def _prepare(self) -> AsyncIterator[AgentEvent]:
        before = self._messages
        try:
            prepared = await self.compactor.prepare(before, self.last_request)
        except CompactionError as error:
            for event in self._drain():
                yield event
            if error.partial is not None:
                self._replace(error.partial, "prepare (partial)")
                yield HistoryChanged(len(self._messages))
            yield ErrorEvent(f"compaction: {error}; going on with the context as it is", "compaction")
            return
        for event in self._drain():
            yield event
        if len(prepared) != len(before) or any(new is not old for new, old in zip(prepared, before, strict=True)):
            self._replace(prepared, "prepare")
            yield HistoryChanged(len(self._messages))

    async def _reactive(self) -> AsyncIterator[AgentEvent]:
        try:
            compacted = await self.compactor.reactive_compact(self._messages, self.last_request)
        except CompactionError as error:
            for event in self._drain():
                yield event
            yield ErrorEvent(f"reactive compaction: {error}", "compaction")
            return
        self._replace(compacted, "reactive_compact")
        for event in self._drain():
            yield event
        yield HistoryChanged(len(self._messages))

    async def _compact(self, focus: str | None) -> AsyncIterator[AgentEvent]:
        try:
            compacted = await self.compactor.compact_history(self._messages, self.last_request, focus=focus)
        except CompactionError as error:
            for event in self._drain():
                yield event
            yield ErrorEvent(f"compact: {error}", "compaction")
            return
        self._replace(compacted, "compact")
        for event in self._drain():
            yield event
        yield HistoryChanged(len(self._messages))
        yield await self.measure()

    async def compact(self, focus: str | None = None) -> AsyncIterator[AgentEvent]:
        """Compact the history now, on the user's request (the focus goes into the summary request)."""
        if self.running:
            yield ErrorEvent("cannot compact while a turn is running", "busy")
            return
        if not self._messages:
            yield ErrorEvent("nothing to compact yet", "compaction")
            return
        self.running = True
        try:
            async for event in self._compact(focus):
                yield event
        finally:
            self.running = False

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
        await self.model.aclose()


def _last_request(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def make_model(settings: Settings, on_retry: Callable[[str], Any] | None = None) -> Model:
    """The Anthropic model when a key is configured (and --offline is not set), else the offline one."""
    if settings.use_offline:
        from core.model.offline import OfflineModel

        return OfflineModel(chunk_delay=settings.offline_chunk_delay)
    from core.model.anthropic import AnthropicModel

    return AnthropicModel(
        settings.model,
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
        timeout=settings.request_timeout,
        max_retries=settings.max_retries,
        retry_after_cap=settings.retry_after_cap,
        on_retry=on_retry,
    )
