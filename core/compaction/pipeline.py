"""The four-step compaction pipeline, in the order it runs.

    tool_result_budget -> snip_compact -> micro_compact -> fit_tool_results -> compact_history

The first two run before every model call; micro_compact and fit_tool_results only when the
history is over `context_char_limit`; compact_history (the only lossy step, and the only one that
calls the model) only when it is still over. reactive_compact is the fallback when the API says
"prompt is too long". Every step writes what it removes to the Archive before replacing anything,
and no step ever separates a tool_use from its tool_result.

The steps never mutate the list they are given or any message in it: a step copies the messages it
changes and returns a new list.

Steering: `Compactor.pinned` holds tool_use ids whose results survive every step byte-exact (and
`user:` keys, `core.history.user_pin_key`, of user messages that do the same), and
`Compactor.dry_run` makes the decisions `prepare` would make, with the same figures, writing
nothing and calling no model.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from core.archive import Archive, ArchiveError, SavedTranscript
from core.compaction.plans import (
    TRANSCRIPT_PATH_ESTIMATE,
    Editor,
    Replacement,
    SnipPlan,
    conversation_text,
    is_request_copy,
    request_visible,
    unchanged,
    unseen_and_read,
)
from core.compaction.settings import CompactionError, CompactionSettings
from core.events import CompactionStep, Splice, StepName
from core.history.messages import (
    USER_PIN_PREFIX,
    has_tool_use,
    is_tool_result,
    result_text,
    splice_between,
    user_pin_key,
)
from core.history.sizes import list_chars, message_chars
from core.history.store import HistorySizer
from core.markers import parse_marker, persisted_output, placeholder, summary_message
from core.text import error_line

Message = dict[str, Any]
Summarize = Callable[[str, str | None], Awaitable[str]]
EventSink = Callable[[CompactionStep], Any]


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
    ) -> None:
        self.archive = archive
        self.summarize = summarize
        self.settings = settings or CompactionSettings()
        self.on_event = on_event
        self._sizer = HistorySizer()
        self._trail: tuple[Sequence[Message], tuple[Splice, ...]] | None = None  # prepare's changes so far
        # A request that alone is over the limit: the summary was refused for it once (with the
        # warning); prepare does not ask the model again while it is the current request.
        self._hopeless_request: str | None = None
        self.pinned: frozenset[str] = frozenset()
        """tool_use ids whose results every step leaves byte-exact (and in a valid pair), and the
        `user:` keys of user messages every step leaves byte-exact."""
        self._dry_steps: list[CompactionStep] | None = None  # set while dry_run collects
        self._dry_saved: set[tuple[str, str]] = set()  # (path, tool_use_id) a dry run would have saved

    def estimate_chars(self, messages: Sequence[Message]) -> int:
        """`core.history.estimate_chars`, incremental for the history this compactor keeps seeing."""
        return self._sizer.measure(messages)

    def _sized(
        self, base: Sequence[Message], result: list[Message], changes: tuple[Splice, ...], chars: int | None = None
    ) -> list[Message]:
        """`result` is `base` with `changes`: the sizer sizes it from the changed messages only."""
        self._sizer.derive(base, result, changes, chars)
        return result

    def _derived(
        self, base: Sequence[Message], result: list[Message], changes: tuple[Splice, ...], chars: int | None = None
    ) -> list[Message]:
        """A step returns `result`, made from `base` by `changes` (for the sizer and `prepare_changes`)."""
        self._sized(base, result, changes, chars)
        if self._trail is not None and self._trail[0] is base:
            self._trail = (result, self._trail[1] + changes)
        return result

    async def _emit(self, step: StepName, before: int, after: int, affected: int, files: Sequence[str],
                    detail: str = "") -> None:
        event = CompactionStep(step, before, after, affected, tuple(files), detail)
        if self._dry_steps is not None:
            self._dry_steps.append(event)
            return
        if self.on_event is None:
            return
        result = self.on_event(event)
        if inspect.isawaitable(result):
            await result

    async def _not_applied(self, step: StepName, before: int, would_be: int, why: str) -> None:
        """Say that a step was refused because its result would not be smaller than its input."""
        await self._emit(step, before, before, 0, (), f"not applied: {why} ({before:,} -> {would_be:,} chars)")

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
            if self._is_pinned(block):
                continue
            text = result_text(block.get("content", ""))
            item = Replacement(index, block_index, block, text, None, text[: settings.persisted_preview_chars])
            item.old_size = message_chars(block.get("content", ""))
            replacement = persisted_output(self.archive.expected_tool_result_path(item.tool_use_id), item.preview)
            if message_chars(replacement) >= item.old_size:
                continue
            plan.append(item)
            total += len(replacement) - sizes[block_index]
        return await self._apply_plan(
            messages, plan, lambda item: persisted_output(item.saved_path, item.preview),
            "tool_result_budget", lambda done: f"{len(done)} large result(s) persisted",
        )

    # --- step 2 --------------------------------------------------------------------------------

    async def snip_compact(self, messages: Sequence[Message], active_request: str | None = None) -> list[Message]:
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
        request, then the work done on it.
        """
        plan = self._plan_snip(messages, active_request)
        if plan is None:
            return unchanged(messages)
        estimate = plan.result(messages, TRANSCRIPT_PATH_ESTIMATE, active_request)
        if plan.outweighs(messages, estimate):
            measured = self._sizer.sizes(messages)
            await self._not_applied("snip_compact", list_chars(measured, len(measured)), plan.chars(measured, estimate),
                                    f"the marker would be larger than the {plan.archived_now} messages it replaces")
            return unchanged(messages)
        # One pass writes the transcript (complete before anything is replaced) and measures every message.
        saved = await self._save_transcript(messages)
        sizes = saved.sizes if saved is not None else tuple(self._sizer.sizes(messages))
        transcript = saved.path if saved is not None else TRANSCRIPT_PATH_ESTIMATE
        before = list_chars(sizes, len(sizes))
        result = plan.result(messages, transcript, active_request)
        changes = plan.splices(messages, result)
        after = plan.chars(sizes, result)
        if after > before:
            await self._not_applied("snip_compact", before, after,
                                    f"the marker would be larger than the {plan.archived_now} messages it replaces")
            return unchanged(messages)
        detail = f"{plan.archived_now} messages archived"
        if plan.archived_before:
            detail += f" ({plan.count} in all with the {plan.archived_before} archived earlier)"
        if plan.request_readded:
            detail += "; the current request was put back after the marker"
        await self._emit("snip_compact", before, after, plan.archived_now, [transcript], detail)
        return self._derived(messages, result, changes, after)

    def _plan_snip(self, messages: Sequence[Message], active_request: str | None) -> SnipPlan | None:
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
        kept = self._pinned_pairs(messages, head_end, tail_start)
        archived_before = archived_now = 0
        new = 0
        for index in range(head_end, tail_start):
            if index in kept:
                continue
            message = messages[index]
            earlier = self._own_snip_count(message)
            if earlier is not None:
                archived_before += earlier
                continue
            archived_now += 1
            if not is_request_copy(message, active_request):
                new += 1
        if new == 0:
            return None
        readd = active_request is not None and not request_visible(
            [*messages[:head_end], *(messages[index] for index in kept), *messages[tail_start:]], active_request)
        return SnipPlan(head_end, tail_start, archived_before, archived_now, readd, tuple(sorted(kept)))

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
            if self._is_pinned(block):
                continue
            content = block.get("content", "")
            text = result_text(content)
            if len(text) <= settings.micro_min_chars:
                continue
            marker = parse_marker(content)
            if marker is not None and marker.kind == "placeholder":
                continue
            item = Replacement(index, block_index, block, text, None)
            item.path = self._own_persisted_path(content, item.tool_use_id)
            item.old_size = message_chars(content)
            expected = item.path or self.archive.expected_tool_result_path(item.tool_use_id)
            change = message_chars(placeholder(expected)) - item.old_size
            if change >= 0:
                continue
            projected += change
            plan.append(item)
        return await self._apply_plan(
            messages, plan, lambda item: placeholder(item.saved_path),
            "micro_compact", lambda done: f"{len(done)} older read result(s) replaced by placeholders",
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
            item = self._plan_fit(messages, position, contents[position])
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

        return await self._apply_plan(
            messages, plan, lambda item: persisted_output(item.saved_path, item.preview), "fit_tool_results", detail,
        )

    def _plan_fit(self, messages: Sequence[Message], position: tuple[int, int], content: Any) -> Replacement | None:
        """The planned replacement of one result by fit, or None when fit cannot shorten it."""
        preview_chars = self.settings.fit_preview_chars
        block = messages[position[0]]["content"][position[1]]
        marker = parse_marker(content)
        if self._is_pinned(block) or (marker is not None and marker.kind == "placeholder"):
            return None
        tool_use_id = str(block.get("tool_use_id") or "unknown")
        path = self._own_persisted_path(content, tool_use_id)
        if path is not None and marker is not None and marker.preview is not None:
            return Replacement(*position, block, None, path, marker.preview[:preview_chars])
        text = result_text(content)
        if len(text) <= preview_chars:
            return None
        return Replacement(*position, block, text, None, text[:preview_chars])

    # --- step 4 --------------------------------------------------------------------------------

    async def compact_history(
        self, messages: Sequence[Message], active_request: str, focus: str | None = None,
        summary: str | None = None,
    ) -> list[Message]:
        """Step 4, only if still over the limit (and for the compact tool / command).

        Writes the whole history to a transcript, asks the model for a factual summary and
        replaces the history with one `[Compacted]` message that keeps the current user request
        apart from the summary and names the transcript; pinned tool results follow it, each in
        a pair with its tool_use. Raises CompactionError (history untouched) if the transcript or
        the summary fails.

        Called directly (the compact tool or command), a result larger than the history is
        refused only when it would also be over `context_char_limit`. Inside `prepare` a result
        not smaller than the history is refused, and so is one that stays over the limit because
        the current request alone is: then the event warns once what holds the history, and the
        model is not asked again while that request is current. A refused summary leaves its
        transcript behind (a copy of the history, harmless).

        `summary`, when given (a draft the user reviewed and maybe edited), is used as the summary
        exactly as it is, and the model is not called.
        """
        return await self._compact_history(messages, active_request, focus, strict=False, summary=summary)

    async def _compact_history(
        self, messages: Sequence[Message], active_request: str, focus: str | None, *, strict: bool,
        summary: str | None = None,
    ) -> list[Message]:
        before = self.estimate_chars(messages)
        if strict and active_request == self._hopeless_request:
            return unchanged(messages)  # refused for this request already, and said so once
        carried = self._carried_pins(messages, active_request)
        if self._dry_steps is not None:
            await self._emit("compact_history", before, before, len(messages), (),
                             "would run next: the summary needs the model, so the figures after it are unknown")
            return unchanged(messages)
        if summary is not None and not summary.strip():
            raise CompactionError("the summary is empty; history left as it was")
        transcript = await self._write_transcript(messages)
        if summary is None:
            summary = await self.summarize_history(messages, focus, transcript)
        result = [{"role": "user", "content": summary_message("Compacted", active_request, summary, transcript)},
                  *carried]
        changes = (Splice(0, len(messages), tuple(result)),)
        after = self.estimate_chars(self._sized(messages, result, changes))
        too_big = len(active_request) > self.settings.context_char_limit
        if self._refused(before, after, strict) or (strict and too_big):
            why = "larger than" if after >= before else "still over the limit, for all it would lose of"
            await self._not_applied("compact_history", before, after,
                                    f"the summary message would be {why} the history; {self._holding(active_request)}")
            if strict and too_big:
                self._hopeless_request = active_request
            return unchanged(messages)
        details = [f"focus: {focus}"] if focus else []
        if after > self.settings.context_char_limit:
            details.append(self._holding(active_request))
        await self._emit("compact_history", before, after, len(messages), [transcript], "; ".join(details))
        return self._derived(messages, result, changes, after)

    async def reactive_compact(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        """Fallback when the API refuses with "prompt is too long".

        Saves the whole history, summarises everything but the newest `reactive_keep_messages`
        messages (moving the cut so a tool_use/tool_result pair stays together) and puts one
        `[Reactive compact]` message (and the pinned pairs of what it summarised) in front of
        them. A result that would be larger than the history and over `context_char_limit` is
        refused (the history is returned as it was).
        """
        count = len(messages)
        tail_start = max(0, count - self.settings.reactive_keep_messages)
        if (
            0 < tail_start < count
            and is_tool_result(messages[tail_start])
            and has_tool_use(messages[tail_start - 1])
        ):
            tail_start -= 1
        before = self.estimate_chars(messages)
        transcript = await self._write_transcript(messages)
        old_history = messages[:tail_start] if tail_start else messages
        summary = await self.summarize_history(old_history, None, transcript)
        message = {"role": "user", "content": summary_message("Reactive compact", active_request, summary, transcript)}
        carried = self._carried_pins(old_history, active_request)
        result = [message, *carried, *messages[tail_start:]] if tail_start else [message, *carried]
        changes = (Splice(0, tail_start or count, (message, *carried)),)
        after = self.estimate_chars(self._sized(messages, result, changes))
        if self._refused(before, after, strict=False):
            await self._not_applied("reactive_compact", before, after,
                                    f"the summary would not make the history smaller; {self._holding(active_request)}")
            return unchanged(messages)
        await self._emit("reactive_compact", before, after, len(old_history), [transcript])
        return self._derived(messages, result, changes, after)

    # --- the pipeline --------------------------------------------------------------------------

    async def prepare(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        """Run the pipeline before a model call; returns a new list and never mutates `messages`.

        Lossless before lossy: compact_history runs only after fit_tool_results could shorten
        nothing more, and no step leaves the history larger than it found it. Raises
        CompactionError when a step fails; its `partial` holds the lossless result of the steps
        before it (None when nothing succeeded).
        """
        result, _ = await self._prepare(messages, active_request)
        return list(result) if result is messages else result

    async def prepare_changes(self, messages: Sequence[Message], active_request: str) -> tuple[Splice, ...]:
        """What `prepare` would make of `messages`, as splices to apply in order (empty: nothing fired).

        Costs time proportional to what changed: with a `core.history.store.History` nothing is copied or
        walked when no step fires. The caller applies them (`History.apply`).
        """
        _, changes = await self._prepare(messages, active_request)
        return changes

    async def _prepare(
        self, messages: Sequence[Message], active_request: str
    ) -> tuple[list[Message], tuple[Splice, ...]]:
        self._trail = (messages, ())
        try:
            result = await self._pipeline(messages, active_request)
            trail = self._trail
            changes = trail[1] if trail[0] is result else splice_between(messages, result)
            return result, changes
        except CompactionError as error:
            if error.partial is messages:  # the caller's own list: hand back a copy, as before
                error.partial = list(messages)
            raise
        finally:
            self._trail = None
            self._sizer.forget()

    async def _pipeline(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        settings = self.settings
        result = await self._step(self.tool_result_budget(messages), None)
        result = await self._step(self.snip_compact(result, active_request), result)
        if self.estimate_chars(result) > settings.context_char_limit:
            target = settings.micro_target_chars
            result = await self._step(self.micro_compact(result, target), result)
            if self.estimate_chars(result) > settings.context_char_limit:
                result = await self._step(self.fit_tool_results(result, target), result)
            if self.estimate_chars(result) > settings.context_char_limit:
                result = await self._step(self._compact_history(result, active_request, None, strict=True), result)
        return result

    async def dry_run(self, messages: Sequence[Message], active_request: str) -> list[CompactionStep]:
        """The steps `prepare` would take now, with the same figures; writes nothing, calls no model.

        Every decision is prepare's own (the same code runs): files are named as the archive would
        name them, and nothing is saved. compact_history, which needs the model, is reported as
        the step that would run next, with its `before` figure. Not for use while a prepare of
        this compactor is running.
        """
        self._dry_steps = []
        hopeless = self._hopeless_request
        try:
            await self.prepare(messages, active_request)
            return self._dry_steps
        finally:
            self._dry_steps = None
            self._dry_saved = set()
            self._hopeless_request = hopeless

    @staticmethod
    async def _step(step: Awaitable[list[Message]], partial: list[Message] | None) -> list[Message]:
        try:
            return await step
        except CompactionError as error:
            raise CompactionError(str(error), partial) from error

    # --- helpers -------------------------------------------------------------------------------

    def _refused(self, before: int, after: int, strict: bool) -> bool:
        """A result is refused when larger than its input (in prepare: also when just as large)."""
        if strict:
            return after >= before
        return after > before and after > self.settings.context_char_limit

    def _holding(self, active_request: str) -> str:
        """One line on what keeps the history over the limit, for the warning in a step's event."""
        limit = self.settings.context_char_limit
        request = len(active_request)
        if request > limit:
            return (f"the current request alone is {request:,} chars, over the {limit:,} limit: "
                    "shorten it or save it as a file the model can read")
        if self.pinned:
            users = sum(key.startswith(USER_PIN_PREFIX) for key in self.pinned)
            results = len(self.pinned) - users
            held = ", ".join(part for part in (f"{results} pinned result(s)" if results else "",
                                               f"{users} pinned message(s)" if users else "") if part)
            return (f"what remains (the current request, {held} and the newest "
                    f"messages) cannot be shortened below {limit:,} chars: unpin some to free room")
        return f"what remains (the current request and the newest messages) cannot be shortened below {limit:,} chars"

    async def _apply_plan(
        self,
        messages: Sequence[Message],
        plan: list[Replacement],
        render: Callable[[Replacement], str],
        step: StepName,
        detail: Callable[[list[Replacement]], str],
    ) -> list[Message]:
        """The one save-then-replace helper: save every planned result, then (only then) replace.

        A block whose rendering with the real path would not be shorter than what it replaces
        (the archive gave a longer name than expected) keeps its content; its file stays saved.
        """
        if not plan:
            return unchanged(messages)
        before = self.estimate_chars(messages)
        files = await self._save_planned(plan)
        editor = Editor(messages, before)
        done: list[Replacement] = []
        for item in plan:
            replacement = render(item)
            if item.old_size is not None and message_chars(replacement) >= item.old_size:
                continue
            editor.set_block_content(item.index, item.block_index, replacement, item.old_size)
            done.append(item)
        if not done:
            return unchanged(messages)
        await self._emit(step, before, editor.chars, len(editor.changed), files, detail(done))
        return self._derived(messages, editor.messages, editor.splices(), editor.chars)

    async def _save_planned(self, plan: list[Replacement]) -> list[str]:
        """Save every planned result that has no file yet, in one batch; returns the new files.

        Nothing is replaced before all saves succeeded.
        """
        pending = [item for item in plan if item.path is None]
        if self._dry_steps is not None:
            for item in pending:
                item.path = self.archive.expected_tool_result_path(item.tool_use_id)
                self._dry_saved.add((item.path, item.tool_use_id))
            return [item.saved_path for item in pending]
        try:
            paths = await self.archive.save_tool_results([(item.tool_use_id, item.text or "") for item in pending])
        except ArchiveError as error:
            raise CompactionError(f"compaction stopped, nothing replaced: {error}") from error
        for item, path in zip(pending, paths, strict=True):
            item.path = path
        return paths

    async def _save_transcript(self, messages: Sequence[Message]) -> SavedTranscript | None:
        """The whole list archived, with each message's size (None in a dry run: nothing is written)."""
        if self._dry_steps is not None:
            return None
        try:
            return await self.archive.save_transcript(messages)
        except ArchiveError as error:
            raise CompactionError(f"compaction stopped, nothing replaced: {error}") from error

    async def _write_transcript(self, messages: Sequence[Message]) -> str:
        """`_save_transcript`'s path (in a dry run the name it would have)."""
        saved = await self._save_transcript(messages)
        return saved.path if saved is not None else TRANSCRIPT_PATH_ESTIMATE

    def _is_pinned(self, block: dict[str, Any]) -> bool:
        return bool(self.pinned) and str(block.get("tool_use_id")) in self.pinned

    def _pinned_result_indices(self, messages: Sequence[Message], start: int, end: int) -> list[int]:
        """Indices in [start, end) of tool_result messages answering their tool_use with a pinned result."""
        if not self.pinned:
            return []
        return [
            index for index in range(max(start, 1), end)
            if is_tool_result(messages[index]) and has_tool_use(messages[index - 1])
            and any(self._is_pinned(block) for block in messages[index]["content"]
                    if isinstance(block, dict) and block.get("type") == "tool_result")
        ]

    def _pinned_user_indices(self, messages: Sequence[Message], start: int, end: int) -> list[int]:
        """Indices in [start, end) of the user messages pinned by their `user_pin_key`."""
        keys = {key for key in self.pinned if key.startswith(USER_PIN_PREFIX)}
        if not keys:
            return []
        return [index for index in range(max(start, 0), end)
                if messages[index].get("role") == "user" and user_pin_key(messages[index]) in keys]

    def _pinned_pairs(self, messages: Sequence[Message], start: int, end: int) -> set[int]:
        """The pinned messages inside [start, end): every pinned pair (tool_use and tool_result)
        and every pinned user message."""
        pairs = {index for result in self._pinned_result_indices(messages, start + 1, end) for index in (result - 1, result)}
        return pairs | set(self._pinned_user_indices(messages, start, end))

    def _carried_pins(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        """What is pinned in `messages`, in order, to follow a summary: pinned results as pairs with
        their tool_use (the blocks byte-exact) and pinned user messages as they are. A pinned
        message that is the current request is not repeated: the summary message holds it."""
        carried: list[tuple[int, list[Message]]] = []
        for index in self._pinned_result_indices(messages, 1, len(messages)):
            results = [block for block in messages[index]["content"]
                       if isinstance(block, dict) and block.get("type") == "tool_result" and self._is_pinned(block)]
            ids = {str(block.get("tool_use_id")) for block in results}
            uses = [block for block in messages[index - 1]["content"]
                    if isinstance(block, dict) and block.get("type") == "tool_use" and str(block.get("id")) in ids]
            carried.append((index, [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]))
        for index in self._pinned_user_indices(messages, 0, len(messages)):
            if messages[index].get("content") != active_request:
                carried.append((index, [messages[index]]))
        return [message for _, pair in sorted(carried, key=lambda item: item[0]) for message in pair]

    def _own_persisted_path(self, content: Any, tool_use_id: str) -> str | None:
        """The path of a <persisted-output> block this archive wrote for this tool_use id, else None.

        Trusting a path alone would let tool output that merely looks like a marker pass as
        already archived, and its text would be saved nowhere.
        """
        marker = parse_marker(content)
        if marker is None or marker.kind != "persisted":
            return None
        if (marker.path, tool_use_id) in self._dry_saved:
            return marker.path
        return marker.path if self.archive.is_own(marker.path, tool_use_id) else None

    def _own_snip_count(self, message: Message) -> int | None:
        """How many messages an earlier snip marker of this archive stands for, else None."""
        if not isinstance(message, dict) or message.get("role") != "user":
            return None
        marker = parse_marker(message.get("content"))
        if marker is None or marker.kind != "snip" or marker.count is None:
            return None
        return marker.count if self.archive.is_own(marker.path) else None

    async def summarize_history(self, messages: Sequence[Message], focus: str | None,
                                transcript: str | None = None) -> str:
        """The model's summary of `messages` (the conversation as data, cut to the input limit), as the
        summary steps ask for it; changes nothing. Raises CompactionError (one line) when there is no
        summarizer, the call fails or the summary is empty."""
        if self.summarize is None:
            raise CompactionError("no summarizer configured; history left as it was")
        text = conversation_text(messages, self.settings.summary_input_char_limit, transcript)
        try:
            summary = await self.summarize(text, focus)
        except CompactionError:
            raise
        except Exception as error:
            raise CompactionError(f"summary failed, history left as it was: {error_line(error)}") from error
        if not isinstance(summary, str) or not summary.strip():
            raise CompactionError("summary failed, history left as it was: the summary was empty")
        return summary
