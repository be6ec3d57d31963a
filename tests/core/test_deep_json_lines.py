"""Every JSON text the project reads from a file goes through core/jsonlines.py: a line (or an embedded
JSON string) nested deeper than json can parse, or past MAX_DEPTH, costs that line, never a
RecursionError. The facts read back through a transcript, a SWE-agent trajectory's tool arguments, an
archived transcript read back whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.archive import Archive, ArchiveError
from core.jsonlines import MAX_DEPTH
from tests.support.cli import ctxtui

pytestmark = pytest.mark.usefixtures("no_api_key")

DEEP = "[" * 100_000 + "]" * 100_000  # past what json (or any walk of it) can recurse through
RULE = "Never touch prod.yaml"


def test_the_facts_behind_a_marker_skip_a_deep_line_of_its_transcript(tmp_path: Path) -> None:
    transcripts = tmp_path / ".transcripts"
    transcripts.mkdir()
    earlier = [{"role": "user", "content": f"First things first.\n{RULE}."},
               {"role": "assistant", "content": "Understood."}]
    (transcripts / "transcript_1.jsonl").write_text(
        json.dumps(earlier[0]) + "\n" + DEEP + "\n" + json.dumps(earlier[1]) + "\n", encoding="utf-8")
    history = [{"role": "user", "content": "[3 messages archived at .transcripts/transcript_1.jsonl]"},
               {"role": "assistant", "content": "Carrying on."}]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    result = ctxtui("inspect", str(path), "--facts", "--output-format", "json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    facts = {fact["text"]: fact for fact in json.loads(result.stdout)["facts"]}
    assert facts[RULE]["visible"] is False and facts[RULE]["path"] == ".transcripts/transcript_1.jsonl"


def test_a_trajectory_whose_tool_arguments_nest_too_deep_is_read(tmp_path: Path) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": DEEP}}
    trajectory = {"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
        {"role": "assistant", "content": "Running it.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ]}
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(trajectory), encoding="utf-8")
    result = ctxtui("inspect", str(path), "--report", "--output-format", "json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert json.loads(result.stdout)["kind"] != "error"


async def test_an_archived_transcript_with_a_line_past_the_depth_bound_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    archive = Archive(tmp_path)
    written = await archive.write_transcript([{"role": "user", "content": "hello"}])
    deeper = "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50)  # json parses it; nothing should walk it
    with (tmp_path / written).open("a", encoding="utf-8") as handle:
        handle.write(deeper + "\n")
    with pytest.raises(ArchiveError) as refused:
        await archive.read_transcript(written)
    assert str(refused.value) == f"transcript {written} is not valid JSONL: nested more than {MAX_DEPTH} levels deep"
