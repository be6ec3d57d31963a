"""A query is plain text: FTS5's operators, quotes and the like are searched as text, never parsed; a
query too long, with NUL or lone surrogates, empty or too short has a clear outcome, never an error.
For any text at all, a search never raises and returns only files the archive's manifest vouches for."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.archive import Archive
from core.recall import RecallIndex
from core.recall.query import MAX_QUERY_CHARS, MAX_TERMS, parse

ODD_TEXT = """config: NEAR(alpha beta) and body:value are literal
a "quoted phrase" and it's fine
wild* -negated ^start (group) AND OR NOT
x = 1
"""


@pytest.fixture(scope="module")
def corpus() -> Iterator[tuple[Archive, RecallIndex, str]]:
    with tempfile.TemporaryDirectory() as folder:
        archive = Archive(Path(folder))
        index = RecallIndex(archive)
        (path,) = asyncio.run(archive.save_tool_results([("toolu_odd", ODD_TEXT)]))
        asyncio.run(archive.save_tool_results([("toolu_plain", "plain words about alpha and beta\n")]))
        asyncio.run(archive.write_transcript([{"role": "user", "content": "alpha beta gamma"}]))
        (Path(folder) / ".task_outputs/tool-results/planted.txt").write_text("alpha NEAR(alpha beta) planted")
        yield archive, index, path
        index.close()


@pytest.mark.parametrize(
    "query",
    [
        "NEAR(alpha beta)",
        "body:value",
        '"quoted phrase"',
        'quoted phrase"',
        "it's fine",
        "wild*",
        "-negated",
        "^start",
        "(group)",
        "AND OR NOT",
        "x = 1",
    ],
)
def test_fts_syntax_is_searched_as_text(corpus: tuple[Archive, RecallIndex, str], query: str) -> None:
    _, index, path = corpus
    result = index.search_now(query)
    assert result.problem is None and not result.notes
    assert [hit.path for hit in result.hits] == [path]
    assert result.text().startswith(f'1 hit for "{query}" in the archive')


@pytest.mark.parametrize(
    "query",
    ['"', '""', "*", "NEAR(", ")", "-", "^", ":", "NOT", "AND AND", '" OR "', "'", "\\", "{x}", "a:b:c"],
)
def test_operators_alone_never_raise(corpus: tuple[Archive, RecallIndex, str], query: str) -> None:
    _, index, _ = corpus
    result = index.search_now(query)
    answer = result.text()
    assert "\n" not in answer or result.hits  # no hit: one line
    assert not any("could not" in note for note in result.notes)


def test_an_empty_query_gets_one_clear_line(corpus: tuple[Archive, RecallIndex, str]) -> None:
    _, index, _ = corpus
    for query in ("", "   ", "\n\t", "\x00"):
        result = index.search_now(query)
        assert result.problem == "the query is empty: give words to search for"
        assert result.text() == "search_context: the query is empty: give words to search for"


def test_short_words_are_left_out_with_a_note(corpus: tuple[Archive, RecallIndex, str]) -> None:
    _, index, _ = corpus
    result = index.search_now("is alpha")
    assert result.query.notes == ("left out 1 word shorter than 3 characters: 'is'",)
    assert result.hits and result.text().endswith("note: left out 1 word shorter than 3 characters: 'is'")
    only_short = index.search_now("x")
    assert only_short.problem is not None and "shorter than 3 characters" in only_short.problem
    assert "\n" not in only_short.text()


def test_a_hundred_kilobyte_query_is_cut_and_said(corpus: tuple[Archive, RecallIndex, str]) -> None:
    _, index, _ = corpus
    started = time.perf_counter()
    result = index.search_now("alpha " + "z" * 100_000)
    assert time.perf_counter() - started < 2
    assert f"only its first {MAX_QUERY_CHARS:,} were searched" in result.query.notes[0]
    many = index.search_now(" ".join(f"word{number}" for number in range(100)))
    assert many.query.notes == (f"only the first {MAX_TERMS} of 100 words were searched",)
    assert not many.hits and many.text().startswith('No match for "word0 word1')


def test_nul_and_lone_surrogates_in_a_query(corpus: tuple[Archive, RecallIndex, str]) -> None:
    _, index, path = corpus
    assert [hit.path for hit in index.search_now("NEAR(alpha\x00beta)").hits] == [path]  # NUL is a blank
    result = index.search_now("alpha \ud800\udfff \udc80")
    result.text().encode("utf-8")
    assert result.query.shown.encode("utf-8")


def test_no_match_says_what_was_searched_in_one_line(corpus: tuple[Archive, RecallIndex, str]) -> None:
    _, index, _ = corpus
    result = index.search_now("nothing-like-this anywhere")
    assert result.text() == (
        'No match for "nothing-like-this anywhere" in 3 archived files (tool results, transcripts, summaries).'
    )


def test_when_no_file_holds_every_word_the_ones_holding_some_are_given(
    corpus: tuple[Archive, RecallIndex, str],
) -> None:
    _, index, _ = corpus
    result = index.search_now("gamma unheardof")
    assert [hit.kind for hit in result.hits] == ["transcript"]
    assert result.notes == ("no archived text holds every word: these hits hold some of them",)


def test_the_query_language_is_never_reached() -> None:
    query = parse('one" NOT "two NEAR(ccc ddd) eee* -fff g:h', "trigram")
    assert query.terms == ('one"', "NOT", '"two', "NEAR(ccc", "ddd)", "eee*", "-fff", "g:h")
    assert query.match() == (
        '"one""" AND "NOT" AND """two" AND "NEAR(ccc" AND "ddd)" AND "eee*" AND "-fff" AND "g:h"'
    )
    assert query.match(any_term=True).count(" OR ") == 7
    assert parse("-> x", "unicode61").terms == ("x",)


@settings(max_examples=300, deadline=None)
@given(query=st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=300))
def test_any_text_never_raises_and_every_hit_is_vouched(
    corpus: tuple[Archive, RecallIndex, str], query: str
) -> None:
    archive, index, _ = corpus
    result = index.search_now(query, 20)
    result.text().encode("utf-8")
    for hit in result.hits:
        assert archive.is_own(hit.path)
        assert hit.line >= 1 and "\n" not in hit.snippet and "\x1b" not in hit.snippet
    assert not any("could not" in note for note in result.notes)
    assert index.failures == 0
