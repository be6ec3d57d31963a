"""Steering: the user's hand on the context from the TUI, as one object the main screen holds.

Pin, unpin, drop, restore, undo, pause, preview, and compacting with the summary reviewed first.
Each is a row of `tui.actions` (a key, the palette, a slash command; the tree's keys run them on its
selection). A steering call's HistoryChanged / Notice is posted to the screen as the turn worker
posts core events, so the chat and the inspector follow it the same way; the inspector then asks
the core once for the next call's preview (its own forecast).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from core.compaction.steering import SteeringError
from core.events import HistoryChanged, Notice, cache_cost_line
from core.text import visible
from tui import messages as msg
from tui.widgets.chat_pane import ChatPane
from tui.widgets.inspector import Inspector

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.worker import Worker

    from core.agent import Agent

STEERING_WITH_ARGUMENT = ("toggle_pin", "unpin", "drop", "restore")
"""Steering actions whose slash command takes an argument (else they act on the tree's selection)."""


class SteeringHost(Protocol):
    """What steering needs from the screen that holds it."""

    busy: bool

    @property
    def agent(self) -> Agent: ...

    @property
    def app(self) -> App[Any]: ...

    @property
    def chat(self) -> ChatPane: ...

    @property
    def inspector(self) -> Inspector: ...

    def notify(self, message: str, *, severity: Any = ..., markup: bool = ...) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def start_compact(self, focus: str | None, summary: str | None = None) -> None: ...

    def run_worker(
        self,
        work: Any,
        *,
        group: str = ...,
        exclusive: bool = ...,
        exit_on_error: bool = ...,
        description: str = ...,
    ) -> Worker[Any]: ...


class Steering:
    """The steering actions of the main screen (see the module docstring)."""

    def __init__(self, host: SteeringHost) -> None:
        self.host = host

    @property
    def agent(self) -> Agent:
        return self.host.agent

    def compact(self) -> None:
        """Ask for a focus, then review the drafted summary before it goes in."""
        if self.host.busy:
            self.host.notify(
                "A turn is running: compact when it is done (esc cancels it).", severity="warning"
            )
            return

        def chosen(focus: str | None) -> None:
            if focus is not None:
                self.review_compact(focus or None)

        from tui.screens.compact_prompt import CompactPromptScreen  # not needed before the first frame

        self.host.app.push_screen(CompactPromptScreen(), callback=chosen)

    async def _steer(
        self, action: Callable[[], Awaitable[HistoryChanged | Notice | None]], nothing: str
    ) -> None:
        """Run one steering call; its HistoryChanged / Notice goes out as the turn worker posts core events."""
        host = self.host
        if host.busy:
            host.notify("A turn is running: steer the context when it is done.", severity="warning")
            return
        try:
            result = await action()
        except SteeringError as error:
            host.notify(visible(str(error)), severity="error", markup=False)
            return
        if not result:
            host.notify(nothing, markup=False)
            return
        message = msg.wrap(result)
        if message is not None:
            host.post_message(message)
        if isinstance(result, Notice):
            host.inspector.refresh_forecast(
                debounce=0.0
            )  # pins change no message, only what the next call may do

    def _said(
        self, text: str
    ) -> Callable[[HistoryChanged | None], Awaitable[HistoryChanged | Notice | None]]:
        """The notice of a change (drop, restore, undo), with what it cost the prompt cache (online)."""

        async def then(changed: HistoryChanged | None) -> HistoryChanged | Notice | None:
            if changed:
                cost = cache_cost_line(changed.cache_invalidated_tokens, changed.break_even_calls)
                await self.host.chat.add_notice(
                    f"{text}; {cost}" if cost else text, warning=bool(changed.cache_invalidated_tokens)
                )
            return changed

        return then

    def _selected_id(self, given: str | None) -> str | None:
        tool_use_id = given or self.host.inspector.message_tree.selected_tool_use_id()
        if tool_use_id is None:
            self.host.notify(
                "Select a tool result in the tree first (ctrl+t), or give its id: /pin toolu_…",
                severity="warning",
                markup=False,
            )
        return tool_use_id

    def _selected_pin_key(self, given: str | None) -> str | None:
        """What pin/unpin acts on: the given id or key, else the selected result or user message."""
        key = given or self.host.inspector.message_tree.selected_pin_key()
        if key is None:
            self.host.notify(
                "Select a tool result or one of your messages in the tree first (ctrl+t), "
                "or give its id: /pin toolu_… or /pin user:…",
                severity="warning",
                markup=False,
            )
        return key

    async def toggle_pin(self, key: str | None = None) -> None:
        chosen = self._selected_pin_key(key)
        if chosen is None:
            return
        agent = self.agent

        async def pin() -> Notice:
            return await (agent.unpin(chosen) if chosen in agent.view.pinned else agent.pin(chosen))

        await self._steer(pin, "")

    async def unpin(self, key: str | None = None) -> None:
        chosen = self._selected_pin_key(key)
        if chosen is not None:
            await self._steer(lambda: self.agent.unpin(chosen), "")

    async def drop(self, tool_use_id: str | None = None) -> None:
        chosen = self._selected_id(tool_use_id)
        if chosen is None:
            return

        async def drop() -> HistoryChanged | Notice | None:
            return await self._said(f"dropped the result of {visible(chosen)}: archived, a placeholder left")(
                await self.agent.drop(chosen)
            )

        await self._steer(drop, "nothing to drop")

    async def restore(self, path: str | None = None) -> None:
        chosen = path or self.host.inspector.message_tree.selected_archive_path()
        if chosen is None:
            self.host.notify(
                "Select a placeholder or persisted output in the tree, or give a path: /restore PATH",
                severity="warning",
                markup=False,
            )
            return

        async def restore() -> HistoryChanged | Notice | None:
            return await self._said(f"restored {visible(chosen)}: its full text is back in context")(
                await self.agent.restore(chosen)
            )

        await self._steer(restore, "that text is already in context")

    async def drop_or_restore(self) -> None:
        """The tree's one key for both: restore the selected placeholder / persisted output, else drop
        the selected tool result."""
        path = self.host.inspector.message_tree.selected_archive_path()
        if path is not None:
            await self.restore(path)
        else:
            await self.drop()

    async def undo(self) -> None:
        async def undo() -> HistoryChanged | Notice | None:
            changed = await self._said("undid the last compaction: what it removed is back, in place")(
                await self.agent.undo_compaction()
            )
            if changed:
                self.host.inspector.expect_recompaction()  # its forecast says if the next call compacts again
            return changed

        await self._steer(undo, "no compaction to undo")

    async def keep_fact(self, text: str, kind: str = "constraint") -> None:
        """Make a fact the model cannot see visible again and keep it (its message pinned, or a pinned note)."""

        async def keep() -> HistoryChanged | Notice | None:
            changed, notice = await self.agent.keep_fact(text, kind)
            if changed is None:
                return notice
            await self.host.chat.add_notice(notice.message)
            return changed

        await self._steer(keep, "")

    async def toggle_pause(self) -> None:
        agent = self.agent
        agent.auto_compact = not agent.view.auto_compact
        paused = not agent.view.auto_compact
        self.host.inspector.set_paused(paused)
        text = (
            "automatic compaction paused: the whole history goes to the model (reactive compaction still "
            "guards an API refusal; f5 resumes)"
            if paused
            else "automatic compaction resumed"
        )
        await self.host.chat.add_notice(text, warning=paused)

    async def preview(self) -> None:
        if self.host.busy:
            return
        try:
            steps = await self.agent.preview()
        except SteeringError as error:
            self.host.notify(visible(str(error)), severity="error", markup=False)
            return
        forecast = self.host.inspector.preview  # the last forecast: the timing, what waits, the facts at risk
        from tui.screens.preview import PreviewScreen  # not needed before the first frame

        await self.host.app.push_screen(
            PreviewScreen(
                steps,
                chars=self.agent.view.chars,
                limit=self.agent.view.limit,
                paused=not self.agent.view.auto_compact,
                timing=forecast.timing if forecast is not None else None,
                held=forecast.held if forecast is not None else (),
                at_risk=forecast.at_risk if forecast is not None else (),
                server=forecast.server if forecast is not None else None,
            )
        )

    def review_compact(self, focus: str | None) -> None:
        """Summary first: draft it, show it for review (accept / edit / cancel), compact with that text."""
        self.host.run_worker(
            self._review(focus),
            group="draft",
            exclusive=True,
            exit_on_error=False,
            description="draft the summary",
        )

    async def _review(self, focus: str | None) -> None:
        host = self.host
        if host.busy:
            return
        host.busy = True
        host.chat.set_activity("drafting the summary")
        try:
            draft = await self.agent.draft_summary(focus)
        except SteeringError as error:
            host.notify(visible(str(error)), severity="error", markup=False)
            return
        finally:
            host.busy = False
        from tui.screens.summary_review import SummaryReviewScreen  # not needed before the first frame

        screen = SummaryReviewScreen(
            draft,
            messages=len(self.agent.view.messages),
            chars=self.agent.view.chars,
            focus=focus,
            review=self.agent.review_summary,
        )

        async def reviewed(text: str | None) -> None:
            if text is None:
                await host.chat.add_notice("compact cancelled: nothing changed")
            else:
                host.start_compact(focus, summary=text)

        await host.app.push_screen(screen, callback=reviewed)
