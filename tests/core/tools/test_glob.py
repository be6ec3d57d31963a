"""glob: sorted, relative matches that skip tool directories and never leave the workspace; a
capped number of results; pathological patterns that finish, a time budget, a cancel that returns
at once; the segment matcher agrees with fnmatch."""

from __future__ import annotations

import asyncio
import fnmatch
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tools import GLOB_MAX_RESULTS, ToolOutput
from core.tools.globmatch import compile_segment, match_segment
from tests.support.tools import eventually, make_tools


def populate(ws: Path) -> None:
    for relative in [
        "main.py",
        "README.md",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/data.json",
        "tests/test_core.py",
        ".git/hooks/pre-commit.py",
        ".venv/lib/site.py",
        "node_modules/x/index.py",
        "src/__pycache__/core.cpython-311.py",
        ".ctxtui/state.py",
    ]:
        path = ws / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


async def test_glob_recursive_matches_are_sorted_relative_and_skip_tool_dirs(ws: Path) -> None:
    populate(ws)
    result = await make_tools(ws).run("glob", {"pattern": "**/*.py"})
    assert result == ToolOutput("main.py\nsrc/pkg/__init__.py\nsrc/pkg/core.py\ntests/test_core.py")


async def test_glob_single_level_and_directories(ws: Path) -> None:
    populate(ws)
    tools = make_tools(ws)
    assert (await tools.run("glob", {"pattern": "*.py"})).content == "main.py"
    assert (await tools.run("glob", {"pattern": "src/pkg/*.json"})).content == "src/pkg/data.json"
    assert (await tools.run("glob", {"pattern": "*"})).content == "README.md\nmain.py\nsrc/\ntests/"
    assert (await tools.run("glob", {"pattern": "src/**"})).content.splitlines() == [
        "src/pkg/",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/data.json",
    ]


async def test_glob_no_match_and_refusals(ws: Path) -> None:
    populate(ws)
    tools = make_tools(ws)
    assert await tools.run("glob", {"pattern": "*.rs"}) == ToolOutput("No files match *.rs")
    for pattern in ["../*", "/etc/*", "src/../../*", ""]:
        result = await tools.run("glob", {"pattern": pattern})
        assert result.is_error, pattern


async def test_glob_does_not_follow_symlinked_directories_outside(ws: Path, outside: Path) -> None:
    (ws / "linkdir").symlink_to(outside)
    tools = make_tools(ws)
    result = await tools.run("glob", {"pattern": "**/*.txt"})
    assert result == ToolOutput("No files match **/*.txt")
    refused = await tools.run("glob", {"pattern": "linkdir/*.txt"})
    assert refused.is_error and "symlink" in refused.content


async def test_glob_caps_the_number_of_results(ws: Path) -> None:
    for n in range(GLOB_MAX_RESULTS + 7):
        (ws / f"f{n:04d}.txt").write_text("")
    result = await make_tools(ws).run("glob", {"pattern": "*.txt"})
    lines = result.content.splitlines()
    assert lines[0] == "f0000.txt"
    assert len(lines) == GLOB_MAX_RESULTS + 1
    assert "7 more" in lines[-1]


# -- patterns that could run away ------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "pattern",
    ["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "**/**/**/**/**/**/**/**/**/*b", "?*?*?*?*?*?*?*?*?*?*?*?*?*b"],
)
async def test_pathological_patterns_finish(ws: Path, pattern: str) -> None:
    (ws / ("a" * 200)).write_text("")
    deep = ws.joinpath(*(["a"] * 12))
    deep.mkdir(parents=True)
    (deep / ("a" * 100)).write_text("")
    result = await make_tools(ws).run("glob", {"pattern": pattern})
    assert result == ToolOutput(f"No files match {pattern}")


async def test_glob_time_budget_gives_a_clear_error(ws: Path) -> None:
    for n in range(20):
        (ws / f"f{n}.txt").write_text("")
    result = await make_tools(ws, glob_time_budget=0).run("glob", {"pattern": "**/*.txt"})
    assert result.is_error and "time budget" in result.content and "\n" not in result.content


async def test_cancelled_glob_returns_at_once_and_its_walk_stops(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.tools.glob as glob_module

    entered = threading.Event()
    release = threading.Event()
    real_entries = glob_module._entries

    def slow_entries(fd: int) -> Any:
        entered.set()
        release.wait(10)  # a directory that takes "forever" to list
        yield from real_entries(fd)

    monkeypatch.setattr(glob_module, "_entries", slow_entries)
    (ws / "a.txt").write_text("")
    task = asyncio.create_task(make_tools(ws).run("glob", {"pattern": "**/*"}))
    assert await eventually(entered.is_set)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # returned while the walk was still blocked
    assert any(t.name == "ctxtui-glob" for t in threading.enumerate())
    release.set()
    assert await eventually(lambda: not any(t.name == "ctxtui-glob" for t in threading.enumerate()))


async def test_overlong_pattern_is_refused(ws: Path) -> None:
    result = await make_tools(ws).run("glob", {"pattern": "*" * 5000})
    assert result.is_error and "at most" in result.content


_GLOB_CHARS = st.sampled_from(list("ab*?[]!-."))


@settings(max_examples=400, deadline=None)
@given(segment=st.text(_GLOB_CHARS, max_size=8), name=st.text(st.sampled_from(list("ab-.!]")), max_size=8))
def test_segment_matcher_agrees_with_fnmatch(segment: str, name: str) -> None:
    assert match_segment(compile_segment(segment), name) == fnmatch.fnmatchcase(name, segment)
