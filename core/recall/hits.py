"""What a search finds: ranked hits, each a file, a line, a snippet and a score, and how to say them.

A hit names a workdir-relative archive path and the line of that file where the match is (a tool
result's line; a transcript's line is one message), so `read_file` with `offset=<line>` reads on from
there. Its snippet is one line of the text, bounded, with every control character shown as an escape:
text from the archive never acts on a terminal. The answer the model reads (`SearchResult.text`) lists
the hits best first with the call that reads more; no hit is one line that says what was searched.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.recall.query import Query
from core.text import one_line, plural, visible

SNIPPET_CHARS = 160
KIND_NAMES = {"tool-result": "tool result", "transcript": "transcript", "summary": "summary"}


@dataclass(frozen=True)
class Hit:
    """One archived file that holds the query: its workdir-relative path, the line of the match, a
    one-line snippet, the score (bm25, higher is better) and what kind of text it is."""

    path: str
    line: int
    snippet: str
    score: float
    kind: str = "tool-result"

    @property
    def read_more(self) -> str:
        """The tool call that reads the file from the hit's line."""
        return f'read_file(path="{self.path}", offset={self.line})'

    def record(self) -> dict[str, object]:
        """The hit as `ctxtui search --output-format json` prints it."""
        return {"path": self.path, "line": self.line, "snippet": self.snippet, "score": self.score}


@dataclass(frozen=True)
class SearchResult:
    """The hits of one query, best first, and what the index has to say about it (notes, a problem)."""

    query: Query
    hits: tuple[Hit, ...] = ()
    notes: tuple[str, ...] = ()
    files: int = 0  # how many archived files were searched

    @property
    def problem(self) -> str | None:
        return self.query.problem

    def text(self) -> str:
        """The answer the model reads: the hits with how to read more, or one line."""
        notes = (*self.query.notes, *self.notes)
        if self.query.problem is not None:
            return f"search_context: {self.query.problem}"
        searched = f'"{self.query.shown}"'
        if not self.hits:
            where = plural(self.files, "archived file")
            tail = "".join(f"; {note}" for note in notes)
            return f"No match for {searched} in {where} (tool results, transcripts, summaries){tail}."
        lines = [
            f"{plural(len(self.hits), 'hit')} for {searched} in the archive, best first. Read more with "
            "read_file at the hit's path, from its line (offset):"
        ]
        for number, hit in enumerate(self.hits, 1):
            lines.append(
                f"{number}. {hit.path} line {hit.line} ({KIND_NAMES.get(hit.kind, hit.kind)}, score {hit.score:g})"
            )
            lines.append(f"   {hit.snippet}")
            lines.append(f"   {hit.read_more}")
        lines += [f"note: {note}" for note in notes]
        return "\n".join(lines)


def snippet(line: str, terms: tuple[str, ...], limit: int = SNIPPET_CHARS) -> str:
    """`line` around the first term it holds, on one line and at most about `limit` characters, with
    every control character made a visible escape."""
    lowered = line.lower()
    found = [position for term in terms if (position := lowered.find(term.lower())) >= 0]
    start = max(0, min(found) - limit // 3) if found else 0
    window = line[start : start + limit + 1]
    cut_end = start + limit < len(line)
    shown = visible(one_line(window[:limit]))
    if len(shown) > 2 * limit:  # escapes made it longer
        shown = shown[: 2 * limit]
        cut_end = True
    return ("…" if start > 0 else "") + shown + ("…" if cut_end else "")


def best_line(text: str, terms: tuple[str, ...]) -> tuple[int, str]:
    """The line of `text` (0-based, and its text) that holds the most terms, then the longest of them,
    then the first (case folded; the tokenizer's own matching may differ, so a chunk whose lines hold
    none gives its first line)."""
    folded = [term.lower() for term in terms]
    best, best_score = 0, (-1, -1)
    lines = text.split("\n")
    for number, line in enumerate(lines):
        lowered = line.lower()
        held = [term for term in folded if term in lowered]
        score = (len(held), sum(map(len, held)))
        if score > best_score:
            best, best_score = number, score
            if len(held) == len(folded):
                break
    return best, lines[best]
