"""The search_context tool checks its input and hands the query to what answers it: the query as typed,
`limit` clamped to 1..20; without a searcher, or with bad input, one line the model reads as an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.archive import Archive
from core.recall import RecallIndex
from core.tools import ToolOutput
from tests.support.tools import make_tools


class Answered:
    problem = None

    def __init__(self, query: str) -> None:
        self.query = query

    def text(self) -> str:
        return f"answered {self.query!r}"


class Recorder:
    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    async def search(self, query: str, limit: int = 5) -> Answered:
        self.asked.append((query, limit))
        return Answered(query)


@pytest.mark.parametrize(
    ("given", "used"), [(None, 5), (1, 1), (3, 3), (20, 20), (0, 1), (-4, 1), (99, 20), (7.0, 7)]
)
async def test_the_limit_is_clamped(ws: Path, given: object, used: int) -> None:
    searcher = Recorder()
    tools = make_tools(ws, searcher=searcher)
    tool_input: dict[str, object] = {"query": 'a "b" NEAR(c)'}
    if given is not None:
        tool_input["limit"] = given
    output = await tools.run("search_context", tool_input)
    assert output == ToolOutput("answered 'a \"b\" NEAR(c)'") and searcher.asked == [('a "b" NEAR(c)', used)]


@pytest.mark.parametrize(
    "tool_input",
    [
        {},
        {"query": 3},
        {"query": "x", "limit": "five"},
        {"query": "x", "limit": True},
        {"query": "x", "limit": float("nan")},
    ],
)
async def test_bad_input_is_one_line_the_model_reads(ws: Path, tool_input: dict[str, object]) -> None:
    searcher = Recorder()
    output = await make_tools(ws, searcher=searcher).run("search_context", tool_input)
    assert output.is_error and "\n" not in output.content and searcher.asked == []


async def test_without_a_searcher_the_call_is_refused(ws: Path) -> None:
    tools = make_tools(ws)
    assert tools.searcher is None and "search_context" in [schema["name"] for schema in tools.schemas]
    output = await tools.run("search_context", {"query": "anything"})
    assert output.is_error and output.content == (
        "search_context is not available here: this session has no archive index."
    )


async def test_the_recall_index_answers(ws: Path) -> None:
    archive = Archive(ws)
    index = RecallIndex(archive)
    try:
        (path,) = await archive.save_tool_results([("toolu_1", "the answer is FORTY_TWO_xyz\n")])
        tools = make_tools(ws, searcher=index)
        output = await tools.run("search_context", {"query": "FORTY_TWO_xyz"})
        assert not output.is_error and f"1. {path} line 1 (tool result, score" in output.content
        none = await tools.run("search_context", {"query": "absent_token_here"})
        assert none.content == (
            'No match for "absent_token_here" in 1 archived file (tool results, transcripts, summaries).'
        )
        empty = await tools.run("search_context", {"query": ""})
        assert (
            empty.is_error and empty.content == "search_context: the query is empty: give words to search for"
        )
    finally:
        index.close()
