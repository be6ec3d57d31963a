"""The agent: the turn loop, the tools and consent, over a conversation and a context keeper.

`Agent.run_turn(text)` is an async generator of events (core/events.py) in the order things happen:
the only channel from the core to a UI. A turn adds the request, then prepares the context, calls the
model and runs the tool batch until the model stops calling tools. Its parts do the rest: the
`Conversation` applies and records every change of the history (returning the `HistoryChanged`), the
`ContextKeeper` runs the compactor and the user's steering, `Economics` samples and prices every call,
a `ToolRun` runs one tool call (relaying its output). A tool that needs consent yields
`PermissionRequested` and waits for its `reply`. However a turn ends, `_finish` ends it, leaving an
API-valid history: every tool_use answered, no half-written assistant message kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.agent.build import build_stack
from core.agent.conversation import Conversation
from core.agent.economics import Economics
from core.agent.engine import EngineRunner
from core.agent.keeper import ContextKeeper, SummaryStep
from core.agent.meter import ContextMeter
from core.agent.schedule import Schedule
from core.agent.state import ConversationState
from core.agent.tool_run import ToolRun
from core.agent.turn import WINDOW_EXCEEDED, Turn, not_run
from core.agent.view import AgentView
from core.archive import Archive
from core.compaction.pipeline import Compactor
from core.compaction.review import SummaryReview, review_summary
from core.compaction.steering import Compaction, SteeringError
from core.config import Settings
from core.engines.edits import server_engine
from core.events import (
    AgentEvent,
    AssistantMessage,
    CompactionHeld,
    CompactionStep,
    ContextMeasured,
    ErrorEvent,
    Forecast,
    HistoryChanged,
    Notice,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from core.facts.rebuild import read_back
from core.history.intake import valid_text
from core.history.messages import text_of, unanswered_request, user_pin_key
from core.history.store import History
from core.history.thinking import ThinkingLedger
from core.history.tokens import TokenCounter
from core.markers import unanswered
from core.model.base import (
    Model,
    ModelError,
    ModelResponse,
    PromptTooLongError,
    Retrying,
    SummaryUsage,
    TextChunk,
)
from core.recall import Hit, RecallIndex
from core.sessions.log import SessionLog
from core.text import plural
from core.tools import COMPACT_TOOL_OUTPUT, PERMISSION_DENIED, ToolBox, ToolOutput
from core.tools.note import NOTE_TOOL, NOTE_TOOL_OUTPUT
from core.tools.prompt import SYSTEM_PROMPT
from core.usage.prices import Window, price_for
from core.values.records import FactReport, LedgerEntry
from core.values.samples import ContextSample, TokenCount

Message = dict[str, Any]
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
        allow_all: bool | None = None,
        clock: Callable[[], float] | None = None,
        recall: RecallIndex | None = None,
    ) -> None:
        self.model = model
        self.toolbox = toolbox
        self.settings = settings or Settings(workdir=toolbox.workspace.root)
        workdir = toolbox.workspace.root
        self.conversation = Conversation(
            messages or [],
            session=session,
            state_dir=self.settings.state_dir,
            meta={"model": model.name, "workdir": str(workdir)},
        )
        self.tokens = token_counter or TokenCounter()
        if compactor.count_tokens is None:  # what a step takes out is counted for its ledger entries
            compactor.count_tokens = self.tokens.count_text
        self.state = ConversationState(
            self.conversation,
            price=None if model.offline else price_for(model.name),
            offline=model.offline,
            ttl=self.settings.cache_ttl,
            auto_compact=self.settings.auto_compact,
            undo_depth=self.settings.undo_depth,
            pins=compactor.pins,
            notebook=compactor.notebook,
            clock=clock,
        )
        """The conversation's state: history, ledger, pins, undo records, turn flag, timeline, cache."""
        self.keeper = ContextKeeper(self.state, compactor, count_tokens=self.tokens.count_text)
        self.recall = recall if recall is not None else RecallIndex(compactor.archive)
        """The search index of what the archive holds (core/recall/): `search` and the search_context tool."""
        if toolbox.searcher is None:
            toolbox.searcher = self.recall
        self.economics = Economics(self.state, model, self.settings, self.tokens)
        """Prices every call and change against the prompt cache (core/agent/economics.py)."""
        server = server_engine(self.settings)
        self.engine = EngineRunner(server, model.offline, self.state)
        self.schedule = Schedule(
            self.state,
            compactor,
            model,
            self.tokens,
            timing=self.settings.compaction_timing,
            ceiling_tokens=self.settings.cache_ceiling_tokens,
            server=self.engine.hold,
        )
        """When the steps run: eager, or cache-aware (core/agent/schedule.py)."""
        self.thinking = ThinkingLedger()
        """The thinking blocks the API returned, checked before a request replays them."""
        self.thinking.adopt(self.conversation.history, None)
        # a workdir whose name is not UTF-8 would make every request unencodable
        self.system_prompt = system_prompt or valid_text(SYSTEM_PROMPT.format(workdir=workdir))
        self.meter = ContextMeter(
            self.state,
            compactor.settings.context_char_limit,
            model,
            self.tokens,
            self.system_prompt,
            toolbox.schemas,
        )
        """The context's figures and the next request's size (core/agent/meter.py)."""
        self.max_steps = max_steps
        self.allow_all = self.settings.yes if allow_all is None else allow_all
        """Run tools that need consent without asking (`--yes`)."""
        self.allowed_for_session: set[str] = set()
        """Tools the user allowed for the rest of this session ("session" answers)."""
        self._announce: Notice | None = None  # said once, at the start of the first turn

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        model: Model | None = None,
        allow_all: bool | None = None,
        archive: Archive | None = None,
    ) -> Agent:
        """The whole stack from settings (core/agent/build.py); `archive`: one a first frame shows already."""
        stack = build_stack(settings, model, archive)
        agent = cls(
            stack.model,
            stack.toolbox,
            stack.compactor,
            settings=stack.settings,
            session=stack.session,
            messages=stack.replay.messages,
            allow_all=allow_all,
        )
        agent.keeper.take_over(
            stack.replay.compactions, stack.replay.pins, stack.replay.ledger, stack.replay.notes
        )
        agent.thinking.adopt(stack.replay.messages, stack.replay.meta.get("model"))
        if stack.resumed is not None:
            agent.conversation.resumed_from = str(stack.resumed)
            agent._announce = Notice(
                f"resumed {plural(len(stack.replay.messages), 'message')} from {stack.resumed}"
            )
        return agent

    def take_resume_notice(self) -> Notice | None:
        """The "resumed ..." notice the first turn would yield, taken by a view that says it itself when
        it shows the resumed history (the TUI): the first turn then does not say it again. None when
        there is none (not resumed, or said already)."""
        notice, self._announce = self._announce, None
        return notice

    # --- what the parts hold ---------------------------------------------------------------------

    @property
    def view(self) -> AgentView:
        """What a UI reads of this agent, read-only (core/agent/view.py)."""
        return AgentView(self)

    @property
    def messages(self) -> History:
        """The current history (plain dicts, Messages API shape), in a list that records its changes."""
        return self.conversation.history

    @property
    def chars(self) -> int:
        return self.conversation.chars

    @property
    def session(self) -> SessionLog | None:
        return self.conversation.session

    @property
    def resumed_from(self) -> str | None:
        return self.conversation.resumed_from

    @property
    def compactor(self) -> Compactor:
        return self.keeper.compactor

    @property
    def archive(self) -> Archive:
        return self.keeper.archive

    @property
    def compactions(self) -> list[Compaction]:
        """Every compaction applied to this history, oldest first (what `undo_compaction` reverses)."""
        return self.keeper.compactions

    @property
    def auto_compact(self) -> bool:
        """False pauses the pipeline before each call; reactive_compact still guards an API refusal."""
        return self.state.auto_compact

    @auto_compact.setter
    def auto_compact(self, value: bool) -> None:
        self.state.auto_compact = value

    @property
    def running(self) -> bool:
        """A turn (or a compaction the person asked for) is running: the one turn flag."""
        return self.state.running

    @running.setter
    def running(self, value: bool) -> None:
        self.state.running = value

    @property
    def pinned(self) -> frozenset[str]:
        """What every compaction step keeps byte-exact: tool_use ids and `user:` keys."""
        return self.keeper.pinned

    @property
    def notes(self) -> tuple[str, ...]:
        """The model's notes (the note tool), numbered from 1 in this order; every compaction carries
        them verbatim (core/compaction/notes.py)."""
        return self.state.notes

    @property
    def ledger(self) -> list[LedgerEntry]:
        """**contract** What each step and drop took out of the context, oldest first (core/facts/)."""
        return list(self.keeper.ledger.entries)

    def facts(self) -> FactReport:
        """**contract** Every fact the conversation held, visible or not in the history as it is now."""
        return self.conversation.facts.report()

    async def keep_fact(self, text: str, kind: str = "constraint") -> tuple[HistoryChanged | None, Notice]:
        """Make a fact visible again and keep it through every later step (its message pinned, or a note)."""
        self._idle("keep a fact")
        return await self.keeper.keep_fact(text, kind)

    def review_summary(self, summary: str | None) -> SummaryReview:
        """Which visible facts a summary with this text keeps and which it drops (None: before it is written)."""
        return review_summary(self.facts(), summary, self.messages, self.conversation.request, self.pinned)

    @property
    def timeline(self) -> list[ContextSample]:
        """**contract** One sample per model call, oldest first (what was sent, the steps before it, usage)."""
        return list(self.state.timeline.samples)

    async def search(self, query: str, limit: int = 5) -> list[Hit]:
        """**contract** The archived files (tool results, transcripts, summaries) that hold `query`, plain
        text, best first, at most `limit` (1..20): each hit's `.path`, `.line`, `.snippet`, `.score`."""
        return list((await self.recall.search(query, limit)).hits)

    # --- the turn -------------------------------------------------------------------------------

    async def run_turn(self, text: str) -> AsyncIterator[AgentEvent]:
        """Run one user turn to the end, yielding every event as it happens.

        Cancelled, it repairs the history and yields that change before the cancel goes on, so a
        view that applies every HistoryChanged stays equal to the history."""
        if self.running:
            yield ErrorEvent("a turn is already running", "busy")
            return
        self.running = True
        turn = Turn(valid_text(text))  # argv and stdin give undecodable bytes as lone surrogates
        try:
            async with contextlib.aclosing(self._turn(turn)) as events:
                async for event in events:
                    yield self.conversation.log(event)
                    if notice := self.conversation.session_notice():
                        yield notice
            if turn.error is not None:
                yield self.conversation.log(ErrorEvent(turn.error, turn.error_kind))
            if (
                notice := await self.conversation.saved()
            ):  # the turn is on disk (or says why not) before it ends
                yield notice
            turn.finished = True
            usage = dict(turn.response.usage) if turn.response is not None and turn.error is None else {}
            yield TurnFinished(turn.final_text, error=turn.error, usage=usage)
        except asyncio.CancelledError:
            if repaired := self._finish(turn):
                yield repaired
            raise
        finally:
            self._finish(turn)

    async def _turn(self, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        """Prepare, one model call, one tool batch; again until the model stops calling tools."""
        async for event in self._add_request(turn.request):
            yield event
        yield TurnStarted(turn.request)
        for notice in (self._announce, self.engine.notice):
            if notice is not None:
                yield notice
        self._announce = self.engine.notice = None
        reactive_retries = 0
        for _ in range(self.max_steps):
            async for event in self._prepare(turn.request):
                yield event
            measured = await self.measure()
            yield measured
            if not self.model.offline and (
                problem := self.thinking.problem(self.conversation.history, self.model.name)
            ):
                turn.fail(problem, "thinking")
                return
            turn.response = None
            await self.economics.start(
                measured, self.system_prompt, self.toolbox.schemas, self.conversation.history
            )
            try:
                async with contextlib.aclosing(self._call_model(turn)) as stream:
                    async for event in stream:
                        yield event
            except ModelError as error:
                for event in self.economics.finish(None, str(error)):
                    yield event
                if not isinstance(error, PromptTooLongError):
                    turn.fail(str(error), error.kind)
                    return
                if reactive_retries >= self.compactor.settings.max_reactive_retries:
                    turn.fail(
                        f"the API still refuses the context after reactive compaction: {error}", error.kind
                    )
                    return
                reactive_retries += 1
                failed = None
                async for event in self._compacting(self.keeper.compact("reactive_compact", turn.request)):
                    if isinstance(event, ErrorEvent):
                        failed = event  # the turn ends with it: the same request would be refused again
                    else:
                        yield event
                if failed is not None:
                    turn.fail(failed.message, failed.kind)
                    return
                continue
            response = turn.response
            for step in self.engine.read(
                response
            ):  # the API's own steps (before the call's sample, which names them)
                yield step
            for event in self.economics.finish(response):
                yield event
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

    async def _prepare(self, request: str) -> AsyncIterator[AgentEvent]:
        """The pipeline before a call, as the schedule plans it: with the cache-aware timing, the steps
        that would rewrite a warm cached prefix wait (a CompactionHeld says which, and what they
        would cost now); under a server engine only tool_result_budget runs."""
        plan = await self.schedule.plan(request, self.system_prompt, self.toolbox.schemas, self.economics)
        self.economics.hold(plan.held)
        if plan.held is not None:
            yield plan.held
        async for event in self._compacting(self.keeper.prepare(request, hold=plan.hold)):
            yield event

    async def _compacting(
        self, events: AsyncIterator[AgentEvent | SummaryUsage], by: str | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The keeper's events, passed on: each step priced against the cache and noted for the next
        call's sample (`by`: what ran it, when not the pipeline), each summary call sampled."""
        self.economics.before(self.chars)
        async for event in events:
            yield self.economics.note(event, by)

    async def _add_request(self, request: str) -> AsyncGenerator[AgentEvent, None]:
        """Append the request so that the model sees one clear request.

        A turn that failed leaves its request unanswered at the end of the history. The same text
        sent again is that request again (kept once); a different one follows the earlier request,
        which is marked as unanswered so the model does not take both for the current one (unless
        it is pinned: a pinned message stays byte-exact).
        """
        history = self.conversation.history
        last = history[-1] if history else None
        # a pinned message is never rewritten (it may also just follow a summary that carried it)
        if last is not None and unanswered_request(last) and user_pin_key(last) not in self.pinned:
            if last["content"] == request:
                return
            marked = {**last, "content": unanswered(last["content"])}
            changed = self.conversation.replace([*history[:-1], marked], "unanswered request")
            if changed := self.economics.track(changed, history, None):
                yield changed
        if (warning := self.keeper.oversize_notice(request)) is not None:
            yield warning
        yield self.conversation.append({"role": "user", "content": request}, "user")

    def oversize(self, request: str) -> int | None:
        """The size of `request` as a message's content (JSON chars) when it alone is over the context
        limit, which no compaction step can shrink; None when it fits."""
        return self.keeper.oversize(request)

    async def _call_model(self, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        """Stream one model call; the complete reply lands in `turn.response`."""
        stream = self.model.stream(
            system=self.system_prompt,
            messages=self.conversation.history,
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

    async def _record_reply(self, turn: Turn, response: ModelResponse) -> AsyncGenerator[AgentEvent, None]:
        """Append the complete assistant message; its tool calls become the batch to answer."""
        if response.prompt_tokens:
            # with caching, input_tokens is only the uncached part
            self.state.last_input_tokens = response.prompt_tokens
        content = [block for block in response.content if isinstance(block, dict)]
        if not content:
            content = [{"type": "text", "text": "(no reply)"}]
        turn.batch = [block for block in content if block.get("type") == "tool_use"]
        turn.answered = []
        self.thinking.received(content, self.model.name)
        yield self.conversation.append({"role": "assistant", "content": content}, "assistant")
        yield AssistantMessage(content, response.stop_reason)
        turn.final_text = text_of({"content": content}) or turn.final_text
        if response.stop_reason == "model_context_window_exceeded":
            yield Notice(WINDOW_EXCEEDED, "warning")
            if turn.batch:  # a cut reply's calls are not run; the history stays valid
                results, turn.batch = not_run(turn.batch), []
                yield self.conversation.append({"role": "user", "content": results}, "tools")

    async def _run_tools(self, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        """Run the batch in order (asking for consent where needed; a note call changes the notes as it
        comes, with a NotesChanged after its ToolCallFinished), then the compact tool if called."""
        compact_requested = False
        compact_focus: str | None = None
        for block in turn.batch:
            tool_use_id = str(block.get("id"))
            name = str(block.get("name", ""))
            raw_input = block.get("input")
            tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
            yield ToolCallStarted(tool_use_id, name, tool_input)
            allowed = True
            if self.toolbox.needs_permission(name, tool_input) and not (
                self.allow_all or name in self.allowed_for_session
            ):
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
            output = ToolOutput(PERMISSION_DENIED, is_error=True)
            if allowed:
                turn.running = ToolRun(
                    self.toolbox, tool_use_id, name, tool_input, self.settings.tool_output_limit
                )
                async for delta in turn.running.events():
                    yield delta
                output, turn.running = turn.running.output or output, None
            elapsed = time.monotonic() - started
            noted = None
            if name == "compact" and output.content == COMPACT_TOOL_OUTPUT:
                compact_requested = True
                focus = tool_input.get("focus")
                compact_focus = str(focus) if focus else compact_focus
            elif name == NOTE_TOOL and output.content == NOTE_TOOL_OUTPUT and not output.is_error:
                limit = self.compactor.settings.notes_char_limit
                output, noted = self.state.note(tool_use_id, tool_input, limit)
            result: Message = {
                "type": "tool_result",
                "tool_use_id": block.get("id"),
                "content": output.content,
            }
            if output.is_error:
                result["is_error"] = True
            turn.answered.append(result)
            yield ToolCallFinished(
                tool_use_id, name, tool_input, output.content, len(output.content), elapsed, output.is_error
            )
            if noted is not None:
                yield noted
        answered, turn.batch, turn.answered = turn.answered, [], []
        yield self.conversation.append({"role": "user", "content": answered}, "tools")
        if compact_requested:
            events = self.keeper.compact("compact_history", turn.request, compact_focus)
            async for event in self._compacting(events, "compact"):
                yield event
            yield await self.measure()

    def _finish(self, turn: Turn) -> HistoryChanged | None:
        """The one place a turn ends (completed, failed, cancelled or closed): repair and record it
        (`Turn.end`). Runs once; returns the repair (the interrupted tool calls answered), if needed."""
        if turn.ended:
            return None
        self.running = False
        return turn.end(self.conversation, self.economics)

    # --- measuring (core/agent/meter.py) -------------------------------------------------------------

    @property
    def last_input_tokens(self) -> int | None:
        return self.state.last_input_tokens

    async def measure(self) -> ContextMeasured:
        """The figures of the history as it is now (tokens counted off the event loop)."""
        return await self.meter.measure()

    async def count_next_request(self, debounce: float = 0.0) -> TokenCount:
        """The size of the next request: exact from the model's count_tokens, else the labelled estimate."""
        return await self.meter.count_next_request(debounce)

    async def forecast(self, debounce: float = 0.0) -> AsyncIterator[Forecast]:
        """What the next call would be, for a view to show after a change (the one thing a view asks):
        its preview and the history's figures (when no turn runs), then the request's size, exact
        from count_tokens when the model can count, else the labelled tiktoken estimate."""
        if debounce > 0:
            await asyncio.sleep(debounce)
        if not self.running:
            steps, held = await self._next_steps() if self.auto_compact else ([], None)
            if not self.running:  # a turn began meanwhile: its events say what happens
                preview = self.keeper.next_call(steps, held, self.economics.timing)
                yield replace(preview, server=self.engine.forecast())
                yield await self.measure()
        yield await self.count_next_request()

    async def _next_steps(self) -> tuple[list[CompactionStep], CompactionHeld | None]:
        """What the next prepare would run now, each step priced, and what would wait for the cache."""
        return await self.schedule.forecast(
            self.conversation.request, self.system_prompt, self.toolbox.schemas, self.economics
        )

    async def window(self) -> Window:
        """The model's context window: the Models API's figure, else the table, else unknown."""
        return await self.meter.window()

    # --- steering (DESIGN.md, "Steering"): each refuses while a turn runs -----------------------------

    def _idle(self, action: str) -> None:
        """Refuse an action that changes or reads the history while a turn is running."""
        if self.running:
            raise SteeringError(f"cannot {action} while a turn is running")

    async def drop(self, tool_use_id: str) -> HistoryChanged | None:
        """Archive one tool result now and leave a placeholder, exactly as micro_compact would."""
        self._idle("drop a result")
        before = self.chars
        return self._steered(await self.keeper.drop(tool_use_id), "drop", before)

    async def restore(self, path: str) -> HistoryChanged | None:
        """The archived text at `path` is back in context, byte-exact."""
        self._idle("restore a result")
        before = self.chars
        return self._steered(await self.keeper.restore(path), "restore", before)

    async def undo_compaction(self) -> HistoryChanged | None:
        """Reverse the last compaction: what it removed is back, byte-exact and in place, and every
        message added after it stays after it. Falsy when there is nothing to undo."""
        self._idle("undo a compaction")
        before = self.chars
        return self._steered(await self.keeper.undo(), "undo", before)

    def _steered(self, changed: HistoryChanged | None, action: str, before: int) -> HistoryChanged | None:
        """A steering action's change, followed for the cache and priced (what it re-writes, its break-even)."""
        return self.economics.track(changed, self.conversation.history, action, before)

    async def pin(self, key: str) -> Notice:
        """Pin a tool result (by its tool_use id) or a user message (by its `user:` key, see `pin_key`).
        The notice says how the next call's compaction cost to the cache changes with it."""
        return await self._pins_changed(lambda: self.keeper.pin(key))

    async def unpin(self, key: str) -> Notice:
        """Unpin a tool result or a user message; compaction may shorten it again."""
        return await self._pins_changed(lambda: self.keeper.unpin(key))

    async def _pins_changed(self, change: Callable[[], Notice]) -> Notice:
        """A pin or unpin changes no byte of the history, but what the next prepare would rewrite:
        its notice carries the difference in cached tokens invalidated, and the break-even."""
        if self.running or not self.auto_compact or self.model.offline or self.state.tracker.base is None:
            return change()
        request = self.conversation.request
        before = await self.schedule.steps(request)  # the last forecast's run, when nothing changed since
        notice = change()
        return self.economics.pins_changed(notice, before, await self.schedule.steps(request))

    def pin_key(self, index: int) -> str | None:
        """The key `pin` takes for the message at `index` (None for a marker or a reply)."""
        return self.keeper.pin_key(index)

    def pinned_chars(self) -> int:
        return self.keeper.pinned_chars()

    async def preview(self) -> list[CompactionStep]:
        """What the next prepare would do now, step by step (writes nothing, calls no model)."""
        self._idle("preview the next call")
        return (await self._next_steps())[0]

    async def recompact_warning(self) -> Notice | None:
        """After an undo: a warning when automatic compaction would compact again on the next call."""
        if not self.auto_compact or self.running:
            return None
        return self.keeper.recompact_warning(await self.preview())

    async def draft_summary(self, focus: str | None = None) -> str:
        """A summary of the history as a manual compact would ask for it; changes nothing. Review (and
        edit) it, then `compact(focus, summary=text)` puts exactly that text in."""
        self._idle("draft a summary")
        text, calls = await self.keeper.draft_summary(self.conversation.request, focus)
        for call in calls:
            self.economics.note(call)  # sampled and priced with the session's other calls
        return text

    async def archive_request(self, text: str) -> str:
        """Save a request too long for the context in the archive; returns the short message to send instead."""
        return await self.keeper.archive_request(text)

    async def compact(
        self, focus: str | None = None, summary: str | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Compact the history now, on the user's request (the focus goes into the summary request);
        `summary` (e.g. a reviewed `draft_summary`) is used exactly as given instead of asking the model."""
        async for event in self._user_compaction("compact_history", focus, summary):
            yield event

    async def _user_compaction(
        self, step: SummaryStep, focus: str | None, summary: str | None
    ) -> AsyncIterator[AgentEvent]:
        if self.running:
            yield ErrorEvent("cannot compact while a turn is running", "busy")
            return
        if not self.conversation.history:
            yield ErrorEvent("nothing to compact yet", "compaction")
            return
        self.running = True
        try:
            events = self.keeper.compact(step, self.conversation.request, focus, summary)
            async for event in self._compacting(events, "compact"):
                yield self.conversation.log(event)
                if notice := self.conversation.session_notice():
                    yield notice
            yield await self.measure()
        finally:
            self.running = False

    # --- sessions ---------------------------------------------------------------------------------

    def new_session(self) -> HistoryChanged:
        """Forget the history and start a new session file (archives and old sessions stay on disk)."""
        changed = self.conversation.start_new([], "new session")
        self._forget_session_state()
        return changed

    async def resume(self, path: Path) -> HistoryChanged:
        """Continue the session in `path` (the session picker): its validated history replaces this one
        and a new session file records it, with its pins and undo records, as `--resume` does at start.
        The timeline and the session's permissions start empty, as after `new_session`."""
        self._idle("resume a session")
        replay = await asyncio.to_thread(SessionLog.replay, path, self.settings.undo_depth)
        facts = await asyncio.to_thread(read_back, replay.messages, self.archive)
        self._idle("resume a session")
        changed = self.conversation.start_new(replay.messages, "resume", facts)
        self._forget_session_state()
        self.conversation.resumed_from = str(path)
        self.keeper.take_over(replay.compactions, replay.pins, replay.ledger, replay.notes)
        self.thinking.adopt(replay.messages, replay.meta.get("model"))
        return changed

    def _forget_session_state(self) -> None:
        self.allowed_for_session.clear()
        self.state.reset()  # cost is per session; nothing is known of a cache
        self.economics.reset()
        self.thinking.clear()
        if forget := getattr(self.model, "forget_previous", None):
            forget()  # the next request names no previous message in its cache diagnostics

    async def aclose(self) -> None:
        await self.conversation.close()
        await self.model.aclose()
        await asyncio.to_thread(self.recall.close)


__all__ = ["Agent"]
