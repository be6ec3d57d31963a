"""A disk that fills up during an archive batch: nothing the archive wrote becomes unrestorable.

On a real 64 KB tmpfs the manifest's last page has room for a few bytes of the batch's lines: the
write is short (part of a line lands, the rest is refused). Before, that short write went unchecked:
the batch said it saved every result, a resumed session (a fresh Archive) vouched for none of them,
and the next append was glued onto the torn line, so its first entry was lost too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.archive import MANIFEST_NAME, TOOL_RESULTS_DIR, TRANSCRIPTS_DIR, Archive, ArchiveError

PAGE = 4096


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount a tmpfs of a given size (`"64k"`) that really fills up, or skip where that is not permitted."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount(8) for a tmpfs that fills up")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        disk = tmp_path / f"disk{len(mounted)}"
        disk.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
                              capture_output=True, timeout=10)
        if done.returncode != 0:
            reason = done.stderr.decode(errors="replace").strip()
            pytest.skip(f"mount -t tmpfs is not permitted here: {reason}")
        mounted.append(disk)
        return disk

    try:
        yield mount
    finally:
        for disk in mounted:
            done = subprocess.run(["umount", str(disk)], capture_output=True, timeout=10)
            if done.returncode != 0:
                subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=10)
                reason = done.stderr.decode(errors="replace").strip()
                pytest.fail(f"the tmpfs could not be unmounted: {reason}")


def fill_leaving(disk: Path, pages: int) -> Path:
    """Fill the disk with one file, then free `pages` pages of it; returns the filler."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                if os.write(fd, b"x" * PAGE) < PAGE:
                    break
            except OSError:
                break
    finally:
        os.close(fd)
    os.truncate(filler, (filler.stat().st_size // PAGE - pages) * PAGE)
    return filler


def vouched(disk: Path, items: list[tuple[str, str]], paths: list[str]) -> list[bool]:
    """Whether a fresh Archive (a session resumed later) vouches for each saved path, for its id."""
    fresh = Archive(disk)
    return [fresh.is_own(path, tool_use_id) for (tool_use_id, _), path in zip(items, paths, strict=True)]


async def test_a_disk_full_during_a_batch_reports_only_what_is_vouched_for(
        tmpfs: Callable[[str], Path]) -> None:
    disk = tmpfs("64k")
    archive = Archive(disk)
    # A first result whose id is long enough to bring the manifest within a line of its page's end.
    first = [("toolu_first_" + "a" * 3_850, "the first result")]
    first_paths = await archive.save_tool_results(first)
    manifest = disk / TOOL_RESULTS_DIR / MANIFEST_NAME
    room = PAGE - manifest.stat().st_size
    assert 0 < room < 200  # the next lines start in this page and need another one
    filler = fill_leaving(disk, pages=6)  # room for the batch's six files, none for the manifest's next page

    batch = [(f"toolu_{index:02d}", f"result {index}\n" * 40) for index in range(6)]
    try:
        reported = await archive.save_tool_results(batch)
    except ArchiveError as error:
        assert "No space left" in str(error)
        reported = []
    # What the batch says it saved, a resumed session vouches for, and so does this one.
    saved = [item for item, path in zip(batch, reported, strict=False) if path]
    assert all(vouched(disk, saved, reported))
    assert all(archive.is_own(path, tool_use_id)
               for (tool_use_id, _), path in zip(saved, reported, strict=False))

    filler.unlink()  # the disk has room again
    later = [("toolu_later_a", "after the disk filled"), ("toolu_later_b", "and another")]
    later_paths = await archive.save_tool_results(later)
    again = await archive.save_tool_results(batch)  # the batch retried: its files as written before
    assert all(vouched(disk, later, later_paths))  # nothing glued onto the torn line
    assert all(vouched(disk, batch, again))
    assert all(vouched(disk, first, first_paths))  # the torn line cost itself only
    for (_, text), path in zip(batch, again, strict=True):
        assert (disk / path).read_text(encoding="utf-8") == text
    lines = manifest.read_bytes().split(b"\n")
    assert lines[-1] == b""  # the manifest ends with a whole line


async def test_a_disk_full_while_a_transcript_is_recorded_reports_no_unvouched_path(
        tmpfs: Callable[[str], Path]) -> None:
    disk = tmpfs("256k")
    archive = Archive(disk)
    manifest = disk / TRANSCRIPTS_DIR / MANIFEST_NAME
    earlier: list[str] = []
    for number in range(40):  # transcripts until the manifest's page has room for part of a line only
        earlier.append(await archive.write_transcript([{"role": "user", "content": f"request {number}"}]))
        if 0 < PAGE - manifest.stat().st_size % PAGE < 120:
            break
    else:
        pytest.fail("the manifest never came within a line of its page's end")
    filler = fill_leaving(disk, pages=1)  # room for the transcript's file, none for the manifest's next page
    messages = [{"role": "user", "content": "the history"}, {"role": "assistant", "content": "as it was"}]
    try:
        reported: str | None = await archive.write_transcript(messages)
    except ArchiveError as error:
        assert "No space left" in str(error)
        reported = None
    assert reported is None or Archive(disk).is_own(reported)
    filler.unlink()
    again = await archive.write_transcript(messages)
    fresh = Archive(disk)
    assert fresh.is_own(again) and all(fresh.is_own(path) for path in earlier)
    assert await fresh.read_transcript(again) == messages


def test_a_manifest_line_glued_onto_a_torn_one_still_vouches(tmp_path: Path) -> None:
    """Manifests written before the repair may hold an entry glued onto a torn line: it is read back."""
    folder = tmp_path / TOOL_RESULTS_DIR
    folder.mkdir(parents=True)
    (folder / "toolu_a.txt").write_text("alpha", encoding="utf-8")
    entry = {"name": "toolu_a.txt", "sha256": hashlib.sha256(b"alpha").hexdigest(), "tool_use_id": "toolu_a",
             "bytes": 5}
    torn = json.dumps({"name": "toolu_b.txt", "sha256": "0" * 64}, ensure_ascii=True)[:30]
    (folder / MANIFEST_NAME).write_text(torn + json.dumps(entry, ensure_ascii=True) + "\n", encoding="ascii")
    assert Archive(tmp_path).is_own(f"{TOOL_RESULTS_DIR}/toolu_a.txt", "toolu_a")
