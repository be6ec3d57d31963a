"""ArchiveOpening: opening what a node, a log line or the archive list points at (a part of MainScreen).

A marker is believed only when the archive vouches for its path (`archive.resolve`); anything else
is named in a warning and never opened. A transcript is shown readably, with the summary that
replaced it on top when that summary is still in context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from core.archive import ArchivedFile, ArchiveError
from core.markers import parse_marker
from core.text import visible
from tui.format import plural, transcript_text
from tui.screens.archive import ArchiveScreen
from tui.screens.archive_list import ArchiveListScreen
from tui.screens.main_base import MainScreenBase
from tui.widgets.message_tree import NodeInfo

SUMMARY_STEPS = ("compact_history", "reactive_compact")

MARKER_TITLES = {
    "placeholder": "↩ archived tool result",
    "persisted": "⇲ persisted output (full text)",
    "compacted": "Σ compacted summary · transcript before compaction",
    "reactive": "Σ reactive compact · transcript before compaction",
}


class ArchiveOpening(MainScreenBase):
    """The archive list, and the viewers for markers, blocks and the files a step wrote."""

    def action_archive(self) -> None:
        """The archive list; the file chosen opens in a viewer, and closing it comes back to the list."""

        async def chosen(archived: ArchivedFile | None) -> None:
            if archived is not None:
                title = "Σ transcript" if archived.kind == "transcript" else "↩ archived tool result"
                await self.open_archived(archived, title, then=self.action_archive)

        self.app.push_screen(ArchiveListScreen(self.agent.archive.list_files(), restore=self._restore_path),
                             callback=chosen)

    def _not_archived(self, path: str, suffix: str = "") -> None:
        self.notify(f"not an archive path: {visible(path)}{suffix}", severity="warning", markup=False)

    async def open_marker(self, info: NodeInfo) -> None:
        """A marker node chosen in the tree: its archived file (or transcript), if the archive vouches for it."""
        marker = info.marker
        assert marker is not None
        archived = self.agent.archive.resolve(marker.path)
        if archived is None:
            self._not_archived(marker.path)
            return
        title = MARKER_TITLES.get(info.kind, "archive")
        if info.kind == "snip":
            title = f"✂ snipped messages ({plural(marker.count or 0, 'message')} archived) · transcript"
        await self.open_archived(archived, title, summary=marker.summary)

    async def open_archived(
        self, archived: ArchivedFile, title: str, summary: str | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        """Push an ArchiveScreen for a trusted archive file (a transcript is rendered readably);
        `then` runs when the viewer closes."""
        archive = self.agent.archive
        try:
            if archived.kind == "transcript":
                messages = await archive.read_transcript(archived.path)
                text = await asyncio.to_thread(transcript_text, messages)
                head = f"{plural(len(messages), 'message')} in this transcript.\n"
                if summary:
                    head += f"\nThe summary now in context:\n{summary}\n"
                text = head + text
                screen = ArchiveScreen(title, text, path=archived.path, size=archived.size)
            else:
                screen = await ArchiveScreen.for_file(title, archived.absolute, path=archived.path, size=archived.size)
                if archived.kind == "tool-result":
                    screen.restore = self._restore_path
        except (ArchiveError, OSError) as error:
            self.notify(visible(str(error)), severity="error", markup=False)
            return

        def closed(_: object) -> None:
            if then is not None:
                then()

        await self.app.push_screen(screen, callback=closed)

    async def open_block(self, info: NodeInfo) -> None:
        """A block's text as it is in context now, in a viewer."""
        where = f"#{info.index + 1}" + (f" block {info.block + 1}" if info.block is not None else "")
        await self.app.push_screen(ArchiveScreen(f"{where} · {info.kind} · in context now", info.text))

    def untrusted(self, info: NodeInfo) -> None:
        """A marker the archive does not vouch for: say so, open nothing."""
        self._not_archived(info.marker.path if info.marker else "?", " (shown as plain text, not opened)")

    async def open_step_file(self, step: str, path: str) -> None:
        """A file a compaction step wrote (chosen in the log); a summary step's transcript with its summary."""
        archived = self.agent.archive.resolve(path)
        if archived is None:
            self._not_archived(path)
            return
        if step in SUMMARY_STEPS and archived.kind == "transcript":
            await self._open_summary_step(step, archived)
            return
        title = "Σ transcript written by the step" if archived.kind == "transcript" else "↩ archived tool result"
        await self.open_archived(archived, title)

    async def _open_summary_step(self, step: str, archived: ArchivedFile) -> None:
        """A summary step's transcript, with the summary (decoded) that replaced it on top."""
        summary: str | None = None
        for message in self.agent.messages:
            content = message.get("content")
            texts = [content] if isinstance(content, str) else [
                block.get("text") for block in content or [] if isinstance(block, dict)
            ]
            for text in texts:
                marker = parse_marker(text)
                if marker is not None and marker.summary is not None and marker.path == archived.path:
                    summary = marker.summary
        title = MARKER_TITLES["compacted" if step == "compact_history" else "reactive"]
        if summary is None:
            title += " (its summary is no longer in context)"
        await self.open_archived(archived, title, summary=summary)
