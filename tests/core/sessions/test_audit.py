"""`inspect FILE --audit`: each finding in a crafted file, nothing in clean ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.client_markers import CC_SUMMARY_PREFIX
from core.sessions.audit import Compaction, audit, audit_json, audit_text, findings
from core.sessions.inspection import load_file
from tests.core.sessions.test_proxy_folder import make_conversation, write_exchange

RULE = "You must never edit setup.py."
MODEL = "claude-sonnet-4-5"  # a 200k window


class ClaudeCode:
    """A Claude Code session file written record by record."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None

    def add(self, kind: str, message: dict[str, Any] | None = None, **extra: Any) -> None:
        uuid = f"r{len(self.records)}"
        record: dict[str, Any] = {"type": kind, "uuid": uuid, "parentUuid": self.parent, **extra}
        if message is not None:
            record["message"] = message
        self.records.append(record)
        self.parent = uuid

    def user(self, text: str) -> None:
        self.add("user", {"role": "user", "content": text})

    def call(self, text: str = "ok " * 50) -> None:
        self.add(
            "assistant",
            {
                "id": f"m{len(self.records)}",
                "role": "assistant",
                "model": MODEL,
                "content": [{"type": "text", "text": text}],
            },
        )

    def compact(self, pre_tokens: int, summary: str) -> None:
        self.parent, logical = None, self.parent
        self.add(
            "system",
            subtype="compact_boundary",
            logicalParentUuid=logical,
            compactMetadata={"trigger": "auto", "preTokens": pre_tokens},
        )
        self.add("user", {"role": "user", "content": f"{CC_SUMMARY_PREFIX} {summary}"}, isCompactSummary=True)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(record) + "\n" for record in self.records))
        return path


def _kinds(path: Path) -> list[tuple[str, int]]:
    return [(item.kind, item.call) for item in audit(load_file(path))]


def _session(turns: int, text: str = "work " * 200) -> ClaudeCode:
    session = ClaudeCode()
    session.user(f"Fix the parser. {RULE}")
    session.call()
    for _ in range(turns - 1):
        session.user(text)
        session.call()
    return session


def test_a_clean_claude_code_compaction_yields_nothing(tmp_path: Path) -> None:
    session = _session(4)
    session.compact(180_000, f"The person asked to fix the parser. {RULE}")
    session.user("go on")
    session.call()
    assert _kinds(session.write(tmp_path / "clean.jsonl")) == []


def test_each_kind_in_claude_code_sessions(tmp_path: Path) -> None:
    grown = _session(2, "short")
    grown.compact(150_000, "x" * 20_000 + RULE)  # a summary larger than what it replaced
    grown.user("go on")
    grown.call()
    assert _kinds(grown.write(tmp_path / "grown.jsonl")) == [("did_not_shrink", 3)]

    early = _session(4)
    early.compact(40_000, f"summary. {RULE}")
    early.user("go on")
    early.call()
    assert _kinds(early.write(tmp_path / "early.jsonl")) == [("early", 5)]

    lost = _session(4)
    lost.compact(180_000, "The person asked to fix the parser.")
    lost.user("go on")
    lost.call()
    found = audit(load_file(lost.write(tmp_path / "lost.jsonl")))
    assert [(item.kind, item.call) for item in found] == [("lost_instructions", 5)]
    assert "Must never edit setup.py" in found[0].detail or RULE.rstrip(".") in found[0].detail

    loop = _session(4)
    for _ in range(3):
        loop.compact(180_000, f"again. {RULE} " + "s")
        loop.user("go on " * 400)
        loop.call()
    assert [kind for kind, _ in _kinds(loop.write(tmp_path / "loop.jsonl"))] == ["loop"]


def test_proxy_folder_compaction(tmp_path: Path) -> None:
    make_conversation(tmp_path, 4)  # a clean conversation: it only grows
    assert audit(load_file(tmp_path)) == []
    first = {"role": "user", "content": f"Fix the bug. {RULE}"}
    history: list[Any] = [
        first,
        {"role": "assistant", "content": "ok " * 3000},
        {"role": "user", "content": "more"},
    ]
    write_exchange(
        tmp_path,
        "20261130-110000-000-aaaaaa",
        history,
        {"content": [{"type": "text", "text": "ok"}]},
        120_000,
    )
    compacted = [{"role": "user", "content": f"{CC_SUMMARY_PREFIX} The person wants the bug fixed."}]
    write_exchange(
        tmp_path,
        "20261130-110001-000-aaaaaa",
        compacted,
        {"content": [{"type": "text", "text": "ok"}]},
        3_000,
    )
    found = audit(load_file(tmp_path))
    assert [(item.kind, item.call) for item in found] == [("lost_instructions", 2)]
    assert audit_json(found)["findings"][0]["kind"] == "lost_instructions"


def test_the_rules_on_figures() -> None:
    def at(call: int, before: int = 100_000, after: int = 10_000) -> Compaction:
        return Compaction(call, before * 4, after * 4, before_tokens=before, after_tokens=after)

    assert findings([at(10), at(30)], 200_000) == []
    assert [item.kind for item in findings([at(10, after=120_000)], 200_000)] == ["did_not_shrink"]
    assert [item.kind for item in findings([at(10, before=50_000)], 200_000)] == ["early"]
    loop = findings([at(10), at(12), at(14), at(15), at(30)], 200_000)
    assert [(item.kind, item.call) for item in loop] == [("loop", 14)]
    assert "4 compactions" in loop[0].detail
    assert findings([at(10), at(15), at(20)], 200_000) == []  # one per 5 calls is no loop


def test_text_output_has_evidence_and_a_sentence() -> None:
    found = findings([Compaction(7, 400_000, 500_000)], None)
    text = audit_text("f.jsonl", found)
    assert "did_not_shrink" in text and "call    7" in text and "calls 6 -> 7" in text
    assert "did not reduce the context" in text
    assert audit_text("f.jsonl", []) == "f.jsonl: no compaction finding\n"


@pytest.mark.parametrize("kind", ["transcript", "messages"])
def test_histories_without_compaction_yield_nothing(tmp_path: Path, kind: str) -> None:
    messages = [{"role": "user", "content": RULE}, {"role": "assistant", "content": "ok"}]
    path = tmp_path / ("t.jsonl" if kind == "transcript" else "m.json")
    if kind == "transcript":
        path.write_text("".join(json.dumps(message) + "\n" for message in messages))
    else:
        path.write_text(json.dumps(messages))
    assert audit(load_file(path)) == []


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tui.cli import main

    grown = _session(2, "short")
    grown.compact(150_000, "x" * 20_000 + RULE)
    grown.user("go on")
    grown.call()
    path = grown.write(tmp_path / "grown.jsonl")
    assert main(["inspect", str(path), "--audit", "--output-format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "findings": [{"kind": "did_not_shrink", "call": 3, "detail": data["findings"][0]["detail"]}]
    }
    assert main(["inspect", str(path), "--audit"]) == 0
    assert "did_not_shrink" in capsys.readouterr().out
