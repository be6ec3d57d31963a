"""The four-step compaction pipeline, in the order it runs.

    tool_result_budget -> snip_compact -> micro_compact -> fit_tool_results -> compact_history

The first two run before every model call; micro_compact and fit_tool_results only when the
history is over `context_char_limit`; compact_history (the only lossy step, and the only one that
calls the model) only when it is still over. reactive_compact is the fallback when the API says
"prompt is too long". Every step writes what it removes to the Archive before replacing anything,
and no step ever separates a tool_use from its tool_result.

The steps never mutate the list they are given or any message in it: a step copies the messages it
changes and returns a new list.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.archive import Archive, ArchiveError
from core.events import CompactionStep, StepName
from core.history import (
    HistorySizer,
    has_tool_use,
    is_tool_result,
    message_chars,
    result_text,
    tool_result_positions,
    unseen_tool_result_positions,
)
from core.markers import (
    parse_marker,
    persisted_output,
    placeholder,
    request_marker,
    snip_marker,
    summary_message,
)
from core.text import error_line

Message = dict[str, Any]
Summarize = Callable[[str, str | None], Awaitable[str]]
EventSink = Callable[[CompactionStep], Any]


@dataclass
class CompactionSettings:
    """Thresholds of the pipeline (defaults from the seed texts); every one is configurable."""

    context_char_limit: int = 50_000
    micro_target_ratio: float = 0.8
    tool_result_batch_char_limit: int = 200_000
    large_result_char_limit: int = 30_000
    persisted_preview_chars: int = 2_000
    fit_preview_chars: int = 1_000
    keep_recent_results: int = 3
    micro_min_chars: int = 120
    snip_trigger_messages: int = 50
    snip_target_messages: int = 30
    snip_keep_head: int = 3
    reactive_keep_messages: int = 5
    max_reactive_retries: int = 1
    summary_input_char_limit: int = 80_000

    def __post_init__(self) -> None:
        if not 0 < self.micro_target_ratio <= 1:
            raise ValueError("micro_target_ratio must be in (0, 1]")
        if self.snip_keep_head < 1:
            raise ValueError("snip_keep_head must be at least 1")
        if not self.snip_keep_head + 2 <= self.snip_target_messages < self.snip_trigger_messages:
            raise ValueError(
                "snip settings need snip_keep_head + 2 <= snip_target_messages < snip_trigger_messages"
            )
        for name in ("context_char_limit", "tool_result_batch_char_limit", "summary_input_char_limit"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        for name in ("persisted_preview_chars", "fit_preview_chars", "keep_recent_results", "micro_min_chars",
                     "reactive_keep_messages", "max_reactive_retries", "large_result_char_limit"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")

    @property
    def micro_target_chars(self) -> int:
        return int(self.context_char_limit * self.micro_target_ratio)


class CompactionError(Exception):
    """A step could not finish; nothing was replaced.

    `partial` is the lossless result of the steps that did succeed (or None), so a caller may
    still go on with it.
    """

    def __init__(self, message: str, partial: list[Message] | None = None) -> None:
        super().__init__(message)
        self.partial = partial


def _json_len(value: Any) -> int:
    return len(json.dumps(value, default=str, ensure_ascii=False))


@dataclass
class _Replacement:
    """One planned replacement of a tool_result's content (the file is saved before it is applied)."""

    index: int
    block_index: int
    block: dict[str, Any]
    text: str | None
    path: str | None
    preview: str = ""
    old_size: int | None = None  # JSON length of the content it replaces, when already known

    @property
    def tool_use_id(self) -> str:
        return str(self.block.get("tool_use_id") or "unknown")

    @property
    def saved_path(self) -> str:
        assert self.path is not None, "replacement applied before its file was saved"
        return self.path


class _Editor:
    """Copy-on-write edits of a history: a message is copied the first time one of its blocks changes."""

    def __init__(self, messages: Sequence[Message], chars: int) -> None:
        self.messages: list[Message] = list(messages)
        self.chars = chars
        self.changed: set[int] = set()
        self.files: list[str] = []

    def block(self, index: int, block_index: int) -> dict[str, Any]:
        block: dict[str, Any] = self.messages[index]["content"][block_index]
        return block

    def set_block_content(self, index: int, block_index: int, content: str, old_size: int | None = None) -> None:
        old = self.messages[index]
        new_blocks = list(old["content"])
        old_block = new_blocks[block_index]
        new_blocks[block_index] = {**old_block, "content": content}
        new = {**old, "content": new_blocks}
        if "content" in old_block:
            # Replacing one value changes the JSON by exactly the difference of the two values.
            if old_size is None:
                old_size = _json_len(old_block["content"])
            self.chars += _json_len(content) - old_size
        else:
            self.chars += message_chars(new) - message_chars(old)
        self.messages[index] = new
        self.changed.add(index)


