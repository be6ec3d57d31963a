"""SearchView: the person searches what the session archived, as the model does with search_context.

A query box over a list of hits (path, line, snippet), best first. The search runs in a worker
(`Agent.search` answers from its index's own thread), exclusive: a newer query cancels the one before.
`down` goes from the box to the hits; `enter` on a hit posts `Open` (the inspector opens the archived
file at the hit's line). Every path and snippet came from the archive: it enters the list as `Content`,
never markup, control characters shown as escapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from core.text import one_line, visible
from tui.format import plural

if TYPE_CHECKING:  # core.recall (the index, the tools) loads after the first frame
    from core.recall.hits import Hit

SEARCH_LIMIT = 20
"""Hits the view asks for (the tool's maximum: the person may look further than the model)."""


class Searcher(Protocol):
    """What answers the view's queries (the Agent)."""

    async def search(self, query: str, limit: int = 5) -> list[Hit]: ...


def hit_label(hit: Hit) -> Content:
    """One hit as a list row: `path:line · kind`, then the snippet, all plain text."""
    from core.recall.hits import KIND_NAMES  # loaded by the agent before any hit exists

    return Content.assemble(
        (visible(one_line(hit.path, 90)), "$text-accent"),
        (f":{hit.line}", "bold"),
        (f" · {KIND_NAMES.get(hit.kind, visible(hit.kind))}", "dim"),
        "\n  ",
        visible(one_line(hit.snippet, 200)),
    )


class SearchView(Vertical):
    """Search the archive: a query box over the hits (see the module docstring)."""

    DEFAULT_CSS = """
    SearchView {
        height: 1fr;
        padding: 0 1;
        & > #search-status { color: $text-muted; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
        & > #search-hits { height: 1fr; background: transparent; border: none; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "focus_hits", "Hits", show=False, id="search.hits"),
    ]

    @dataclass
    class Open(Message):
        """Open the archived file of this hit at its line."""

        hit: Hit

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.searcher: Searcher | None = None
        """What answers (None until the agent is built)."""
        self.hits: tuple[Hit, ...] = ()
        self.query_text = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search the archive (plain text), enter…", id="search-query")
        yield Static(
            Content("type a query: what compaction took is searchable, as the model searches it"),
            id="search-status",
        )
        yield OptionList(id="search-hits")

    @property
    def query_input(self) -> Input:
        return self.query_one("#search-query", Input)

    @property
    def hit_list(self) -> OptionList:
        return self.query_one("#search-hits", OptionList)

    def focus_query(self) -> None:
        self.query_input.focus()

    def action_focus_hits(self) -> None:
        """`down` in the query box: on to the hits (the list handles its own keys once focused)."""
        if self.hits:
            self.hit_list.focus()

    def run_query(self, query: str) -> None:
        """Search for `query` now (the box shows it)."""
        if self.query_input.value != query:
            self.query_input.value = query
        self.search_worker(query)

    @on(Input.Submitted, "#search-query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.search_worker(event.value)

    @work(exclusive=True, group="search", exit_on_error=False, description="search the archive")
    async def search_worker(self, query: str) -> None:
        """Ask the searcher (off the hot path: a worker; the index answers from its own thread)."""
        query = query.strip()
        self.query_text = query
        if not query:
            self.show_hits((), "type a query, then enter")
            return
        if self.searcher is None:
            self.show_hits((), "the agent is still starting: search again in a moment")
            return
        self._status(f'searching for "{visible(one_line(query, 60))}"…')
        try:
            hits = await self.searcher.search(query, SEARCH_LIMIT)
        except Exception as error:  # the index's failures are data: shown, never a crash
            self.show_hits((), f"the search failed: {visible(one_line(str(error), 160))}")
            return
        shown = f'"{visible(one_line(query, 60))}"'
        self.show_hits(
            hits,
            f"{plural(len(hits), 'hit')} for {shown} · enter opens one at its line"
            if hits
            else f"no match for {shown} in the archive",
        )

    def show_hits(self, hits: Sequence[Hit], status: str) -> None:
        self.hits = tuple(hits)
        hit_list = self.hit_list
        hit_list.clear_options()
        hit_list.add_options([Option(hit_label(hit), id=f"hit:{index}") for index, hit in enumerate(hits)])
        if hits:
            hit_list.highlighted = 0
        self._status(status)

    def _status(self, text: str) -> None:
        self.query_one("#search-status", Static).update(Content(text))

    @on(OptionList.OptionSelected, "#search-hits")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_index < len(self.hits):
            self.post_message(self.Open(self.hits[event.option_index]))
