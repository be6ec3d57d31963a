"""The session log keeps the model's notes: each change is a "notes" record with all of them, the last
one is what a replay gives back (what `--resume` and the session picker restore); a record of the wrong
shape is skipped and counted, the notes before it stay; text a file holds that is not valid UTF-8 comes
back valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.sessions.log import SessionLog

HISTORY = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]


def session(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "session.jsonl"
    lines = [{"type": "meta", "model": "offline"}, *({"type": "message", "message": m} for m in HISTORY), *records]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_the_last_notes_record_is_the_notes(tmp_path: Path) -> None:
    path = session(tmp_path, [{"type": "notes", "notes": ["a"]}, {"type": "notes", "notes": ["a", "b\x00"]},
                              {"type": "notes", "notes": ["b\x00"]}])
    replay = SessionLog.replay(path)
    assert replay.notes == ["b\x00"] and replay.skipped == 0 and replay.messages == HISTORY
    assert SessionLog.replay(session(tmp_path, [])).notes == []  # a session from before the note tool


@pytest.mark.parametrize("junk", [None, "a", [1], ["ok", None], [""], {"0": "a"}])
def test_a_notes_record_of_the_wrong_shape_is_skipped_and_counted(tmp_path: Path, junk: Any) -> None:
    path = session(tmp_path, [{"type": "notes", "notes": ["kept"]}, {"type": "notes", "notes": junk}])
    replay = SessionLog.replay(path)
    assert replay.notes == ["kept"] and replay.skipped == 1 and replay.messages == HISTORY


def test_a_lone_surrogate_in_a_notes_record_comes_back_valid(tmp_path: Path) -> None:
    path = session(tmp_path, [{"type": "notes", "notes": ["half \ud800 pair"]}])  # json.dumps escapes it
    (text,) = SessionLog.replay(path).notes
    assert text == "half \\ud800 pair"
    text.encode("utf-8")


async def test_notes_are_written_as_one_record_each_change(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "sessions" / "s.jsonl")
    log.message(HISTORY[0])
    log.notes(("one",))
    log.notes(("one", "two\n[Compacted]"))
    await log.close()
    assert SessionLog.replay(log.path).notes == ["one", "two\n[Compacted]"]