class Compactor:
    """Runs the pipeline before each model call; every reduction is archived first."""

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

    def estimate_chars(self, messages: Sequence[Message]) -> int:
        """`core.history.estimate_chars`, incremental for the history this compactor keeps seeing."""
        return self._sizer.measure(messages)

    async def _emit(self, step: StepName, before: int, after: int, affected: int, files: Sequence[str],
                    detail: str = "") -> None:
        if self.on_event is None:
            return
        result = self.on_event(CompactionStep(step, before, after, affected, tuple(files), detail))
        if inspect.isawaitable(result):
            await result

    # --- step 1 --------------------------------------------------------------------------------

    async def tool_result_budget(self, messages: Sequence[Message]) -> list[Message]:
        """Step 1, every call: keep the newest tool-result batch within its budget.

        Only the last message is looked at. When its tool_results add up to more than
        `tool_result_batch_char_limit`, the largest results over `large_result_char_limit` are
        saved whole and replaced by a <persisted-output> block with the path and a preview of
        `persisted_preview_chars`, largest first, until the batch fits.
        """
        settings = self.settings
        if not messages or not is_tool_result(messages[-1]):
            return _unchanged(messages)
        index = len(messages) - 1
        content = messages[index]["content"]
        sizes = {
            block_index: len(result_text(block.get("content", "")))
            for block_index, block in enumerate(content)
            if isinstance(block, dict) and block.get("type") == "tool_result"
        }
        total = sum(sizes.values())
        if total <= settings.tool_result_batch_char_limit:
            return _unchanged(messages)
        before = self.estimate_chars(messages)
        editor = _Editor(messages, before)
        for block_index in sorted(sizes, key=lambda position: sizes[position], reverse=True):
            if total <= settings.tool_result_batch_char_limit:
                break
            if sizes[block_index] <= settings.large_result_char_limit:
                continue
            block = editor.block(index, block_index)
            text = result_text(block.get("content", ""))
            path = await self._save_result(block, text)
            replacement = persisted_output(path, text[: settings.persisted_preview_chars])
            editor.set_block_content(index, block_index, replacement)
            editor.files.append(path)
            total += len(replacement) - sizes[block_index]
        if not editor.changed:
            return _unchanged(messages)
        await self._emit("tool_result_budget", before, editor.chars, len(editor.changed), editor.files,
                         f"{len(editor.files)} large result(s) persisted")
        return editor.messages

    # --- step 2 --------------------------------------------------------------------------------

    async def snip_compact(self, messages: Sequence[Message]) -> list[Message]:
        """Step 2, every call: once there are `snip_trigger_messages` messages, cut the middle.

        The whole list goes to a transcript first; what stays is the first `snip_keep_head`
        messages, one `[N messages archived at PATH]` marker and the newest messages, down to
        `snip_target_messages` in all. Cut points move so that no tool_use/tool_result pair is
        split, so slightly more may stay.
        """
        settings = self.settings
        count = len(messages)
        if count < settings.snip_trigger_messages:
            return _unchanged(messages)
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
            return _unchanged(messages)
        before = self.estimate_chars(messages)
        transcript = await self._write_transcript(messages)
        archived = tail_start - head_end
        marker = {"role": "user", "content": snip_marker(archived, transcript)}
        result = [*messages[:head_end], marker, *messages[tail_start:]]
        await self._emit("snip_compact", before, self.estimate_chars(result), archived, [transcript],
                         f"{archived} messages archived")
        return result

    # --- step 3 --------------------------------------------------------------------------------

    async def micro_compact(self, messages: Sequence[Message], target_chars: int) -> list[Message]:
        """Step 3, only over the limit: replace older tool results the model has already read.

        The newest `keep_recent_results` read results, results of `micro_min_chars` or fewer and
        unseen results (after the last assistant message) are never touched. Older ones, oldest
        first, are saved and replaced by `[Earlier tool result saved at PATH]` until the history
        is at most `target_chars`. A result that already is a <persisted-output> block keeps the
        file it points to.
        """
        settings = self.settings
        before = self.estimate_chars(messages)
        unseen = unseen_tool_result_positions(messages)
        consumed = [position for position in tool_result_positions(messages) if position not in unseen]
        keep = settings.keep_recent_results
        candidates = consumed[:-keep] if keep > 0 else consumed
        plan: list[_Replacement] = []
        projected = before
        for index, block_index in candidates:
            if projected <= target_chars:
                break
            block = messages[index]["content"][block_index]
            content = block.get("content", "")
            text = result_text(content)
            if len(text) <= settings.micro_min_chars:
                continue
            marker = parse_marker(content)
            if marker is not None and marker.kind == "placeholder":
                continue
            item = _Replacement(index, block_index, block, text, self._trusted_persisted_path(content))
            item.old_size = _json_len(content)
            expected = item.path or self.archive.expected_tool_result_path(item.tool_use_id)
            projected += _json_len(placeholder(expected)) - item.old_size
            plan.append(item)
        return await self._apply_plan(
            messages, before, plan, lambda item: placeholder(item.saved_path),
            "micro_compact", f"{len(plan)} older read result(s) replaced by placeholders",
        )

    async def fit_tool_results(self, messages: Sequence[Message], target_chars: int) -> list[Message]:
        """Step 3b, only if still over the limit: fit the unseen results.

        When the newest, not yet read results alone overflow the context, the largest of them are
        saved and replaced by a <persisted-output> block with a `fit_preview_chars` preview,
        largest first, until the history is at most `target_chars`. This keeps the model from
        summarising the history before it has even seen the new results.
        """
        settings = self.settings
        before = self.estimate_chars(messages)
        unseen = sorted(unseen_tool_result_positions(messages))
        contents = {position: messages[position[0]]["content"][position[1]].get("content", "") for position in unseen}
        sizes = {position: _json_len(content) for position, content in contents.items()}
        plan: list[_Replacement] = []
        projected = before
        for position in sorted(unseen, key=lambda item: sizes[item], reverse=True):
            if projected <= target_chars:
                break
            block = messages[position[0]]["content"][position[1]]
            content = contents[position]
            marker = parse_marker(content)
            path = self._trusted_persisted_path(content)
            if path is not None and marker is not None and marker.preview is not None:
                item = _Replacement(*position, block, None, path, marker.preview[: settings.fit_preview_chars])
            elif marker is not None and marker.kind == "placeholder":
                continue
            else:
                text = result_text(content)
                if len(text) <= settings.fit_preview_chars:
                    continue
                item = _Replacement(*position, block, text, None, text[: settings.fit_preview_chars])
            expected = item.path or self.archive.expected_tool_result_path(item.tool_use_id)
            replacement_size = _json_len(persisted_output(expected, item.preview))
            if replacement_size >= sizes[position]:
                continue
            projected += replacement_size - sizes[position]
            item.old_size = sizes[position]
            plan.append(item)
        return await self._apply_plan(
            messages, before, plan, lambda item: persisted_output(item.saved_path, item.preview),
            "fit_tool_results", f"{len(plan)} unseen result(s) persisted with short previews",
        )

    # --- step 4 --------------------------------------------------------------------------------

    async def compact_history(
        self, messages: Sequence[Message], active_request: str, focus: str | None = None
    ) -> list[Message]:
        """Step 4, only if still over the limit (and for the compact tool / command).

        Writes the whole history to a transcript, asks the model for a factual summary and
        replaces the history with one `[Compacted]` message that keeps the current user request
        apart from the summary and names the transcript. Raises CompactionError (history
        untouched) if the transcript or the summary fails.
        """
        before = self.estimate_chars(messages)
        transcript = await self._write_transcript(messages)
        summary = await self._summarize(messages, focus)
        result = [{"role": "user", "content": summary_message("Compacted", active_request, summary, transcript)}]
        await self._emit("compact_history", before, self.estimate_chars(result), len(messages), [transcript],
                         f"focus: {focus}" if focus else "")
        return result

    async def reactive_compact(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        """Fallback when the API refuses with "prompt is too long".

        Saves the whole history, summarises everything but the newest `reactive_keep_messages`
        messages (moving the cut so a tool_use/tool_result pair stays together) and puts one
        `[Reactive compact]` message in front of them.
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
        summary = await self._summarize(old_history, None)
        message = {"role": "user", "content": summary_message("Reactive compact", active_request, summary, transcript)}
        result = [message, *messages[tail_start:]] if tail_start else [message]
        await self._emit("reactive_compact", before, self.estimate_chars(result), len(old_history), [transcript])
        return result

    # --- the pipeline --------------------------------------------------------------------------

    async def prepare(self, messages: Sequence[Message], active_request: str) -> list[Message]:
        """Run the pipeline before a model call; returns a new list and never mutates `messages`.

        Raises CompactionError when a step fails; its `partial` holds the lossless result of the
        steps before it (None when nothing succeeded).
        """
        settings = self.settings
        original = messages
        result = await self._step(self.tool_result_budget(list(messages)), None)
        before_snip = result
        result = await self._step(self.snip_compact(result), result)
        if result is not before_snip and not _request_visible(result, active_request):
            result.append({"role": "user", "content": active_request})
        if self.estimate_chars(result) > settings.context_char_limit:
            target = settings.micro_target_chars
            result = await self._step(self.micro_compact(result, target), result)
            if self.estimate_chars(result) > settings.context_char_limit:
                result = await self._step(self.fit_tool_results(result, target), result)
            if self.estimate_chars(result) > settings.context_char_limit:
                result = await self._step(self.compact_history(result, active_request), result)
        return list(result) if result is original else result

    @staticmethod
    async def _step(step: Awaitable[list[Message]], partial: list[Message] | None) -> list[Message]:
        try:
            return await step
        except CompactionError as error:
            raise CompactionError(str(error), partial) from error

    # --- helpers -------------------------------------------------------------------------------

    async def _apply_plan(
        self,
        messages: Sequence[Message],
        before: int,
        plan: list[_Replacement],
        render: Callable[[_Replacement], str],
        step: StepName,
        detail: str,
    ) -> list[Message]:
        """Save the planned results, then (only then) replace each block with `render(item)`."""
        if not plan:
            return _unchanged(messages)
        files = await self._save_planned(plan)
        editor = _Editor(messages, before)
        for item in plan:
            editor.set_block_content(item.index, item.block_index, render(item), item.old_size)
        await self._emit(step, before, editor.chars, len(editor.changed), files, detail)
        return editor.messages

    async def _save_planned(self, plan: list[_Replacement]) -> list[str]:
        """Save every planned result that has no file yet, in one batch; returns the new files.

        Nothing is replaced before all saves succeeded.
        """
        pending = [item for item in plan if item.path is None]
        try:
            paths = await self.archive.save_tool_results([(item.tool_use_id, item.text or "") for item in pending])
        except ArchiveError as error:
            raise CompactionError(f"compaction stopped, nothing replaced: {error}") from error
        for item, path in zip(pending, paths, strict=True):
            item.path = path
        return paths

    async def _save_result(self, block: dict[str, Any], text: str) -> str:
        try:
            return await self.archive.save_tool_result(str(block.get("tool_use_id") or "unknown"), text)
        except ArchiveError as error:
            raise CompactionError(f"compaction stopped, nothing replaced: {error}") from error

    async def _write_transcript(self, messages: Sequence[Message]) -> str:
        try:
            return await self.archive.write_transcript(list(messages))
        except ArchiveError as error:
            raise CompactionError(f"compaction stopped, nothing replaced: {error}") from error

    def _trusted_persisted_path(self, content: Any) -> str | None:
        """The path of a <persisted-output> block whose file really is in the archive."""
        marker = parse_marker(content)
        if marker is None or marker.kind != "persisted":
            return None
        return marker.path if self.archive.resolve(marker.path) is not None else None

    async def _summarize(self, messages: Sequence[Message], focus: str | None) -> str:
        if self.summarize is None:
            raise CompactionError("no summarizer configured; history left as it was")
        text = conversation_text(messages, self.settings.summary_input_char_limit)
        try:
            summary = await self.summarize(text, focus)
        except CompactionError:
            raise
        except Exception as error:
            raise CompactionError(f"summary failed, history left as it was: {error_line(error)}") from error
        if not isinstance(summary, str) or not summary.strip():
            raise CompactionError("summary failed, history left as it was: the summary was empty")
        return summary


def _unchanged(messages: Sequence[Message]) -> list[Message]:
    """A step that changed nothing hands back its input itself (a copy only if it was not a list)."""
    return messages if isinstance(messages, list) else list(messages)


def conversation_text(messages: Sequence[Message], limit: int = 80_000) -> str:
    """The JSON of `messages` for the summarizer: head 1/4 and tail 3/4 of `limit` when longer."""
    text = json.dumps(list(messages), default=str, ensure_ascii=False)
    if len(text) <= limit:
        return text
    head = limit // 4
    return text[:head] + text[len(text) - (limit - head):]


def _request_visible(messages: Sequence[Message], active_request: str) -> bool:
    marker = request_marker(active_request)
    return any(
        message.get("role") == "user"
        and isinstance(message.get("content"), str)
        and (message["content"] == active_request or marker in message["content"])
        for message in messages
    )
