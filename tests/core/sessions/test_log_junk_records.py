"""A bad line of a session log costs that line, never the session: for every record kind, one record of
the wrong shape (at the end, where a crash or a stray write leaves it, or in the middle) is skipped and
counted, and the rest replays to the history, pins, ledger and meta it had; `--resume` still continues it.
Before, a junk `replace` at the end emptied the replayed history ("no session has a history to
continue"), a junk splice did the same, and junk compaction, ledger or meta records were taken silently.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.config import Settings
from core.sessions.listing import list_sessions, resume_replay
from core.sessions.log import SESSIONS_DIR, SessionLog
from core.values.records import LedgerEntry
from tests.support.cli import ctxtui, env_without_key

HISTORY = [
    {"role": "user", "content": "fix the build"},
    {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    {"role": "user", "content": "thanks, now the docs"},
    {"role": "assistant", "content": [{"type": "text", "text": "the docs too"}]},
]
ENTRY = LedgerEntry(step="micro_compact", call=2, kind="tool_result", label="read_file a.txt", chars=900,
                    tokens=None, path=".task_outputs/tool-results/t1.txt", restorable=True, tool_use_id="t1",
                    group=1)
GOOD = [
    {"type": "meta", "created": 1_700_000_000.0, "model": "offline", "workdir": "/w"},
    {"type": "message", "message": HISTORY[0]},
    {"type": "message", "message": HISTORY[1]},
    {"type": "event", "kind": "LedgerChanged",
     "event": {"start": 0, "added": [asdict(ENTRY)], "returned": [], "how": None}},
    {"type": "pins", "ids": ["t1"]},
    {"type": "splice", "reason": "turn", "length": 4,
     "changes": [{"start": 2, "removed": 0, "added": HISTORY[2:]}]},
]

JUNK: dict[str, Any] = {
    "replace of numbers": {"type": "replace", "reason": "x", "messages": [1, 2]},
    "replace of strings": {"type": "replace", "reason": "x", "messages": ["junk"]},
    "replace of nothing sendable": {"type": "replace", "reason": "x",
                                    "messages": [{"role": "user"}, {"role": "assistant", "content": 7}]},
    "replace with a non-message": {"type": "replace", "reason": "x", "messages": [HISTORY[0], None]},
    "replace not a list": {"type": "replace", "reason": "x", "messages": "junk"},
    "splice adding junk": {"type": "splice", "reason": "x", "length": 1,
                           "changes": [{"start": 0, "removed": 4, "added": ["junk"]}]},
    "splice that does not fit": {"type": "splice", "reason": "x", "length": 3,
                                 "changes": [{"start": 9, "removed": 1, "added": []}]},
    "message not a message": {"type": "message", "message": 5},
    "message of the system role": {"type": "message", "message": {"role": "system", "content": "x"}},
    "pins not a list": {"type": "pins", "ids": "t1"},
    "compaction of junk": {"type": "compaction", "reason": ["x"], "steps": 5, "files": "a"},
    "ledger change with a junk entry": {"type": "event", "kind": "LedgerChanged",
                                        "event": {"start": 0, "added": [{"step": 1}], "returned": []}},
    "ledger change not a dict": {"type": "event", "kind": "LedgerChanged", "event": [1]},
    "ledger change with junk indices": {"type": "event", "kind": "LedgerChanged",
                                        "event": {"start": 1, "added": [], "returned": ["0"]}},
    "meta with a junk model": {"type": "meta", "model": {"name": 5}},
    "unknown type": {"type": 5},
    "a list": [1, 2],
    "a number": 5,
    "torn line": '{"type": "replace", "messages": [{"role": "us',
}


def write(path: Path, records: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in records),
                    encoding="utf-8")


def session_path(workdir: Path) -> Path:
    return workdir / ".ctxtui" / SESSIONS_DIR / "session_20250101-000000-1-abcdef.jsonl"


PLACES = [(name, "end") for name in JUNK]
PLACES += [(name, "middle") for name in JUNK if not name.startswith("splice")]
# (A splice that does not fit makes the splices after it wait for the next snapshot, as before: they name
# places in a history the replay does not have. Only at the end does it cost that record alone.)


@pytest.mark.parametrize(("name", "where"), PLACES, ids=[f"{where}-{name}" for name, where in PLACES])
def test_one_bad_record_of_any_kind_costs_that_record_only(tmp_path: Path, name: str, where: str) -> None:
    path = session_path(tmp_path)
    junk = JUNK[name]
    write(path, [*GOOD, junk] if where == "end" else [*GOOD[:3], junk, *GOOD[3:]])
    replay = SessionLog.replay(path)
    assert replay.messages == HISTORY
    assert replay.skipped == 1 and replay.records == len(GOOD) + 1
    assert replay.pins == ["t1"]
    assert replay.ledger == [ENTRY]
    assert replay.meta == GOOD[0]
    assert replay.valid


@pytest.mark.parametrize("junk", [JUNK["replace of numbers"], JUNK["splice adding junk"],
                                  JUNK["replace of nothing sendable"]])
async def test_a_session_ending_in_a_junk_record_is_listed_and_resumed(tmp_path: Path, junk: Any) -> None:
    path = session_path(tmp_path)
    write(path, [*GOOD, junk])
    [info] = list_sessions(tmp_path / ".ctxtui")
    assert info.resumable and info.messages == len(HISTORY) and info.skipped == 1
    replay, found = resume_replay(tmp_path / ".ctxtui", None)
    assert found == path and replay.messages == HISTORY
    agent = Agent.from_settings(Settings(workdir=tmp_path, offline=True, resume=True))
    try:
        assert agent.messages == HISTORY
    finally:
        await agent.aclose()


def test_the_command_lists_it_with_what_was_skipped_and_resumes_it(tmp_path: Path) -> None:
    path = session_path(tmp_path)
    write(path, [*GOOD, JUNK["replace of numbers"]])
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path))
    listing = ctxtui("sessions", "--workdir", str(tmp_path), env=env)
    assert listing.returncode == 0, listing.stderr
    row = listing.stdout.splitlines()[1]
    assert row.endswith("fix the build  [1 bad record skipped]") and "cannot resume" not in row
    rows = json.loads(ctxtui("sessions", "--workdir", str(tmp_path), "--output-format", "json", env=env).stdout)
    assert rows[0]["skipped"] == 1 and rows[0]["resumable"] and rows[0]["messages"] == len(HISTORY)
    resumed = ctxtui("-p", "help", "--offline", "--resume", "--workdir", str(tmp_path), env=env)
    assert resumed.returncode == 0, resumed.stderr
