"""`ctxtui inspect FILE --ledger --facts`: a ctxtui session's ledger and facts (JSON and text), a
transcript's facts through its markers, and a Claude Code session's compaction boundaries."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.model.offline import OfflineModel
from tests.core.sessions.test_inspection import claude_code_records, write_claude_code
from tests.support.cli import ctxtui

pytestmark = pytest.mark.usefixtures("no_api_key")

RULE = "Never touch prod.yaml"
TYPED = f"Some context first, long enough that the offline model does not quote it all back.\n{RULE}."
FIELDS = {"ledger": ["step", "call", "kind", "label", "chars", "tokens", "path", "restorable"],
          "facts": ["kind", "text", "source", "visible", "path"]}


async def a_session(workdir: Path) -> tuple[Path, list[Any], list[Any]]:
    """A session that typed a rule, read a file with an error line, dropped it and summarised the rest."""
    (workdir / "a.txt").write_text("alpha\nerror: it broke\n" + "a" * 2000, encoding="utf-8")
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True, compaction=CompactionSettings()),
                                model=OfflineModel(chunk_delay=0))
    try:
        async for _ in agent.run_turn(TYPED):
            pass
        async for _ in agent.run_turn("read a.txt"):
            pass
        await agent.drop(agent.messages[-2]["content"][0]["tool_use_id"])
        async for _ in agent.compact(None, summary="We read a.txt."):
            pass
        assert agent.session is not None
        return agent.session.path, agent.ledger, agent.facts().facts
    finally:
        await agent.aclose()


def test_a_session_files_ledger_and_facts_as_json_and_text(tmp_path: Path) -> None:
    path, ledger, facts = asyncio.run(a_session(tmp_path))
    result = ctxtui("inspect", str(path), "--ledger", "--facts", "--output-format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["kind"] == "session"
    assert [entry["step"] for entry in data["ledger"]] == ["drop", "compact_history"]
    for key, fields in FIELDS.items():
        assert all(list(item)[: len(fields)] == fields for item in data[key]), key
    assert [(e["step"], e["call"], e["path"], e["tokens"]) for e in data["ledger"]] == \
        [(e.step, e.call, e.path, e.tokens) for e in ledger]
    by_text = {fact["text"]: fact for fact in data["facts"]}
    assert set(by_text) == {fact.text for fact in facts} == {RULE, "a.txt", "error: it broke"}
    rule = by_text[RULE]
    assert rule["visible"] is False and rule["path"] == ledger[1].path and rule["source"] == "messages.0"
    error = by_text["error: it broke"]
    assert error["visible"] is False and error["path"] == ledger[0].path  # the dropped result's file
    only_ledger = json.loads(ctxtui("inspect", str(path), "--ledger", "--output-format", "json").stdout)
    assert "facts" not in only_ledger and only_ledger["ledger"] == data["ledger"]
    text = ctxtui("inspect", str(path), "--ledger", "--facts")
    assert text.returncode == 0, text.stderr
    assert "ledger: 2 item(s) taken out of the context" in text.stdout
    assert f"NOT VISIBLE, in {ledger[1].path}: {RULE}" in text.stdout
    assert 'drop               read_file {"path": "a.txt"}' in text.stdout


def test_a_transcripts_facts_follow_its_markers_into_the_archive(tmp_path: Path) -> None:
    _, ledger, _ = asyncio.run(a_session(tmp_path))
    transcript = tmp_path / ledger[1].path  # the summary's: it holds the placeholder of the dropped result
    data = json.loads(ctxtui("inspect", str(transcript), "--facts", "--output-format", "json").stdout)
    by_text = {fact["text"]: fact for fact in data["facts"]}
    assert by_text[RULE]["visible"] is True
    assert by_text["error: it broke"] == {"kind": "error", "text": "error: it broke", "source": "messages.4",
                                          "visible": False, "path": ledger[0].path}


def test_a_claude_code_sessions_boundaries_and_the_facts_before_them(tmp_path: Path) -> None:
    records = claude_code_records()
    records[1]["message"]["content"] = "Always run the linter. What broke?"
    records[2]["message"]["content"] = [{"type": "text", "text": "Error: the old build"}]
    path = write_claude_code(tmp_path, records)
    data = json.loads(ctxtui("inspect", str(path), "--ledger", "--facts", "--output-format", "json").stdout)
    entry, = data["ledger"]
    assert (entry["step"], entry["kind"], entry["label"], entry["path"]) == \
        ("claude-code:compact_boundary", "messages", "messages #0-#1", str(path))
    rule, = [fact for fact in data["facts"] if fact["kind"] == "constraint"]
    assert rule == {"kind": "constraint", "text": "Always run the linter", "source": "messages.0",
                    "visible": False, "path": str(path)}


def test_a_claude_code_summary_that_names_a_transcript_reads_it(tmp_path: Path) -> None:
    earlier = write_claude_code(tmp_path, claude_code_records()).rename(tmp_path / "earlier.jsonl")
    earlier_records = [json.loads(line) for line in earlier.read_text().splitlines() if line.endswith("}")]
    earlier_records[1]["message"]["content"] = "Do not delete the fixtures"
    earlier.write_text("".join(json.dumps(record) + "\n" for record in earlier_records), encoding="utf-8")
    records = claude_code_records()
    summary = next(record for record in records if record.get("isCompactSummary"))
    summary["message"]["content"] = f"Summary. If you need details, read the full transcript at: {earlier}"
    path = write_claude_code(tmp_path, records)
    data = json.loads(ctxtui("inspect", str(path), "--facts", "--output-format", "json").stdout)
    rule, = [fact for fact in data["facts"] if fact["text"] == "Do not delete the fixtures"]
    assert not rule["visible"] and rule["path"] == str(earlier)
