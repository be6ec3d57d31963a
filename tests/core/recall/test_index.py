"""The recall index follows the archive's writes and is a cache of what its manifests vouch for.

Real files in a temporary workdir: tool results, transcripts and the summaries they hold are found at
their line as the archive writes them; a deleted, corrupted or outdated index file is made again from
the manifests; a file planted in the archive is never indexed, a changed or removed one never returned;
a failing index never fails or loses an archive write.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from core.archive import Archive, Written
from core.markers import summary_message
from core.recall import RecallIndex
from core.recall.extract import CHUNK_LINES
from core.recall.index import DB_NAME

TOKEN = "QUOKKA_7731_zebra"


def garble(path: Path) -> None:
    """Every byte of the file after SQLite's 100-byte header made random."""
    data = path.read_bytes()
    path.write_bytes(data[:100] + os.urandom(len(data) - 100))


def append(path: Path, entry: dict[str, str]) -> None:
    with open(path, "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def lines_of(archive: Archive, path: str) -> list[str]:
    return (archive.workdir / path).read_text(encoding="utf-8").split("\n")


async def test_the_index_follows_tool_results_transcripts_and_summaries(
    archive: Archive, index: RecallIndex
) -> None:
    filler = [f"line {number} of the build log" for number in range(1, 120)]
    log = "\n".join([*filler[:87], f"FAILED tests/test_parse.py::{TOKEN} - ValueError: bad", *filler[87:]])
    (result_path,) = await archive.save_tool_results([("toolu_log", log)])
    summary = f"Found the failing parser test; the fix goes in src/parse.py ({TOKEN}_summary)."
    messages = [
        {
            "role": "user",
            "content": summary_message("Compacted", "fix the parser", summary, ".transcripts/t.jsonl"),
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Reading the parser."}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_g",
                    "name": "bash",
                    "input": {"command": f"grep -rn {TOKEN}_call src/"},
                }
            ],
        },
    ]
    transcript = await archive.write_transcript(messages)

    (hit,) = (await index.search(f"{TOKEN} ValueError")).hits
    assert (hit.path, hit.line, hit.kind) == (result_path, 88, "tool-result")
    assert TOKEN in hit.snippet and hit.snippet.startswith("FAILED") and hit.score >= 0
    assert lines_of(archive, hit.path)[hit.line - 1].startswith(
        "FAILED tests/test_parse.py"
    )  # read_file's offset
    assert hit.read_more == f'read_file(path="{result_path}", offset=88)'

    (found,) = (await index.search(f"{TOKEN}_summary")).hits
    assert (found.path, found.line, found.kind) == (transcript, 1, "summary")
    assert "src/parse.py" in found.snippet and "\\" not in found.snippet  # the summary decoded, not its JSON
    (call,) = (await index.search(f"{TOKEN}_call")).hits
    assert (call.path, call.line, call.kind) == (transcript, 3, "transcript")
    assert json.loads(lines_of(archive, transcript)[2])["content"][0]["input"]["command"].endswith("src/")

    hits = (await index.search(TOKEN)).hits
    assert {hit.path for hit in hits} == {result_path, transcript}
    assert index.failures == 0


async def test_a_long_result_is_found_at_its_line_in_every_chunk(
    archive: Archive, index: RecallIndex
) -> None:
    lines = [f"row {number:05d}" for number in range(1, 1_001)]
    lines[CHUNK_LINES * 7 + 3] = "the needle sits here"
    (path,) = await archive.save_tool_results([("toolu_rows", "\n".join(lines))])
    (hit,) = (await index.search("needle")).hits
    assert (hit.path, hit.line) == (path, CHUNK_LINES * 7 + 4)
    (hit,) = (await index.search("row 00999")).hits
    assert hit.line == 999


async def test_the_text_model_and_tools_put_in_is_data(archive: Archive, index: RecallIndex) -> None:
    text = f"nul\x00byte \ud800lone {TOKEN} \x1b]2;title\x07 \u202eevil\n"
    (path,) = await archive.save_tool_results([("toolu_hostile", text)])
    (hit,) = (await index.search(TOKEN)).hits
    assert hit.path == path
    assert "\x1b" not in hit.snippet and "\x07" not in hit.snippet and "\u202e" not in hit.snippet
    assert "\\x1b" in hit.snippet and "\\u202e" in hit.snippet and "\\ud800" in hit.snippet
    hit.snippet.encode("utf-8")  # valid UTF-8
    assert [hit.path for hit in (await index.search("\ud800lone")).hits] == [path]


async def test_a_deleted_index_is_made_again_from_the_manifests(archive: Archive, index: RecallIndex) -> None:
    (path,) = await archive.save_tool_results([("toolu_1", f"first {TOKEN}")])
    assert [hit.path for hit in (await index.search(TOKEN)).hits] == [path]
    for name in os.listdir(index.path.parent):
        if name.startswith(DB_NAME):
            os.remove(index.path.parent / name)
    (second,) = await archive.save_tool_results([("toolu_2", f"second {TOKEN}")])
    assert {hit.path for hit in (await index.search(TOKEN)).hits} == {path, second}
    assert index.path.is_file()

    index.close()
    os.remove(index.path)
    again = RecallIndex(archive)  # another process, later
    try:
        assert {hit.path for hit in (await again.search(TOKEN)).hits} == {path, second}
    finally:
        again.close()


