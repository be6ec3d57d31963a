"""`ctxtui search QUERY` (tui/cli/search.py): the hits of a workdir's archive as a table or the
contract's JSON, no hit (exit 0), bad input (exit 2, one line), nothing created where nothing was
archived; and `-p --output-format stream-json` carries the model's search_context calls."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from core.archive import Archive
from tests.support.cli import api_env, clean_cli_env, ctxtui, run_main
from tests.support.fakeapi import FakeAnthropicServer, text_reply, tool_reply

TOKEN = "PELICAN_4410_mirror"


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_cli_env(tmp_path / "config", monkeypatch)


@pytest.fixture
def workdir(tmp_path: Path) -> tuple[Path, str, str]:
    folder = tmp_path / "work"
    archive = Archive(folder)
    (result,) = asyncio.run(archive.save_tool_results([("toolu_1", f"first line\nthe {TOKEN} is here\n")]))
    transcript = asyncio.run(archive.write_transcript([{"role": "user", "content": f"where is {TOKEN}?"}]))
    return folder, result, transcript


def test_the_hits_as_a_table(capsys: pytest.CaptureFixture[str], workdir: tuple[Path, str, str]) -> None:
    folder, result, transcript = workdir
    code, out, err = run_main(capsys, "search", TOKEN, "--workdir", str(folder))
    assert code == 0 and err == ""
    header, *rows = out.splitlines()
    assert header.split() == ["score", "path:line", "snippet"]
    assert {row.split()[1] for row in rows} == {f"{result}:2", f"{transcript}:1"}


def test_the_hits_as_json(capsys: pytest.CaptureFixture[str], workdir: tuple[Path, str, str]) -> None:
    folder, result, _ = workdir
    code, out, _ = run_main(
        capsys, "search", f"{TOKEN} first", "--workdir", str(folder), "--output-format", "json"
    )
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["hits"]
    (hit,) = data["hits"]
    assert hit == {"path": result, "line": 2, "snippet": f"the {TOKEN} is here", "score": hit["score"]}
    assert isinstance(hit["score"], float)


def test_no_hit_is_exit_0(capsys: pytest.CaptureFixture[str], workdir: tuple[Path, str, str]) -> None:
    folder, _, _ = workdir
    code, out, _ = run_main(capsys, "search", "absent_everywhere", "--workdir", str(folder))
    assert code == 0 and out.strip().startswith('No match for "absent_everywhere" in 2 archived files')
    code, out, _ = run_main(
        capsys, "search", "absent_everywhere", "--workdir", str(folder), "--output-format", "json"
    )
    assert code == 0 and json.loads(out) == {"hits": []}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["", "--workdir", "{folder}"], "the query is empty"),
        (["x", "--workdir", "{folder}"], "shorter than 3 characters"),
        (["word", "--workdir", "{folder}/missing"], "is not a directory"),
        (["word", "--workdir", "{folder}", "--limit", "0"], "--limit must be from 1 to 20"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], workdir: tuple[Path, str, str], args: list[str], message: str
) -> None:
    folder, _, _ = workdir
    code, out, err = run_main(capsys, "search", *[arg.format(folder=folder) for arg in args])
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("ctxtui search: error: ") and message in err


def test_nothing_archived_answers_without_creating_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = run_main(capsys, "search", "anything", "--workdir", str(empty))
    assert code == 0 and out.startswith('No match for "anything" in 0 archived files')
    assert os.listdir(empty) == []


def test_operators_and_notes(capsys: pytest.CaptureFixture[str], workdir: tuple[Path, str, str]) -> None:
    folder, result, _ = workdir
    code, out, err = run_main(capsys, "search", f'"{TOKEN}" is', "--workdir", str(folder))
    assert code == 0 and "left out 1 word shorter than 3 characters: 'is'" in err
    assert (
        "no archived text holds every word" not in err
    )  # the quotes are text: `"TOKEN"` is not in the files
    assert out.startswith("No match") or result in out


@pytest.mark.slow
def test_stream_json_carries_the_search_context_calls(
    fake_api: FakeAnthropicServer, workdir: tuple[Path, str, str]
) -> None:
    folder, result, _ = workdir
    fake_api.script(
        tool_reply([("toolu_find", "search_context", {"query": TOKEN})], text="Searching."),
        text_reply("Found it."),
    )
    run = ctxtui(
        "-p",
        "find the token",
        "--workdir",
        str(folder),
        "--output-format",
        "stream-json",
        env=api_env(fake_api),
    )
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    (call,) = [record for record in records if record["type"] == "tool_call"]
    assert call == {
        "type": "tool_call",
        "id": "toolu_find",
        "name": "search_context",
        "input": {"query": TOKEN},
    }
    (answer,) = [record for record in records if record["type"] == "tool_result"]
    assert answer["name"] == "search_context" and not answer["is_error"]
    assert f"{result} line 2 (tool result" in answer["output"] and TOKEN in answer["output"]
    assert records[-1]["type"] == "result" and records[-1]["text"] == "Found it."
