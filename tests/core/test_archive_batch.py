"""The archive's batch path: every file whole, hashed and vouched for by one manifest append, and a
link planted at a result's name is never written through (the result goes under its digest name)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from core.archive import MANIFEST_NAME, TOOL_RESULTS_DIR, Archive


async def test_a_batch_is_written_whole_and_vouched_for(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    items = [(f"toolu_{index:03d}", f"result {index}\n" * (index + 1)) for index in range(40)]
    paths = await archive.save_tool_results(items)
    assert len(paths) == len(items)
    manifest = (tmp_path / TOOL_RESULTS_DIR / MANIFEST_NAME).read_text(encoding="ascii").splitlines()
    recorded = {entry["name"]: entry for entry in map(json.loads, manifest)}
    for (tool_use_id, text), path in zip(items, paths, strict=True):
        data = (tmp_path / path).read_bytes()
        assert data == text.encode()
        entry = recorded[Path(path).name]
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["tool_use_id"] == tool_use_id
        assert archive.is_own(path, tool_use_id)
    assert not [name for name in (tmp_path / TOOL_RESULTS_DIR).iterdir() if name.name.endswith(".tmp")]
    assert await archive.save_tool_results(items) == paths  # the same text again: the same files


async def test_a_link_at_the_name_is_not_followed(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    folder = tmp_path / TOOL_RESULTS_DIR
    folder.mkdir(parents=True)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    (folder / "toolu_x.txt").symlink_to(outside)  # dangling: following it would create a file outside
    [path] = await archive.save_tool_results([("toolu_x", "the result")])
    assert path != f"{TOOL_RESULTS_DIR}/toolu_x.txt" and (tmp_path / path).read_text() == "the result"
    assert not outside.exists()
    assert archive.is_own(path, "toolu_x")