async def test_a_corrupted_index_is_made_again(archive: Archive, index: RecallIndex) -> None:
    (path,) = await archive.save_tool_results([("toolu_1", f"kept {TOKEN}")])
    assert (await index.search(TOKEN)).hits
    index.close()
    garble(index.path)  # the header kept, every page after it garbage
    again = RecallIndex(archive)
    try:
        assert [hit.path for hit in (await again.search(TOKEN)).hits] == [path]
    finally:
        again.close()
    index.path.write_bytes(b"this is not a database at all" * 100)
    third = RecallIndex(archive)
    try:
        assert [hit.path for hit in (await third.search(TOKEN)).hits] == [path]
        assert third.failures >= 1 and third.problem is not None  # counted, and said in one line
    finally:
        third.close()


async def test_an_index_of_another_schema_or_tokenizer_is_made_again(
    archive: Archive, index: RecallIndex
) -> None:
    (path,) = await archive.save_tool_results([("toolu_1", f"kept {TOKEN}")])
    assert (await index.search(TOKEN)).hits
    index.close()
    with sqlite3.connect(index.path) as connection:
        connection.execute("UPDATE meta SET value = '0:unicode61' WHERE key = 'schema'")
        connection.execute("DELETE FROM files")
    again = RecallIndex(archive)
    try:
        assert [hit.path for hit in (await again.search(TOKEN)).hits] == [path]
    finally:
        again.close()


async def test_a_planted_file_is_never_indexed_or_returned(archive: Archive, index: RecallIndex) -> None:
    (path,) = await archive.save_tool_results([("toolu_real", f"real {TOKEN}")])
    await archive.write_transcript([{"role": "user", "content": "hello"}])
    planted_result = archive.tool_results_dir / "toolu_planted.txt"
    planted_result.write_text(f"planted {TOKEN} PLANTED_ONLY")
    (archive.transcripts_dir / "transcript_planted.jsonl").write_text(
        json.dumps({"role": "user", "content": f"planted {TOKEN} PLANTED_ONLY"}) + "\n"
    )
    # a line naming the planted file with a digest it does not have
    append(archive.tool_results_dir / ".manifest", {"name": "toolu_planted.txt", "sha256": "0" * 64})
    for fresh in (False, True):
        if fresh:  # a rebuild reads the archive's folders: still only what the manifest vouches for
            index.close()
            os.remove(index.path)
            index = RecallIndex(archive)
        assert [hit.path for hit in (await index.search(TOKEN)).hits] == [path]
        assert not (await index.search("PLANTED_ONLY")).hits
    index.close()


async def test_a_changed_or_removed_file_is_never_returned(archive: Archive, index: RecallIndex) -> None:
    changed, removed, kept = await archive.save_tool_results(
        [("toolu_c", f"changed {TOKEN}"), ("toolu_r", f"removed {TOKEN}"), ("toolu_k", f"kept {TOKEN}")]
    )
    assert len((await index.search(TOKEN)).hits) == 3
    (archive.workdir / changed).write_text(f"CHANGED {TOKEN} and more")
    (archive.workdir / removed).unlink()  # as `ctxtui sessions --prune` removes files
    assert [hit.path for hit in (await index.search(TOKEN)).hits] == [kept]
    assert [hit.path for hit in (await index.search(TOKEN)).hits] == [kept]  # forgotten, not asked again
    assert index.failures == 0


async def test_a_failing_index_never_fails_or_loses_an_archive_write(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    (tmp_path / ".ctxtui").write_text("a file where the index's folder should be")
    index = RecallIndex(archive)
    try:
        (path,) = await archive.save_tool_results([("toolu_1", f"written {TOKEN}")])
        assert (tmp_path / path).read_text() == f"written {TOKEN}" and archive.is_own(path, "toolu_1")
        index.flush()
        assert index.failures >= 1 and index.problem is not None
        result = await index.search(TOKEN)
        assert not result.hits and any("could not" in note for note in result.notes)
        assert "\n" not in result.text()

        (tmp_path / ".ctxtui").unlink()  # fixed: the next search brings the index in line with the manifest
        assert [hit.path for hit in (await index.search(TOKEN)).hits] == [path]
    finally:
        index.close()

    def broken(written: list[Written]) -> None:
        raise RuntimeError("a watcher that fails")

    archive.watch(broken)
    transcript = await archive.write_transcript([{"role": "user", "content": "still written"}])
    assert archive.is_own(transcript) and archive.watch_failures == 1
    assert archive.watch_problem == "a watcher that fails"


async def test_nothing_archived_creates_nothing(tmp_path: Path) -> None:
    index = RecallIndex(Archive(tmp_path))
    try:
        result = await index.search("anything at all")
        assert not result.hits and result.text().startswith(
            'No match for "anything at all" in 0 archived files'
        )
    finally:
        index.close()
    assert os.listdir(tmp_path) == []


async def test_the_same_result_saved_twice_is_indexed_once(archive: Archive, index: RecallIndex) -> None:
    first = await archive.save_tool_results([("toolu_1", f"once {TOKEN}")])
    second = await archive.save_tool_results([("toolu_1", f"once {TOKEN}")])
    assert first == second
    assert [hit.path for hit in (await index.search(TOKEN)).hits] == first
    assert index.stats.files == 1
