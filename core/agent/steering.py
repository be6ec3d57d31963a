"""The user's hand on the context: the Agent's steering actions (DESIGN.md, "Steering", a contract).

Drop a tool result now, restore an archived one, undo the last compaction, pin and unpin what every
step must keep byte-exact, preview the next prepare, draft a summary to review, archive a request
too long for the context, compact now. Drop, restore, undo, preview and the draft refuse while a
turn runs (SteeringError: one line, nothing changed) and compact says so in an ErrorEvent; what
changes the history or the pins is recorded in the session log, and each hands back the change or a
notice for the UI to show. The history work itself is done by the functions of `core.compaction.steering`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from core.agent.base import AgentBase, Message
from core.compaction import CompactionError
from core.compaction.steering import SteeringError, drop_result, find_result, restore_result, undo
from core.events import AgentEvent, CompactionStep, ErrorEvent, HistoryChanged, Notice
from core.history import estimate_chars
from core.history.messages import USER_PIN_PREFIX, find_user_message, text_of, tool_result_ids, user_pin_key
from core.text import one_line


class AgentSteering(AgentBase):
    """The steering actions of the Agent (see the module docstring)."""

    async def drop(self, tool_use_id: str) -> HistoryChanged | None:
        """Archive one tool result now and leave a placeholder, exactly as micro_compact would."""
        self._idle("drop a result")
        messages, path = await drop_result(self._messages, self.archive, tool_use_id)
        self._log(Notice(f"dropped the result of {tool_use_id}: saved at {path}"))
        return self._replace(messages, "drop")

    async def restore(self, path: str) -> HistoryChanged | None:
        """The archived text at `path` is back in context, byte-exact (at its place when its marker is
        still there, else appended as a labelled message). Refused when it alone is over the limit."""
        self._idle("restore a result")
        messages, where = await restore_result(
            self._messages, self.archive, path, self.compactor.settings.context_char_limit
        )
        self._log(Notice(f"restored {path} ({where})"))
        return self._replace(messages, "restore")

    async def undo_compaction(self) -> HistoryChanged | None:
        """Reverse the last compaction: what it removed is back, byte-exact and in place, and every
        message added after it stays after it. Falsy when there is nothing to undo."""
        self._idle("undo a compaction")
        if not self.compactions:
            return None
        last = self.compactions[-1]
        messages = undo(self._messages, last)
        self.compactions.pop()
        self._log(Notice(f"undid {' + '.join(last.steps)} (its files stay in the archive)"))
        return self._replace(messages, "undo")

    @property
    def pinned(self) -> frozenset[str]:
        """What every compaction step keeps byte-exact: tool_use ids (their results, in a pair with
        the tool_use) and `user:` keys of user messages (`core.history.user_pin_key`)."""
        return self.compactor.pinned

    async def pin(self, tool_use_id: str) -> Notice:
        """Pin a tool result (by its tool_use id) or a user message (by its `user:` key, see
        `pin_key`): every step keeps it byte-exact. Saved with the session.

        The notice it returns is a warning when the pinned items alone are over the context limit.
        """
        what = self._pin_label(tool_use_id)
        if tool_use_id in self.pinned:
            return Notice(f"{what} is already pinned")
        if pin_target(self._messages, tool_use_id) is None:
            if tool_use_id.startswith(USER_PIN_PREFIX):
                raise SteeringError(f"no user message {tool_use_id!r} in the context")
            raise SteeringError(f"no tool result for {tool_use_id!r} in the context "
                                "(tool results and user messages can be pinned)")
        self._set_pins(self.pinned | {tool_use_id})
        return self._pins_notice(f"pinned {what}: every compaction step keeps it byte-exact")

    async def unpin(self, tool_use_id: str) -> Notice:
        """Unpin a tool result or a user message; compaction may shorten it again."""
        what = self._pin_label(tool_use_id)
        if tool_use_id not in self.pinned:
            raise SteeringError(f"{what} is not pinned")
        self._set_pins(self.pinned - {tool_use_id})
        return self._pins_notice(f"unpinned {what}")

    def pin_key(self, index: int) -> str | None:
        """The key `pin` takes for the message at `index`: its tool_use id for a message of one
        tool result, its `user:` key for a user message of text, else None (a marker, a reply)."""
        if not 0 <= index < len(self._messages):
            return None
        message = self._messages[index]
        ids = tool_result_ids(message)
        if len(ids) == 1:
            return ids[0]
        return user_pin_key(message)

    def _pin_label(self, key: str) -> str:
        """How a notice names what `key` pins: a user message by its first words."""
        if not key.startswith(USER_PIN_PREFIX):
            return f"the result of {key}"
        index = find_user_message(self._messages, key)
        if index is None:
            return f"the user message {key}"
        return f"the user message {one_line(text_of(self._messages[index]), 40)!r} ({key})"

    def _set_pins(self, ids: frozenset[str]) -> None:
        self.compactor.pinned = ids
        if self.session is not None:
            self.session.pins(ids)

    def pinned_chars(self) -> int:
        """The JSON size of what is pinned (results with their tool_use blocks, user messages), as
        the summary carries them."""
        parts: list[Any] = []
        for key in self.pinned:
            target = pin_target(self._messages, key)
            if target is None:
                continue
            index, block_index = target
            message = self._messages[index]
            parts.append(message if block_index is None else message["content"][block_index])
        return estimate_chars(parts)

    def _pins_notice(self, text: str) -> Notice:
        limit = self.compactor.settings.context_char_limit
        size = self.pinned_chars() if self.pinned else 0
        if size > limit:
            notice = Notice(
                f"{text}; the pinned items alone are {size:,} chars, over the {limit:,}-char limit: "
                "compaction cannot bring the context under it (unpin some)", "warning")
        else:
            notice = Notice(text)
        self._log(notice)
        return notice

    async def preview(self) -> list[CompactionStep]:
        """What the next prepare would do now, step by step (writes nothing, calls no model)."""
        self._idle("preview the next call")
        return await self.compactor.dry_run(self._messages, self.last_request)

    async def recompact_warning(self) -> Notice | None:
        """After an undo: a warning when automatic compaction would compact again on the next call."""
        if not self.auto_compact or self.running:
            return None
        fired = [step.step for step in await self.preview() if step.saved > 0 or step.step == "compact_history"]
        if not fired:
            return None
        notice = Notice(
            f"automatic compaction is on: the next call would run {' + '.join(dict.fromkeys(fired))} again; "
            "pause it, or compact with a focus instead", "warning")
        self._log(notice)
        return notice

    async def draft_summary(self, focus: str | None = None) -> str:
        """A summary of the history as a manual compact would ask for it; changes nothing.

        Review (and edit) it, then `compact(focus, summary=text)` puts exactly that text in.
        """
        self._idle("draft a summary")
        if not self._messages:
            raise SteeringError("nothing to summarise yet")
        try:
            return await self.compactor.summarize_history(self._messages, focus)
        except CompactionError as error:
            raise SteeringError(str(error)) from error

    async def archive_request(self, text: str) -> str:
        """Save a request too long for the context in the archive; returns the short message to send instead.

        The message names the file (the model reads it with read_file) and keeps a preview.
        """
        name = f"user-request-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
        path = await self.archive.save_tool_result(name, text)
        preview = text[: self.compactor.settings.fit_preview_chars]
        return (
            f"[My message is {len(text):,} chars long, too long for the context: it is saved whole at {path}. "
            f"Read it with read_file (offset/limit) before answering.]\n\nIts beginning:\n{preview}"
        )

    async def compact(self, focus: str | None = None, summary: str | None = None) -> AsyncIterator[AgentEvent]:
        """Compact the history now, on the user's request (the focus goes into the summary request).

        `summary` (e.g. a reviewed `draft_summary`) is used exactly as given instead of asking the model.
        """
        if self.running:
            yield ErrorEvent("cannot compact while a turn is running", "busy")
            return
        if not self._messages:
            yield ErrorEvent("nothing to compact yet", "compaction")
            return
        self.running = True
        try:
            async with contextlib.aclosing(self._compaction("compact_history", focus, summary)) as events:
                async for event in events:
                    yield self._log(event)
                    if notice := self._session_notice():
                        yield notice
            yield await self.measure()
        finally:
            self.running = False


def pin_target(messages: Sequence[Message], key: str) -> tuple[int, int | None] | None:
    """Where what `key` pins is: (message, block) of a tool result, (message, None) of a user message."""
    if key.startswith(USER_PIN_PREFIX):
        index = find_user_message(messages, key)
        return None if index is None else (index, None)
    return find_result(messages, key)
