"""The snip's one-pass transcript: serialised once, measured from its lines, hashed once, complete before use.

- `core.history.sizes.dumps` is `json.dumps(value, default=str, ensure_ascii=False)` for any value (and
  from several threads at once, and after a failed call);
- a saved transcript is the JSONL of the list, its sizes are `message_chars` of each message, its
  name carries the first 8 hex of the SHA-256 the manifest records, and no temporary file is left;
- a transcript that cannot be given its name leaves no file, and a snip then replaces nothing; the
  snip's figures are `estimate_chars` of the lists before and after.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.archive as archive_module
from core.archive import Archive, ArchiveError
from core.compaction import CompactionError, CompactionSettings, Compactor
from core.events import CompactionStep
from core.history import estimate_chars
from core.history.sizes import dumps, message_chars
from core.history.store import HistorySizer


class Opaque:
    """Not JSON: json.dumps(default=str) writes its str()."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return f"Opaque({self.text})"


def reference(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


texts = st.text() | st.sampled_from(["\ud800", "a\udfffb", "\u2028\u2029", "</tag>", '"\\', "模板 ✓"])
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | texts
    | texts.map(Opaque)
)
keys = texts | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=values)
def test_dumps_writes_what_json_dumps_writes(value: Any) -> None:
    assert dumps(value) == reference(value)


def test_dumps_gives_json_dumps_errors_and_recovers_after_them() -> None:
    circular: list[Any] = [1]
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps({"role": "user", "content": circular})
    with pytest.raises(TypeError):
        dumps({"x": math.nan, "bad": {1j: 2}})  # a complex key: json.dumps refuses it
    message = {"role": "user", "content": [{"type": "text", "text": "after the errors"}], "n": [1, [2]]}
    assert dumps(message) == reference(message)


def test_dumps_from_many_threads_at_once() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": f"{n} " * n, "n": n}]} for n in range(300)]
    expected = [reference(message) for message in messages]
    failures: list[str] = []

    def work() -> None:
        for _ in range(5):
            if [dumps(message) for message in messages] != expected:
                failures.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def conversation(pairs: int, size: int = 300) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read them all"}]
    for number in range(pairs):
        use = f"toolu_{number:05d}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": use, "name": "read_file", "input": {"path": f"src/{number}.py"}},
        ]})
        text = (f"{number}: 模板 ✓ \u2028 line\n" * (size // 20))[:size]
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use, "content": text}]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Done reading."}]})
    return messages


def leftovers(workdir: Path) -> list[str]:
    folder = workdir / ".transcripts"
    return sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".tmp")) if folder.is_dir() else []


async def test_a_saved_transcript_is_the_jsonl_its_sizes_and_its_digest(tmp_path: Path) -> None:
    messages = [*conversation(400), {"role": "user", "content": "lone \ud800 surrogate"}]  # several batches
    archive = Archive(tmp_path)
    saved = await archive.save_transcript(messages)
    assert saved.sizes == tuple(message_chars(message) for message in messages)
    data = (tmp_path / saved.path).read_bytes()
    assert data == "".join(reference(message) + "\n" for message in messages).encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()
    assert saved.sha256 == digest
    pattern = rf"\.transcripts/transcript_\d{{8}}-\d{{6}}-{os.getpid()}-\d{{4}}-{digest[:8]}\.jsonl"
    assert re.fullmatch(pattern, saved.path)
    assert stat.S_IMODE((tmp_path / saved.path).stat().st_mode) == 0o600
    assert archive.is_own(saved.path)
    assert Archive(tmp_path).is_own(saved.path)  # the manifest holds the digest: a resumed session trusts it too
    assert leftovers(tmp_path) == []
    assert (await Archive(tmp_path).read_transcript(saved.path))[:-1] == messages[:-1]


def refuse_links(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk refuses to give a written file its name (an I/O error, not a missing feature)."""

    def link(source: Any, target: Any, **where: Any) -> None:  # where: os.link's dir_fd / follow_symlinks
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(archive_module.os, "link", link)


async def test_a_transcript_that_cannot_be_named_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = Archive(tmp_path)
    refuse_links(monkeypatch)
    with pytest.raises(ArchiveError, match="Input/output error"):
        await archive.write_transcript(conversation(3))
    assert leftovers(tmp_path) == [] and archive.list_files() == []


async def test_write_transcript_names_equal_histories_apart_and_keeps_both(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    messages = conversation(5)
    first, second = await archive.write_transcript(messages), await archive.write_transcript(messages)
    assert first != second
    assert (tmp_path / first).read_bytes() == (tmp_path / second).read_bytes()
    assert archive.is_own(first) and archive.is_own(second)


async def test_a_snip_whose_transcript_cannot_be_placed_replaces_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = conversation(40)
    snapshot = json.dumps(messages)
    compactor = Compactor(Archive(tmp_path), settings=CompactionSettings())
    refuse_links(monkeypatch)
    with pytest.raises(CompactionError, match="nothing replaced"):
        await compactor.prepare(messages, "read them all")
    assert json.dumps(messages) == snapshot
    assert leftovers(tmp_path) == [] and Archive(tmp_path).list_files() == []


async def test_snip_figures_are_estimate_chars_and_match_the_dry_run(tmp_path: Path) -> None:
    messages = conversation(400)
    events: list[CompactionStep] = []
    compactor = Compactor(Archive(tmp_path), settings=CompactionSettings(), on_event=events.append)
    (planned,) = await compactor.dry_run(messages, "read them all")
    assert Archive(tmp_path).list_files() == []
    result = await compactor.prepare(messages, "read them all")
    (event,) = events
    assert event.step == "snip_compact" and event.messages_affected == len(messages) - len(result) + 1
    assert event.chars_before == estimate_chars(messages) == planned.chars_before
    assert event.chars_after == estimate_chars(result) == compactor.estimate_chars(result)
    # the dry run names the transcript by an estimate of the same length, so its figures agree
    assert planned.chars_after == event.chars_after
    (transcript,) = event.files_written
    assert await Archive(tmp_path).read_transcript(transcript) == messages
    assert leftovers(tmp_path) == []


def test_the_sizer_gives_each_messages_size_of_any_list() -> None:
    sizer = HistorySizer()
    messages = conversation(10)
    assert sizer.sizes(messages) == [message_chars(message) for message in messages]
    shorter = [messages[0], *messages[5:]]
    assert sizer.sizes(shorter) == [message_chars(message) for message in shorter]
    sizer.derive(messages, shorter, ())  # a derived list is still sized message by message
    assert sizer.sizes(shorter) == [message_chars(message) for message in shorter]
