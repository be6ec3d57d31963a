"""`ctxtui inspect FILE --ledger --facts`: what compaction took out of a history file, and its facts.

A ctxtui session: its ledger is replayed from the log's records, and its facts are the replayed
history's with what the archive under the session's workdir holds (core/facts/rebuild.py; a fact
the archive does not hold is attributed to the session file itself, which holds every message the
session had). A transcript or a list of messages: the same, without a ledger. A Claude Code session:
one ledger entry per compaction boundary (the messages before it, which the session file keeps), the
facts of the whole file and of the transcript its last summary names ("read the full transcript at:
PATH"), visible when the context after the last boundary holds them, else in the file that holds them.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core.archive import Archive
from core.facts.entries import run_label
from core.facts.extract import facts_of
from core.facts.rebuild import read_back
from core.history.sizes import message_chars
from core.sessions.claude_code import looks_like_claude_code, read_claude_code, read_records
from core.sessions.inspection import Inspected
from core.text import one_line
from core.values.records import Fact, LedgerEntry

CLAUDE_CODE_STEP = "claude-code:compact_boundary"
_TRANSCRIPT_AT = re.compile(r"transcript at:?\s*(\S+\.jsonl)")


def ledger_of(inspected: Inspected) -> list[LedgerEntry]:
    """The ledger of an inspected file (empty when its format records none)."""
    if inspected.kind == "session":
        return list(inspected.ledger)
    if inspected.kind != "claude-code":
        return []
    entries = []
    start = 0
    for stop in inspected.cuts:
        if stop > start:
            chars = sum(message_chars(message) for message in inspected.archived[start:stop])
            entries.append(
                LedgerEntry(
                    CLAUDE_CODE_STEP,
                    0,
                    "messages",
                    run_label(start, stop),
                    chars,
                    None,
                    str(inspected.path),
                    False,
                    span=(start, stop),
                )
            )
        start = stop
    return entries


def facts_of_file(inspected: Inspected) -> list[Fact]:
    """The facts of an inspected file, each visible in its context or not (and then where it is)."""
    if inspected.kind == "claude-code":
        return _claude_code_facts(inspected)
    archive = (
        Archive(inspected.workdir) if inspected.workdir is not None and inspected.workdir.is_dir() else None
    )
    fallback = str(inspected.path) if inspected.kind == "session" else None
    return read_back(inspected.messages, archive, fallback).report().facts


def _claude_code_facts(inspected: Inspected) -> list[Fact]:
    """Claude Code: the archived messages (and the transcript the summary names) hold what is not visible."""
    from core.facts.index import FactIndex

    index = FactIndex(inspected.messages)
    found = [
        (key, f"messages.{position}", str(inspected.path))
        for position, message in enumerate(inspected.archived)
        for key, _ in facts_of(message)
    ]
    named = _named_transcript(inspected)
    if named is not None:
        earlier = read_claude_code(named)
        found += [
            (key, f"messages.{position}", str(named))
            for position, message in enumerate([*earlier.archived, *earlier.messages])
            for key, _ in facts_of(message)
        ]
    index.add_archived(found)
    return index.report().facts


def _named_transcript(inspected: Inspected) -> Path | None:
    """The transcript a Claude Code summary points to, when it is another Claude Code session file."""
    match = _TRANSCRIPT_AT.search(inspected.summary or "")
    if match is None:
        return None
    path = Path(match.group(1)).expanduser()
    if path == inspected.path or not path.is_file():
        return None
    records, _ = read_records(path)
    return path if any(looks_like_claude_code(record) for record in records[:50]) else None


def facts_and_ledger(inspected: Inspected, ledger: bool, facts: bool) -> dict[str, Any]:
    """The JSON of `--ledger` / `--facts`: keys `ledger` and `facts`, the contract's fields."""
    data: dict[str, Any] = {"file": str(inspected.path), "kind": inspected.kind}
    if ledger:
        data["ledger"] = [asdict(entry) for entry in ledger_of(inspected)]
    if facts:
        data["facts"] = [asdict(fact) for fact in facts_of_file(inspected)]
    return data


def facts_and_ledger_text(data: dict[str, Any]) -> str:
    """The same for a terminal (callers pass it through core.text.visible)."""
    lines = [f"{data['file']} ({data['kind']})"]
    if "ledger" in data:
        entries = data["ledger"]
        lines += ["", f"ledger: {len(entries)} item(s) taken out of the context"]
        width = min(60, max((len(one_line(entry["label"], 60)) for entry in entries), default=0))
        for entry in entries:
            tokens = f", {entry['tokens']:,} tok" if entry["tokens"] is not None else ""
            back = f", back ({entry['returned']})" if entry.get("returned") else ""
            lines.append(
                f"  call {entry['call']:>3}  {entry['step']:<18} {one_line(entry['label'], 60):<{width}} "
                f"{entry['chars']:>9,} ch{tokens}  {entry['path'] or '-'}"
                f"{' restorable' if entry['restorable'] else ''}{back}"
            )
    if "facts" in data:
        facts = data["facts"]
        hidden = [fact for fact in facts if not fact["visible"]]
        lines += ["", f"facts: {len(facts)}, {len(hidden)} not visible"]
        for fact in facts:
            where = "visible" if fact["visible"] else f"NOT VISIBLE, in {fact['path']}"
            lines.append(f"  {fact['kind']:<10} {fact['source']:<14} {where}: {one_line(fact['text'], 100)}")
    return "\n".join(lines) + "\n"
