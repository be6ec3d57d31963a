"""The compaction pipeline, in the order it runs.

    tool_result_budget -> snip_compact -> micro_compact -> fit_tool_results -> compact_history

The first two run before every model call; micro_compact and fit_tool_results only when the
history is over `context_char_limit`; compact_history (the only lossy step, and the only one that
calls the model) only when it is still over. reactive_compact is the fallback when the API says
"prompt is too long". Every step writes what it removes to the Archive before replacing anything,
and no step ever separates a tool_use from its tool_result.

The steps never mutate the list they are given or any message in it: a step copies the messages it
changes and returns a new list.

A call reports as it goes: `prepare_events`, `compact_events` and `reactive_events` yield each step
as it is done (a `CompactionStep`), a `Retrying` for every retry inside the summary call, and last
the `Outcome`. The contract's coroutines (`prepare`, `compact_history`, `reactive_compact`) run the
same calls and hand each step to `on_event`.

Steering: `Compactor.pinned` holds tool_use ids whose results survive every step byte-exact (and
`user:` keys, `core.history.messages.user_pin_key`, of user messages that do the same), and
`Compactor.dry_run` makes the decisions `prepare` would make, with the same figures, writing
nothing and calling no model. `Compactor.notes` are the model's notes: a step that removes messages
puts them, verbatim, right after its marker or summary (core/compaction/notes.py).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any

from core.archive import Archive
from core.compaction.notes import Notebook, is_notes, notes_to_carry
from core.compaction.pins import Pins, carried_pins, holding, is_pinned, pinned_messages, request_pinned
from core.compaction.plans import (
    TRANSCRIPT_PATH_ESTIMATE,
    Replacement,
    SnipPlan,
    as_list,
    is_request_copy,
    reactive_cut,
    request_last,
    request_visible,
    unchanged,
    unseen_and_read,
)
from core.compaction.run import (
    CompactionEvent,
    CompactionRun,
    CountTokens,
    EventSink,
    Outcome,
    Report,
    finish,
    first_change,
)
from core.compaction.settings import CompactionError, CompactionSettings
from core.compaction.summary import Summarize, summary_events
from core.events import CompactionStep
from core.facts.entries import cut_entries, message_entries, removed_positions
from core.history.messages import has_tool_use, is_tool_result, result_text
from core.history.sizes import list_chars, message_chars, request_oversize
from core.history.store import HistorySizer
from core.markers import notes_message, parse_marker, persisted_output, placeholder, summary_message
from core.model.base import SummaryUsage
from core.text import plural
from core.values.splice import Splice

Message = dict[str, Any]


def _discard(_: CompactionStep) -> None:
    """Where a step called directly reports when nobody listens."""


class Compactor:
    """Runs the pipeline before each model call; every reduction is archived first.

    Two rules hold for every step: nothing is replaced before its file is saved, and a step whose
    result would be larger than its input is not applied (its event says so, with chars_after equal
    to chars_before, and the next step is tried).
    """

    def __init__(
        self,
        archive: Archive,
        summarize: Summarize | None = None,
        settings: CompactionSettings | None = None,
        on_event: EventSink | None = None,
        *,
        pins: Pins | None = None,
        notebook: Notebook | None = None,
        count_tokens: CountTokens | None = None,
    ) -> None:
        self.archive = archive
        self.summarize = summarize
        self.settings = settings or CompactionSettings()
        self.on_event = on_event
        """Where the contract's coroutines (and a step called directly) hand each step."""
        self.count_tokens = count_tokens  # the tokens of what a step takes out (ledger entries)
        self.pins = pins if pins is not None else Pins()
        """The pins every step reads (the agent's state owns them and hands the compactor the object)."""
        self.notebook = notebook if notebook is not None else Notebook()
        """The model's notes, which every step that removes messages carries (core/compaction/notes.py)."""
        self._sizer = HistorySizer()
        self._run: CompactionRun | None = None  # the call running now
        # A request that alone is over the limit: the summary was refused for it once (with the
        # warning); prepare does not ask the model again while it is the current request.

    @property
    def pinned(self) -> frozenset[str]:
        """tool_use ids whose results every step leaves byte-exact (and in a valid pair), and the
        `user:` keys of user messages every step leaves byte-exact."""
        return self.pins.keys

    @pinned.setter
    def pinned(self, keys: frozenset[str]) -> None:
        self.pins.keys = keys

    @property
    def notes(self) -> tuple[str, ...]:
        """The model's notes: every step keeps them in the context verbatim (core/compaction/notes.py)."""
        return self.notebook.notes

    def estimate_chars(self, messages: Sequence[Message]) -> int:
        """`core.history.estimate_chars`, incremental for the history this compactor keeps seeing."""
        return self._sizer.measure(messages)

    def _step_run(self, messages: Sequence[Message]) -> CompactionRun:
        """The run a step reports to: the call's own, or for a step called directly one that hands
        its event to `on_event` at once."""
        if self._run is not None:
            return self._run
        return CompactionRun(
            self.archive,
            self._sizer,
            messages,
            sink=self.on_event or _discard,
            count_tokens=self.count_tokens,
            restore_limit=self.settings.context_char_limit,
        )

    # --- step 1 --------------------------------------------------------------------------------

    async def tool_result_budget(self, messages: Sequence[Message]) -> list[Message]:
        """Step 1, every call: keep the newest tool-result batch within its budget.

        Only the last message is looked at. When its tool_results add up to more than
        `tool_result_batch_char_limit`, the largest results over `large_result_char_limit` are
        planned, largest first, until the batch fits; then all of them are saved whole and only
        then replaced by a <persisted-output> block with the path and a preview of
        `persisted_preview_chars`. A result whose block would not be shorter stays as it is.
        """
        settings = self.settings
        if not messages or not is_tool_result(messages[-1]):
            return unchanged(messages)
        index = len(messages) - 1
        content = messages[index]["content"]
        sizes = {
            block_index: len(result_text(block.get("content", "")))
            for block_index, block in enumerate(content)
            if isinstance(block, dict) and block.get("type") == "tool_result"
        }
        total = sum(sizes.values())
        if total <= settings.tool_result_batch_char_limit:
            return unchanged(messages)
        plan: list[Replacement] = []
        for block_index in sorted(sizes, key=lambda position: sizes[position], reverse=True):
            if total <= settings.tool_result_batch_char_limit:
                break
            if sizes[block_index] <= settings.large_result_char_limit:
                continue
            block = content[block_index]
            if is_pinned(self.pinned, block):
                continue
            text = result_text(block.get("content", ""))
            item = Replacement(
                index, block_index, block, text, None, text[: settings.persisted_preview_chars]
            )
            item.old_size = message_chars(block.get("content", ""))
            replacement = persisted_output(
                self.archive.expected_tool_result_path(item.tool_use_id), item.preview
            )
            if message_chars(replacement) >= item.old_size:
                continue
            plan.append(item)
            total += len(replacement) - sizes[block_index]
        return await self._step_run(messages).apply_plan(
            messages,
            plan,
            lambda item: persisted_output(item.saved_path, item.preview),
            "tool_result_budget",
            lambda done: f"{len(done)} large result(s) persisted",
        )

    # --- step 2 --------------------------------------------------------------------------------

    async def snip_compact(
        self, messages: Sequence[Message], active_request: str | None = None
    ) -> list[Message]:
        """Step 2, every call: once there are `snip_trigger_messages` messages, cut the middle.

        The whole list goes to a transcript first; what stays is the first `snip_keep_head`
        messages, one `[N messages archived at PATH]` marker and the newest messages, down to
        `snip_target_messages` in all. Cut points move so that no tool_use/tool_result pair is
        split, so slightly more may stay.

        Repeated snips are stable: an earlier snip marker of this archive in the middle counts
        for the messages it stands for, so N counts every message archived so far, and the new
        transcript (the whole list) holds the earlier marker, which names the earlier transcript.
        When the middle holds nothing new (only the earlier marker and copies of the request),
        nothing is snipped. If `active_request` is given and the cut archived every copy of it,
        it is put back right after the marker, before the kept tail: the model reads the
        request, then the work done on it. The model's notes follow the marker (one notes message)
        unless the kept messages hold that very message already; an older notes message in the
        middle is not something new to snip.
        """
        run = self._step_run(messages)
        plan = self._plan_snip(run, messages, active_request)
        if plan is None:
            return unchanged(messages)
        estimate = plan.result(messages, TRANSCRIPT_PATH_ESTIMATE, active_request)
        if plan.outweighs(messages, estimate):
            measured = self._sizer.sizes(messages)
            await run.not_applied(
                "snip_compact",
                list_chars(measured, len(measured)),
                plan.chars(measured, estimate),
                f"the marker would be larger than the {plural(plan.archived_now, 'message')} it replaces",
            )
            return unchanged(messages)
        # One pass writes the transcript (complete before anything is replaced) and measures every message.
        transcript, written = await run.transcript(messages)
        sizes = written if written is not None else tuple(self._sizer.sizes(messages))
        before = list_chars(sizes, len(sizes))
        result = plan.result(messages, transcript, active_request)
        changes = plan.splices(messages, result)
        after = plan.chars(sizes, result)
        if after > before:
            await run.not_applied(
                "snip_compact",
                before,
                after,
                f"the marker would be larger than the {plural(plan.archived_now, 'message')} it replaces",
            )
            return unchanged(messages)
        gone = removed_positions(messages, plan.head_end, plan.tail_start, changes[0].added)
        removed = message_entries("snip_compact", messages, gone, transcript, sizes.__getitem__)
        await run.emit(
            "snip_compact",
            before,
            after,
            plan.archived_now,
            [transcript],
            plan.detail(),
            first_change(changes),
            removed,
        )
        return run.derived(messages, result, changes, after)

    def _plan_snip(
        self, run: CompactionRun, messages: Sequence[Message], active_request: str | None
    ) -> SnipPlan | None:
        settings = self.settings
        count = len(messages)
        if count < settings.snip_trigger_messages:
            return None
        head_end = settings.snip_keep_head
        tail_start = count - (settings.snip_target_messages - head_end - 1)
        if has_tool_use(messages[head_end - 1]):
            while head_end < tail_start and is_tool_result(messages[head_end]):
                head_end += 1
        if (
            0 < tail_start < count
            and is_tool_result(messages[tail_start])
            and has_tool_use(messages[tail_start - 1])
        ):
            tail_start -= 1
        if head_end >= tail_start:
            return None
        kept = pinned_messages(self.pinned, messages, head_end, tail_start)
        archived_before = archived_now = 0
        new = 0
        for index in range(head_end, tail_start):
            if index in kept:
                continue
            message = messages[index]
            earlier = run.own_snip_count(message)
            if earlier is not None:
                archived_before += earlier
                continue
            archived_now += 1
            if not is_request_copy(message, active_request) and not is_notes(message):
                new += 1
        if new == 0:
            return None
        staying = [*messages[:head_end], *(messages[index] for index in sorted(kept)), *messages[tail_start:]]
        readd = active_request is not None and not request_visible(staying, active_request)
        notes = notes_to_carry(self.notes, staying)
        return SnipPlan(
            head_end, tail_start, archived_before, archived_now, readd, tuple(sorted(kept)), tuple(notes)
        )

    # --- step 3 --------------------------------------------------------------------------------

    async def micro_compact(self, messages: Sequence[Message], target_chars: int) -> list[Message]:
        """Step 3, only over the limit: replace older tool results the model has already read.

        The newest `keep_recent_results` read results, results of `micro_min_chars` or fewer and
        unseen results (after the last assistant message) are never touched. Older ones, oldest
        first, are saved and replaced by `[Earlier tool result saved at PATH]` until the history
        is at most `target_chars`. A result that already is this archive's own <persisted-output>
        block keeps the file it points to; a placeholder that would not be shorter is not used.
        """
        settings = self.settings
        run = self._step_run(messages)
        before = self.estimate_chars(messages)
        _, consumed = unseen_and_read(messages)
        keep = settings.keep_recent_results
        candidates = consumed[:-keep] if keep > 0 else consumed
        plan: list[Replacement] = []
        projected = before
        for index, block_index in candidates:
            if projected <= target_chars:
                break
            block = messages[index]["content"][block_index]
            if is_pinned(self.pinned, block):
                continue
            content = block.get("content", "")
            text = result_text(content)
            if len(text) <= settings.micro_min_chars:
                continue
            marker = parse_marker(content)
            if marker is not None and marker.kind == "placeholder":
                continue
            item = Replacement(index, block_index, block, text, None)
            item.path = run.own_persisted_path(content, item.tool_use_id)
            item.old_size = message_chars(content)
            expected = item.path or self.archive.expected_tool_result_path(item.tool_use_id)
            change = message_chars(placeholder(expected)) - item.old_size
            if change >= 0:
                continue
            projected += change
            plan.append(item)
        return await run.apply_plan(
            messages,
            plan,
            lambda item: placeholder(item.saved_path),
            "micro_compact",
            lambda done: f"{len(done)} older read result(s) replaced by placeholders",
        )

    async def fit_tool_results(self, messages: Sequence[Message], target_chars: int) -> list[Message]:
        """Step 3b, only if still over the limit: the last lossless step before the summary.

        The largest results are saved and replaced by a <persisted-output> block with a
        `fit_preview_chars` preview until the history is at most `target_chars`: first the
        unseen results (so the model is not summarised away before it has even seen them), then
        the read results micro_compact keeps (the newest `keep_recent_results`) and any other read
        result still whole, largest first. Only when none of them can be shortened further does
        compact_history run. The event names the kept-recent results it shortened.
        """
        settings = self.settings
        run = self._step_run(messages)
        before = self.estimate_chars(messages)
        unseen, consumed = unseen_and_read(messages)
        keep = settings.keep_recent_results
        kept_recent = set(consumed[-keep:]) if keep > 0 else set()
        contents = {
            position: messages[position[0]]["content"][position[1]].get("content", "")
            for position in [*unseen, *consumed]
        }
        sizes = {position: message_chars(content) for position, content in contents.items()}
        order = [
            *sorted(unseen, key=lambda item: (-sizes[item], item)),
            *sorted(consumed, key=lambda item: (-sizes[item], item)),
        ]
        plan: list[Replacement] = []
        projected = before
        for position in order:
            if projected <= target_chars:
                break
            item = self._plan_fit(run, messages, position, contents[position])
            if item is None:
                continue
            expected = item.path or self.archive.expected_tool_result_path(item.tool_use_id)
            replacement_size = message_chars(persisted_output(expected, item.preview))
            if replacement_size >= sizes[position]:
                continue
            projected += replacement_size - sizes[position]
            item.old_size = sizes[position]
            plan.append(item)

        def detail(done: list[Replacement]) -> str:
            recent = [item.tool_use_id for item in done if (item.index, item.block_index) in kept_recent]
            fresh = sum((item.index, item.block_index) in unseen for item in done)
            text = f"{fresh} unseen and {len(done) - fresh} read result(s) persisted with short previews"
            if recent:
                text += f"; kept-recent read results shortened: {', '.join(recent)}"
            return text

        return await run.apply_plan(
            messages,
            plan,
            lambda item: persisted_output(item.saved_path, item.preview),
            "fit_tool_results",
            detail,
        )

    def _plan_fit(
        self, run: CompactionRun, messages: Sequence[Message], position: tuple[int, int], content: Any
    ) -> Replacement | None:
        """The planned replacement of one result by fit, or None when fit cannot shorten it."""
        preview_chars = self.settings.fit_preview_chars
        block = messages[position[0]]["content"][position[1]]
        marker = parse_marker(content)
        if is_pinned(self.pinned, block) or (marker is not None and marker.kind == "placeholder"):
            return None
        tool_use_id = str(block.get("tool_use_id") or "unknown")
        path = run.own_persisted_path(content, tool_use_id)
        if path is not None and marker is not None and marker.preview is not None:
            return Replacement(*position, block, None, path, marker.preview[:preview_chars])
        text = result_text(content)
        if len(text) <= preview_chars:
            return None
        return Replacement(*position, block, text, None, text[:preview_chars])

    # --- step 4 --------------------------------------------------------------------------------

    async def compact_history(
        self,
        messages: Sequence[Message],
        active_request: str,
        focus: str | None = None,
        summary: str | None = None,
    ) -> list[Message]:
        """Step 4, only if still over the limit (and for the compact tool / command).

        Writes the whole history to a transcript, asks the model for a factual summary and
        replaces the history with one `[Compacted]` message that keeps the current user request
        apart from the summary and names the transcript; the model's notes (one notes message) and
        what is pinned follow it (pinned results each in a pair with its tool_use), and after them
        the current request again, so the request is the last thing the model reads. Raises
        CompactionError (history untouched) if the transcript or the summary fails.

        Called directly (the compact tool or command), a result larger than the history is
        refused only when it would also be over `context_char_limit`. Inside `prepare` a result
        not smaller than the history is refused, and the event says what holds the history. When the
        current request alone
        is over the limit no summary could help: nothing is written, asked or reported (the agent
        said so once, when the request came in: `request_oversize`). A refused summary leaves its
        transcript behind (a copy of the history, harmless).

        `summary`, when given (a draft the user reviewed and maybe edited), is used as the summary
        exactly as it is, and the model is not called.
        """
        return as_list(
            (await self._finish(self.compact_events(messages, active_request, focus, summary))).messages
        )

    async def _summary_step(
        self,
        run: CompactionRun,
        messages: Sequence[Message],
        request: str,
        focus: str | None,
        *,
        strict: bool,
        summary: str | None = None,
    ) -> AsyncIterator[Report]:
        """compact_history's work (see its docstring); yields the retries and usage of its summary call."""
        before = self.estimate_chars(messages)
        if strict and request_oversize(request, self.settings.context_char_limit):
            return  # no summary can bring it under the limit (the agent said so once)
        if run.dry:
            await run.emit(
                "compact_history",
                before,
                before,
                len(messages),
                (),
                "would run next: the summary needs the model, so the figures after it are unknown",
                (0, 0),
            )
            return
        if summary is not None and not summary.strip():
            raise CompactionError("the summary is empty; history left as it was")
        carried = [*notes_to_carry(self.notes, ()), *carried_pins(self.pinned, messages, request)]
        transcript, sizes = await run.transcript(messages)
        if summary is None:
            async for event in summary_events(self.summarize, messages, focus, transcript, self._input_limit):
                if isinstance(event, str):
                    summary = event
                else:
                    yield event
        assert summary is not None
        head = {"role": "user", "content": summary_message("Compacted", request, summary, transcript)}
        result = [head, *carried, *request_last(carried, request, request_pinned(self.pinned, request))]
        changes = (Splice(0, len(messages), tuple(result)),)
        after = self.estimate_chars(run.sized(messages, result, changes))
        if after >= before if strict else after > before and after > self.settings.context_char_limit:
            await run.not_applied(
                "compact_history",
                before,
                after,
                f"the summary message would be larger than the history; {self._holding(request)}",
            )
            return
        details = [f"focus: {focus}"] if focus else []
        if after > self.settings.context_char_limit:
            details.append(self._holding(request))
        removed = cut_entries("compact_history", messages, len(messages), result, transcript, sizes)
        await run.emit(
            "compact_history", before, after, len(messages), [transcript], "; ".join(details), (0, 0), removed
        )
        run.derived(messages, result, changes, after)

    async def reactive_compact(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        """Fallback when the API refuses with "prompt is too long".

        Saves the whole history, summarises everything but the newest `reactive_keep_messages`
        messages (moving the cut so a tool_use/tool_result pair stays together) and puts one
        `[Reactive compact]` message, the model's notes (unless the kept messages hold them), the
        pinned pairs of what it summarised and (when notes or pins were carried and the kept
        messages hold no copy) the current request in front of them. The result is never larger
        than the refused history: when keeping the newest messages leaves it as large, everything
        is summarised; when even that does not make it smaller, CompactionError says so in one line
        and nothing is replaced.
        """
        return as_list((await self._finish(self.reactive_events(messages, active_request))).messages)

    async def _reactive_step(
        self, run: CompactionRun, messages: Sequence[Message], request: str
    ) -> AsyncIterator[Report]:
        """reactive_compact's work (see its docstring); yields the retries and usage of its summary calls."""
        before = self.estimate_chars(messages)
        transcript, sizes = await run.transcript(messages)
        after = before
        # keep the newest messages; if that is not smaller, keep none (a cut at 0 also keeps none)
        cuts = dict.fromkeys(
            reactive_cut(messages, keep) or len(messages)
            for keep in (self.settings.reactive_keep_messages, 0)
        )
        for tail_start in cuts:
            old_history = messages[:tail_start]
            summary = ""
            async for event in summary_events(
                self.summarize, old_history, None, transcript, self._input_limit
            ):
                if isinstance(event, str):
                    summary = event
                else:
                    yield event
            head = {
                "role": "user",
                "content": summary_message("Reactive compact", request, summary, transcript),
            }
            tail = list(messages[tail_start:])
            carried = [*notes_to_carry(self.notes, tail), *carried_pins(self.pinned, old_history, request)]
            readd = (
                request_last(carried, request, request_pinned(self.pinned, request))
                if not request_visible(tail, request)
                else []
            )
            added = (head, *carried, *readd)
            result = [*added, *tail]
            changes = (Splice(0, tail_start, added),)
            after = self.estimate_chars(run.sized(messages, result, changes))
            if after < before:
                removed = cut_entries("reactive_compact", messages, tail_start, added, transcript, sizes)
                await run.emit(
                    "reactive_compact",
                    before,
                    after,
                    len(old_history),
                    [transcript],
                    "everything summarised" if not tail else "",
                    (0, 0),
                    removed,
                )
                run.derived(messages, result, changes, after)
                return
        await run.not_applied(
            "reactive_compact", before, after, "the summary would not make the refused history smaller"
        )
        raise CompactionError(
            f"the summary cannot make the {before:,}-char request the API refused any smaller "
            f"(it comes to {after:,} chars); nothing was sent again"
        )

    # --- the calls -----------------------------------------------------------------------------

    async def prepare_events(
        self, messages: Sequence[Message], active_request: str, hold: bool = False, masking: bool = False
    ) -> AsyncIterator[CompactionEvent]:
        """The pipeline before a model call, as it happens (see the module docstring); the input is
        never mutated. A failed step ends it with an `Outcome` whose `error` is set and whose messages
        are what the steps before it made (lossless). `hold`: only tool_result_budget runs (the
        cache-aware timing while the cached prefix is warm: the other steps would rewrite it).
        `masking`: tool_result_budget, and micro_compact over the limit; never a snip or a summary
        (observation masking alone, as `ctxtui replay`'s "masking" engine measures it)."""
        async for event in self._call(
            messages, lambda run: self._pipeline(run, messages, active_request, hold, masking)
        ):
            yield event

    async def compact_events(
        self,
        messages: Sequence[Message],
        active_request: str,
        focus: str | None = None,
        summary: str | None = None,
    ) -> AsyncIterator[CompactionEvent]:
        """compact_history now (the compact tool, the user), as it happens."""

        async def body(run: CompactionRun) -> AsyncIterator[Report | None]:
            async for retry in self._summary_step(
                run, messages, active_request, focus, strict=False, summary=summary
            ):
                yield retry

        async for event in self._call(messages, body):
            yield event

    async def reactive_events(
        self, messages: Sequence[Message], active_request: str
    ) -> AsyncIterator[CompactionEvent]:
        """reactive_compact (the API refused the prompt), as it happens."""

        async def body(run: CompactionRun) -> AsyncIterator[Report | None]:
            async for retry in self._reactive_step(run, messages, active_request):
                yield retry

        async for event in self._call(messages, body):
            yield event

    async def _pipeline(
        self,
        run: CompactionRun,
        messages: Sequence[Message],
        request: str,
        hold: bool = False,
        masking: bool = False,
    ) -> AsyncIterator[Report | None]:
        """The seed's order: lossless before lossy, each step only when the one before it did not
        bring the history under the limit. Yields None after each step (its event goes out then)."""
        limit, target = self.settings.context_char_limit, self.settings.micro_target_chars
        result = await self.tool_result_budget(messages)
        yield None
        if hold:
            return
        if masking:
            if self.estimate_chars(result) > limit:
                await self.micro_compact(result, target)
                yield None
            return
        result = await self.snip_compact(result, request)
        yield None
        if self.estimate_chars(result) > limit:
            result = await self.micro_compact(result, target)
            yield None
            if self.estimate_chars(result) > limit:
                result = await self.fit_tool_results(result, target)
                yield None
            if self.estimate_chars(result) > limit:
                async for retry in self._summary_step(run, result, request, None, strict=True):
                    yield retry

    async def _call(
        self,
        messages: Sequence[Message],
        body: Callable[[CompactionRun], AsyncIterator[Report | None]],
        *,
        dry: bool = False,
    ) -> AsyncGenerator[CompactionEvent, None]:
        """Run `body` as this compactor's one call: its steps out as they are done, then the Outcome."""
        if self._run is not None:
            raise RuntimeError("the compactor is already running a call")
        run = self._run = CompactionRun(
            self.archive,
            self._sizer,
            messages,
            dry=dry,
            count_tokens=self.count_tokens,
            restore_limit=self.settings.context_char_limit,
        )
        try:
            async for event in run.drive(body(run)):
                yield event
        finally:
            self._run = None
            self._sizer.forget()

    async def _finish(self, events: AsyncIterator[CompactionEvent]) -> Outcome:
        return await finish(events, self.on_event)

    async def prepare(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        """Run the pipeline before a model call; returns a new list and never mutates `messages`.

        Lossless before lossy: compact_history runs only after fit_tool_results could shorten
        nothing more, and no step leaves the history larger than it found it. Raises
        CompactionError when a step fails; its `partial` holds the lossless result of the steps
        before it (None when nothing succeeded).
        """
        result = (await self._finish(self.prepare_events(messages, active_request))).messages
        return list(result)

    async def prepare_changes(self, messages: Sequence[Message], active_request: str) -> tuple[Splice, ...]:
        """What `prepare` would make of `messages`, as splices to apply in order (empty: nothing fired).

        Costs time proportional to what changed: with a `core.history.store.History` nothing is
        copied or walked when no step fires. The caller applies them (`History.apply`).
        """
        return (await self._finish(self.prepare_events(messages, active_request))).changes

    async def dry_run(
        self, messages: Sequence[Message], active_request: str, hold: bool = False
    ) -> list[CompactionStep]:
        """The steps `prepare` would take now, with the same figures; writes nothing, calls no model.

        Every decision is prepare's own (the same code runs): files are named as the archive would
        name them, and nothing is saved. compact_history, which needs the model, is reported as
        the step that would run next, with its `before` figure. Not for use while another call of
        this compactor is running.
        """
        return [
            event
            async for event in self._call(
                messages, lambda run: self._pipeline(run, messages, active_request, hold), dry=True
            )
            if isinstance(event, CompactionStep)
        ]

    # --- the summary ---------------------------------------------------------------------------

    @property
    def _input_limit(self) -> int:
        return self.settings.summary_input_char_limit

    def _holding(self, request: str) -> str:
        notes = len(notes_message(self.notes)) if self.notes else 0
        return holding(self.pinned, request, self.settings.context_char_limit, notes)

    async def summarize_history(
        self, messages: Sequence[Message], focus: str | None, transcript: str | None = None
    ) -> tuple[str, tuple[SummaryUsage, ...]]:
        """The model's summary of `messages` (the conversation as data, cut to the input limit), as the
        summary steps ask for it, and the call's usage; changes nothing. Raises CompactionError (one
        line) when there is no summarizer, the call fails or the summary is empty."""
        summary, usage = "", []
        async for event in summary_events(self.summarize, messages, focus, transcript, self._input_limit):
            if isinstance(event, str):
                summary = event
            elif isinstance(event, SummaryUsage):
                usage.append(event)
        return summary, tuple(usage)
