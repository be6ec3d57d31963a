"""ArchiveOpener: opening what a node, a log line or the archive list points at, in a viewer.

A marker is believed only when the archive vouches for its path (`archive.resolve`); anything else
is named in a warning and never opened. A transcript is shown readably, with the summary that
replaced it on top when that summary is still in context. The opener belongs to the inspector, which
hands it the archive, how to ask for a restore and where to find a summary; it pushes its screens
through the widget it serves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.widget import Widget

from core.text import visible
from tui.format import plural, transcript_text

if TYPE_CHECKING:  # the archive's module loads with the agent, after the first frame
    from core.archive import Archive, ArchivedFile
    from tui.widgets.node_labels import NodeInfo

SUMMARY_STEPS = ("compact_history", "reactive_compact")

MARKER_TITLES = {
    "placeholder": "↩ archived tool result",
    "persisted": "⇲ persisted output (full text)",
    "compacted": "Σ compacted summary · transcript before compaction",
    "reactive": "Σ reactive compact · transcript before compaction",
}


class ArchiveOpener:
    """The archive list, and the viewers for markers, blocks and the files a step wrote."""

    def __init__(
        self,
        host: Widget,
        archive: Archive | None,
        restore: Callable[[str], None],
        summary_of: Callable[[str], str | None],
    ) -> None:
        self.host = host
        self.archive = archive
        """None until the agent is built (`Inspector.set_archive`): nothing opens before."""
        self.restore = restore
        """Ask for an archived tool result to be put back in context (the viewer's restore key)."""
        self.summary_of = summary_of
        """The summary now in context that replaced a transcript, or None."""

    def _resolve(self, path: str) -> ArchivedFile | None:
        """The archived file `path` names, if the archive vouches for it (never before it exists)."""
        return self.archive.resolve(path) if self.archive is not None else None

    def show_list(self) -> None:
        """The archive list; the file chosen opens in a viewer, and closing it comes back to the list."""
        if self.archive is None:
            self.host.notify("the archive opens once the agent has started", severity="warning", markup=False)
            return

        async def chosen(archived: ArchivedFile | None) -> None:
            if archived is not None:
                title = "Σ transcript" if archived.kind == "transcript" else "↩ archived tool result"
                await self.open_archived(archived, title, then=self.show_list)

        from tui.screens.archive_list import ArchiveListScreen  # not needed before the first frame

        self.host.app.push_screen(
            ArchiveListScreen(self.archive.list_files(), restore=self.restore), callback=chosen
        )

    def _not_archived(self, path: str, suffix: str = "") -> None:
        self.host.notify(f"not an archive path: {visible(path)}{suffix}", severity="warning", markup=False)

    async def open_marker(self, info: NodeInfo) -> None:
        """A marker node chosen in the tree: its archived file (or transcript), if the archive vouches for it."""
        marker = info.marker
        assert marker is not None
        archived = self._resolve(marker.path)
        if archived is None:
            self._not_archived(marker.path)
            return
        title = MARKER_TITLES.get(info.kind, "archive")
        if info.kind == "snip":
            title = f"✂ snipped messages ({plural(marker.count or 0, 'message')} archived) · transcript"
        await self.open_archived(archived, title, summary=marker.summary)

    async def open_archived(
        self,
        archived: ArchivedFile,
        title: str,
        summary: str | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        """Push an ArchiveScreen for a trusted archive file (a transcript is rendered readably);
        `then` runs when the viewer closes."""
        from core.archive import ArchiveError
        from tui.screens.archive import ArchiveScreen  # not needed before the first frame

        try:
            if archived.kind == "transcript":
                assert self.archive is not None  # `archived` came from it
                messages = await self.archive.read_transcript(archived.path)
                text = await asyncio.to_thread(transcript_text, messages)
                head = f"{plural(len(messages), 'message')} in this transcript.\n"
                if summary:
                    head += f"\nThe summary now in context:\n{summary}\n"
                screen = ArchiveScreen(title, head + text, path=archived.path, size=archived.size)
            else:
                screen = await ArchiveScreen.for_file(
                    title, archived.absolute, path=archived.path, size=archived.size
                )
                if archived.kind == "tool-result":
                    screen.restore = self.restore
        except (ArchiveError, OSError) as error:
            self.host.notify(visible(str(error)), severity="error", markup=False)
            return

        def closed(_: object) -> None:
            if then is not None:
                then()

        await self.host.app.push_screen(screen, callback=closed)

    async def open_block(self, info: NodeInfo) -> None:
        """A block's text as it is in context now, in a viewer."""
        from tui.screens.archive import ArchiveScreen  # not needed before the first frame

        where = f"#{info.index + 1}" + (f" block {info.block + 1}" if info.block is not None else "")
        await self.host.app.push_screen(ArchiveScreen(f"{where} · {info.kind} · in context now", info.text))

    async def open_hit(self, path: str, line: int) -> None:
        """A search hit: its archived file at `line` (a transcript as its raw lines, one message a
        line, so the hit's line is the message), if the archive vouches for the path."""
        from tui.screens.archive import ArchiveScreen  # not needed before the first frame

        archived = self._resolve(path)
        if archived is None:
            self._not_archived(path)
            return
        title = {"transcript": "Σ transcript (one message a line)", "tool-result": "↩ archived tool result"}
        try:
            screen = await ArchiveScreen.for_file(
                f"{title.get(archived.kind, 'archive')} · search hit, line {line}",
                archived.absolute,
                path=archived.path,
                size=archived.size,
                line=line,
            )
        except OSError as error:
            self.host.notify(visible(str(error)), severity="error", markup=False)
            return
        if archived.kind == "tool-result":
            screen.restore = self.restore
        await self.host.app.push_screen(screen)

    def untrusted(self, info: NodeInfo) -> None:
        """A marker the archive does not vouch for: say so, open nothing."""
        self._not_archived(info.marker.path if info.marker else "?", " (shown as plain text, not opened)")

    async def open_step_file(self, step: str, path: str) -> None:
        """A file a compaction step wrote (chosen in the log); a summary step's transcript with its summary."""
        archived = self._resolve(path)
        if archived is None:
            self._not_archived(path)
            return
        if step in SUMMARY_STEPS and archived.kind == "transcript":
            summary = self.summary_of(archived.path)
            title = MARKER_TITLES["compacted" if step == "compact_history" else "reactive"]
            if summary is None:
                title += " (its summary is no longer in context)"
            await self.open_archived(archived, title, summary=summary)
            return
        title = (
            "Σ transcript written by the step" if archived.kind == "transcript" else "↩ archived tool result"
        )
        await self.open_archived(archived, title)
