"""A search query is plain text: what the model or the person typed is searched for, never parsed.

FTS5 reads its MATCH argument as a little language (`AND`, `OR`, `NOT`, `NEAR`, `*`, `-`, `^`,
parentheses, `column:` filters, quotes). None of it is given a chance: the query is split at blanks
into words, and each word becomes one FTS5 string (inside double quotes, a quote doubled), which FTS5
searches as text whatever it holds. The words are joined with AND; when no chunk holds every word, the
index asks again with OR (and says so).

What cannot be searched is said, never raised: a query longer than `MAX_QUERY_CHARS` is cut (with a
note), words past `MAX_TERMS` are left out (with a note), NUL is a blank and a lone surrogate is its
escape (as the index stores text, core/recall/extract.py). The trigram tokenizer matches a string of 3
characters or more: shorter words are left out with a note, and a query made only of short words is
searched as one string when it is long enough (`x = 1`). The unicode61 tokenizer has no use for a word
without a letter or a digit (`->`), which is left out the same way. A query with nothing left to search
gets a one-line answer (`Query.problem`).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.recall.extract import searchable
from core.text import one_line, plural, visible

MAX_QUERY_CHARS = 1_000
MAX_TERMS = 16
TRIGRAM_MIN = 3


@dataclass(frozen=True)
class Query:
    """A query made safe to search: the words searched, what was left out and why."""

    shown: str  # the query as searched, on one line, safe to show
    terms: tuple[str, ...]
    notes: tuple[str, ...] = ()
    problem: str | None = None  # set when there is nothing to search: the one-line answer

    def match(self, any_term: bool = False) -> str:
        """The MATCH expression: every word as an FTS5 string, joined with AND (OR with `any_term`)."""
        return (" OR " if any_term else " AND ").join(quoted(term) for term in self.terms)


def quoted(term: str) -> str:
    """`term` as one FTS5 string: searched as text, whatever it holds."""
    return '"' + term.replace('"', '""') + '"'


def parse(text: str, tokenizer: str) -> Query:
    """The query `text` as the index with `tokenizer` ("trigram" or "unicode61") searches it."""
    if not isinstance(text, str):
        return Query("", (), problem=f"the query must be text, got {type(text).__name__}")
    notes: list[str] = []
    cleaned = searchable(text)
    if len(cleaned) > MAX_QUERY_CHARS:
        notes.append(
            f"the query was {len(cleaned):,} characters: only its first {MAX_QUERY_CHARS:,} were searched"
        )
        cleaned = cleaned[:MAX_QUERY_CHARS]
    words = list(dict.fromkeys(cleaned.split()))  # each word once, in order
    shown = visible(one_line(cleaned, 200))
    if not words:
        return Query(shown, (), tuple(notes), problem="the query is empty: give words to search for")
    usable = [word for word in words if _usable(word, tokenizer)]
    if not usable and tokenizer == "trigram":
        whole = " ".join(cleaned.split())
        if len(whole) >= TRIGRAM_MIN:  # `x = 1`: short words searched together, as one string
            return Query(shown, (whole,), tuple(notes))
    left_out = [word for word in words if word not in usable]
    if left_out:
        why = (
            f"shorter than {TRIGRAM_MIN} characters"
            if tokenizer == "trigram"
            else "without a letter or a digit"
        )
        listed = ", ".join(repr(visible(word)) for word in left_out[:8])
        more = f" and {len(left_out) - 8:,} more" if len(left_out) > 8 else ""
        notes.append(f"left out {plural(len(left_out), 'word')} {why}: {listed}{more}")
    if not usable:
        return Query(shown, (), tuple(notes), problem=f"nothing to search for in {shown!r}: {notes[-1]}")
    if len(usable) > MAX_TERMS:
        notes.append(f"only the first {MAX_TERMS} of {len(usable):,} words were searched")
        usable = usable[:MAX_TERMS]
    return Query(shown, tuple(usable), tuple(notes))


def _usable(word: str, tokenizer: str) -> bool:
    if tokenizer == "trigram":
        return len(word) >= TRIGRAM_MIN
    return any(char.isalnum() for char in word)
