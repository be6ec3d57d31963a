"""SteeringActions: pin, unpin, drop, restore, undo, pause, preview, and compacting with the summary
reviewed first (issue 10; a part of MainScreen).

Each action is a row of `tui.actions` (a key, the palette, a slash command; the tree's p/d/r/u run
them on its selection). A steering call's HistoryChanged / Notice is posted to the screen as the turn
worker posts core events, so the chat, the gauge, the tree and the views follow it the same way. The
preview of the next call is refreshed (debounced) after every change: the gauge's "next call" line
and the tree's marks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual import work
from textual.timer import Timer

from core.compaction.steering import SteeringError
from core.events import HistoryChanged, Notice
from core.history.messages import tool_result_ids
from core.text import visible
from tui import messages as msg
from tui.screens.compact_prompt import CompactPromptScreen
from tui.screens.main_base import MainScreenBase
from tui.screens.preview import LOSSY, PreviewScreen, preview_summary
from tui.screens.summary_review import SummaryReviewScreen

STEERING_WITH_ARGUMENT = ("toggle_pin", "unpin", "drop", "restore")
"""Steering actions whose slash command takes an argument (else they act on the tree's selection)."""
PREVIEW_DEBOUNCE = 0.25


class SteeringActions(MainScreenBase):
    """The steering actions and the preview of the next call."""

    _preview_timer: Timer | None
    """The last preview of the next call (what the gauge line and the tree marks show)."""

    def action_compact(self) -> None:
        if self.busy:
            self.notify("A turn is running: compact when it is done (esc cancels it).", severity="warning")
            return

        def chosen(focus: str | None) -> None:
            if focus is not None:
                self.review_compact(focus or None)

        self.app.push_screen(CompactPromptScreen(), callback=chosen)

    def action_compact_now(self) -> None:
        self.start_compact(None)

    async def _steer(self, action: Callable[[], Awaitable[HistoryChanged | Notice | None]], nothing: str) -> None:
        """Run one steering call; its HistoryChanged / Notice goes out as the turn worker posts core events."""
        if self.busy:
            self.notify("A turn is running: steer the context when it is done.", severity="warning")
            return
        try:
            result = await action()
        except SteeringError as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return
        if not result:
            self.notify(nothing, markup=False)
            return
        message = msg.wrap(result)
        if message is not None:
            self.post_message(message)
        if isinstance(result, Notice):
            self.request_preview()  # pins change no message, only what the next call may do

    def _said(self, text: str) -> Callable[[HistoryChanged | None], Awaitable[HistoryChanged | Notice | None]]:
        async def then(changed: HistoryChanged | None) -> HistoryChanged | Notice | None:
            if changed:
                await self.chat.add_notice(text)
            return changed
        return then

    def _selected_id(self, given: str | None) -> str | None:
        tool_use_id = given or self.message_tree.selected_tool_use_id()
        if tool_use_id is None:
            self.notify("Select a tool result in the tree first (ctrl+t), or give its id: /pin toolu_…",
                        severity="warning", markup=False)
        return tool_use_id

    def _selected_pin_key(self, given: str | None) -> str | None:
        """What pin/unpin acts on: the given id or key, else the selected result or user message."""
        key = given or self.message_tree.selected_pin_key()
        if key is None:
            self.notify("Select a tool result or one of your messages in the tree first (ctrl+t), "
                        "or give its id: /pin toolu_… or /pin user:…", severity="warning", markup=False)
        return key

    async def action_toggle_pin(self, tool_use_id: str | None = None) -> None:
        chosen = self._selected_pin_key(tool_use_id)
        if chosen is None:
            return
        agent = self.agent

        async def pin() -> Notice:
            return await (agent.unpin(chosen) if chosen in agent.pinned else agent.pin(chosen))

        await self._steer(pin, "")

    async def action_unpin(self, tool_use_id: str | None = None) -> None:
        chosen = self._selected_pin_key(tool_use_id)
        if chosen is not None:
            await self._steer(lambda: self.agent.unpin(chosen), "")

    async def action_drop(self, tool_use_id: str | None = None) -> None:
        chosen = self._selected_id(tool_use_id)
        if chosen is None:
            return

        async def drop() -> HistoryChanged | Notice | None:
            return await self._said(f"dropped the result of {visible(chosen)}: archived, a placeholder left")(
                await self.agent.drop(chosen))

        await self._steer(drop, "nothing to drop")

    async def action_restore(self, path: str | None = None) -> None:
        chosen = path or self.message_tree.selected_archive_path()
        if chosen is None:
            self.notify("Select a placeholder or persisted output in the tree, or give a path: /restore PATH",
                        severity="warning", markup=False)
            return
        await self._restore(chosen)

    def _restore_path(self, path: str) -> None:
        """Restore from the archive viewer or list (they close first)."""
        self.call_later(self._restore, path)

    async def _restore(self, path: str) -> None:
        async def restore() -> HistoryChanged | Notice | None:
            return await self._said(f"restored {visible(path)}: its full text is back in context")(
                await self.agent.restore(path))

        await self._steer(restore, "that text is already in context")

    async def action_undo(self) -> None:
        async def undo() -> HistoryChanged | Notice | None:
            changed = await self.agent.undo_compaction()
            if changed:
                await self.chat.add_notice("undid the last compaction: what it removed is back, in place")
                warning = await self.agent.recompact_warning()
                if warning is not None:
                    await self.chat.add_notice(
                        f"{warning.message} (f5 pauses automatic compaction, ctrl+o compacts with a focus)",
                        warning=True)
            return changed

        await self._steer(undo, "no compaction to undo")

    async def action_toggle_pause(self) -> None:
        agent = self.agent
        agent.auto_compact = not agent.auto_compact
        paused = not agent.auto_compact
        self.gauge.steering(paused=paused)
        text = ("automatic compaction paused: the whole history goes to the model (reactive compaction still "
                "guards an API refusal; f5 resumes)" if paused else "automatic compaction resumed")
        await self.chat.add_notice(text, warning=paused)
        self.request_preview()

    async def action_preview(self) -> None:
        if self.busy:
            return
        try:
            steps = await self.agent.preview()
        except SteeringError as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return
        await self.app.push_screen(PreviewScreen(
            steps, chars=self.agent.chars, limit=self.agent.compactor.settings.context_char_limit,
            paused=not self.agent.auto_compact))

    def request_preview(self) -> None:
        """Preview the next call soon (debounced): the gauge's "next call" line and the tree's marks."""
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_DEBOUNCE, self.refresh_preview)

    @work(exclusive=True, group="preview", exit_on_error=False, description="preview the next call")
    async def refresh_preview(self) -> None:
        agent = self.agent
        if agent.running or self.busy:
            return
        steps = await agent.preview() if agent.auto_compact else []
        if agent.running:
            return
        files = {path for step in steps for path in step.files_written}
        shortened = {tool_use_id for message in agent.messages if message.get("role") == "user"
                     for tool_use_id in tool_result_ids(message)
                     if agent.archive.expected_tool_result_path(tool_use_id) in files} if files else set()
        line = preview_summary(steps) if steps else ""
        self.gauge.steering(paused=not agent.auto_compact, preview=line,
                            warning=any(step.step == LOSSY for step in steps))
        self.message_tree.set_marks(agent.pinned, frozenset(shortened))

    @work(exclusive=True, group="draft", exit_on_error=False, description="draft the summary")
    async def review_compact(self, focus: str | None) -> None:
        """Summary first: draft it, show it for review (accept / edit / cancel), compact with that text."""
        if self.busy:
            return
        self.busy = True
        self.chat.set_activity("drafting the summary")
        try:
            draft = await self.agent.draft_summary(focus)
        except SteeringError as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return
        finally:
            self.busy = False
        screen = SummaryReviewScreen(draft, messages=len(self.agent.messages), chars=self.agent.chars, focus=focus)

        async def reviewed(text: str | None) -> None:
            if text is None:
                await self.chat.add_notice("compact cancelled: nothing changed")
            else:
                self.start_compact(focus, summary=text)

        await self.app.push_screen(screen, callback=reviewed)
