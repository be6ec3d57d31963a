"""read_file, write_file and edit_file: round trips, paging and caps, edits by exact text, and any
bytes: binary files are named, not dumped; UTF-16/32 and cp1252 files are edited in their own
encoding; undecodable file names are escaped visibly; every tool's output is valid UTF-8."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tools import ToolOutput
from tests.support.tools import make_tools

# -- read_file and write_file ----------------------------------------------------------------------


async def test_write_then_read_round_trips_unicode(ws: Path) -> None:
    tools = make_tools(ws)
    content = "héllo wörld — 你好 🎉🐍\nsecond line\n"
    written = await tools.run("write_file", {"path": "deep/nested/dir/note.txt", "content": content})
    assert written == ToolOutput(f"Wrote {len(content)} chars to deep/nested/dir/note.txt")
    assert (ws / "deep/nested/dir/note.txt").read_bytes() == content.encode("utf-8")

    read = await tools.run("read_file", {"path": "deep/nested/dir/note.txt"})
    assert read == ToolOutput(content)
    assert os.listdir(ws / "deep/nested/dir") == ["note.txt"]  # no temporary files left behind


async def test_write_replaces_existing_file_and_keeps_its_mode(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("old\n")
    script.chmod(0o755)
    tools = make_tools(ws)
    result = await tools.run("write_file", {"path": "run.sh", "content": "#!/bin/sh\necho new\n"})
    assert not result.is_error
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


async def test_write_to_a_directory_is_an_error(ws: Path) -> None:
    (ws / "sub").mkdir()
    result = await make_tools(ws).run("write_file", {"path": "sub", "content": "x"})
    assert result.is_error and "directory" in result.content


async def test_read_non_utf8_file_is_decoded_whole_and_says_which_encoding(ws: Path) -> None:
    # No mojibake without a notice: the bytes are kept (read as cp1252), and the result says so.
    (ws / "binary.dat").write_bytes(b"ok \xff\xfe\x80 end\n")
    result = await make_tools(ws).run("read_file", {"path": "binary.dat"})
    assert not result.is_error
    assert result.content.startswith("ok ")
    body, note = result.content.rsplit("\n", 1)
    assert body == "ok ÿþ€ end" and "cp1252" in note


async def test_read_file_truncates_and_pages_with_offset(ws: Path) -> None:
    (ws / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    tools = make_tools(ws, read_line_limit=3)

    first = await tools.run("read_file", {"path": "ten.txt"})
    assert not first.is_error
    text, note = first.content.rsplit("\n", 1)
    assert text == "line 1\nline 2\nline 3"
    assert "7 more lines" in note and "offset=4" in note

    middle = await tools.run("read_file", {"path": "ten.txt", "offset": 4, "limit": 2})
    assert middle.content.startswith("line 4\nline 5\n")
    assert "5 more lines" in middle.content and "offset=6" in middle.content

    last = await tools.run("read_file", {"path": "ten.txt", "offset": 9})
    assert last == ToolOutput("line 9\nline 10\n")

    past = await tools.run("read_file", {"path": "ten.txt", "offset": 11})
    assert past.is_error and "past the end" in past.content


async def test_read_file_caps_a_giant_line_by_characters(ws: Path) -> None:
    (ws / "min.js").write_text("x" * 5000 + "\nsecond\n")
    result = await make_tools(ws, output_limit=1000).run("read_file", {"path": "min.js"})
    assert result.content.startswith("x" * 1000 + "\n[line 1 is 5001 chars long")
    assert "offset=2" in result.content
    assert len(result.content) < 1300


@pytest.mark.parametrize(
    ("setup", "tool_input", "expected"),
    [
        ("dir", {"path": "folder"}, "is a directory"),
        ("big", {"path": "big.txt"}, "limit"),
        (None, {"path": "missing.txt"}, "File not found: missing.txt"),
        (None, {}, "Missing required input field 'path'"),
        (None, {"path": 3}, "must be a string"),
        ("big", {"path": "big.txt", "offset": 0}, "positive integer"),
        ("big", {"path": "big.txt", "limit": "ten"}, "positive integer"),
    ],
)
async def test_read_file_errors(
    ws: Path, setup: str | None, tool_input: dict[str, Any], expected: str
) -> None:
    if setup == "dir":
        (ws / "folder").mkdir()
    elif setup == "big":
        (ws / "big.txt").write_text("a" * 100)
    result = await make_tools(ws, read_byte_limit=50).run("read_file", tool_input)
    assert result.is_error
    assert expected in result.content
    assert "\n" not in result.content


# -- edit_file -------------------------------------------------------------------------------------


async def test_edit_file_replaces_a_unique_occurrence(ws: Path) -> None:
    (ws / "app.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    result = await make_tools(ws).run(
        "edit_file", {"path": "app.py", "old_text": "return 2", "new_text": "return 'två'"}
    )
    assert not result.is_error and "app.py" in result.content
    assert (ws / "app.py").read_text() == "def f():\n    return 1\n\ndef g():\n    return 'två'\n"


async def test_edit_file_absent_text_is_an_error(ws: Path) -> None:
    (ws / "app.py").write_text("a = 1\n")
    result = await make_tools(ws).run("edit_file", {"path": "app.py", "old_text": "b = 2", "new_text": "c"})
    assert result == ToolOutput("old_text not found in app.py", is_error=True)
    assert (ws / "app.py").read_text() == "a = 1\n"


async def test_edit_file_ambiguous_text_is_an_error_and_changes_nothing(ws: Path) -> None:
    (ws / "app.py").write_text("x = 1\nx = 1\nx = 1\n")
    result = await make_tools(ws).run("edit_file", {"path": "app.py", "old_text": "x = 1", "new_text": "y"})
    assert result.is_error
    assert "occurs 3 times" in result.content and "context" in result.content
    assert (ws / "app.py").read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_file_keeps_bytes_that_are_not_utf8(ws: Path) -> None:
    (ws / "latin1.txt").write_bytes(b"caf\xe9 = old\n")
    result = await make_tools(ws).run(
        "edit_file", {"path": "latin1.txt", "old_text": "old", "new_text": "new"}
    )
    assert not result.is_error
    assert (ws / "latin1.txt").read_bytes() == b"caf\xe9 = new\n"


async def test_edit_file_rejects_empty_old_text(ws: Path) -> None:
    (ws / "a.txt").write_text("abc")
    result = await make_tools(ws).run("edit_file", {"path": "a.txt", "old_text": "", "new_text": "x"})
    assert result.is_error and "old_text" in result.content
    assert (ws / "a.txt").read_text() == "abc"


# -- file names and bytes --------------------------------------------------------------------------


def raw_path(root: Path, name: bytes) -> Path:
    return root / os.fsdecode(name)


async def test_undecodable_file_names_are_escaped_visibly(ws: Path) -> None:
    os.close(os.open(os.fsencode(ws) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    (ws / "plain.txt").write_text("")
    box = make_tools(ws)
    listed = await box.run("glob", {"pattern": "*.txt"})
    listed.content.encode("utf-8")
    lines = listed.content.splitlines()
    assert lines[0] == "caf\\xe9.txt" and lines[1] == "plain.txt"
    assert "\\xNN" in lines[-1]
    raw_path(ws, b"caf\xe9.txt").write_bytes(b"by its shown name\n")
    assert await box.run("read_file", {"path": "caf\\xe9.txt"}) == ToolOutput("by its shown name\n")
    edited = await box.run("edit_file", {"path": "caf\\xe9.txt", "old_text": "shown", "new_text": "escaped"})
    assert not edited.is_error and "caf\\xe9.txt" in edited.content
    assert raw_path(ws, b"caf\xe9.txt").read_bytes() == b"by its escaped name\n"
    shown = await box.run("bash", {"command": "ls"})
    shown.content.encode("utf-8")
    assert "caf" in shown.content


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 60, "PNG image"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 100, "JPEG image"),
        (b"GIF89a" + b"\x00" * 10, "GIF image"),
        (b"%PDF-1.7\n%\xe2\xe3\n" + b"\x00" * 10, "PDF document"),
        (b"PK\x03\x04" + b"\x00" * 30, "ZIP archive"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 10, "gzip archive"),
        (b"\x7fELF\x02\x01\x01" + b"\x00" * 50, "ELF executable"),
        (b"some\x00binary\x00data", None),
    ],
    ids=["png", "jpeg", "gif", "pdf", "zip", "gzip", "elf", "nul-bytes"],
)
async def test_binary_files_are_named_not_dumped(ws: Path, data: bytes, kind: str | None) -> None:
    (ws / "blob").write_bytes(data)
    box = make_tools(ws)
    result = await box.run("read_file", {"path": "blob"})
    assert not result.is_error
    assert f"binary file, {len(data):,} bytes" in result.content
    if kind:
        assert kind in result.content
    assert len(result.content) < 200
    edit = await box.run("edit_file", {"path": "blob", "old_text": "some", "new_text": "x"})
    assert edit.is_error and "binary file" in edit.content
    assert (ws / "blob").read_bytes() == data


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
async def test_utf16_and_utf32_files_are_decoded_and_edited_in_their_encoding(ws: Path, codec: str) -> None:
    text = "naïve café ✓\nline two\n"
    bom = {"utf-16": b"", "utf-16-be": b"\xfe\xff", "utf-32": b""}[codec]
    (ws / "wide.txt").write_bytes(bom + text.encode(codec))
    box = make_tools(ws)
    read = await box.run("read_file", {"path": "wide.txt"})
    assert read.content.startswith(text) and "UTF-" in read.content.splitlines()[-1]
    edited = await box.run("edit_file", {"path": "wide.txt", "old_text": "line two", "new_text": "zwei ✓"})
    assert not edited.is_error, edited
    assert (ws / "wide.txt").read_bytes() == bom + text.replace("line two", "zwei ✓").encode(codec)


async def test_latin1_file_is_edited_by_its_characters_and_keeps_its_bytes(ws: Path) -> None:
    (ws / "legacy.txt").write_bytes("café = 1\nna\xefve\n".encode("cp1252"))
    box = make_tools(ws)
    read = await box.run("read_file", {"path": "legacy.txt"})
    assert read.content.startswith("café = 1\nnaïve\n") and "cp1252" in read.content
    edited = await box.run("edit_file", {"path": "legacy.txt", "old_text": "café = 1", "new_text": "café = 2"})
    assert not edited.is_error and "cp1252" in edited.content
    assert (ws / "legacy.txt").read_bytes() == "café = 2\nnaïve\n".encode("cp1252")
    refused = await box.run("edit_file", {"path": "legacy.txt", "old_text": "café = 2", "new_text": "咖啡"})
    assert refused.is_error and "encoding" in refused.content
    assert (ws / "legacy.txt").read_bytes() == "café = 2\nnaïve\n".encode("cp1252")


_NAME_BYTES = st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))


@settings(max_examples=60, deadline=None)
@given(name=_NAME_BYTES, data=st.binary(max_size=300))
def test_every_tool_output_is_valid_utf8(tmp_path_factory: pytest.TempPathFactory, name: bytes, data: bytes) -> None:
    root = tmp_path_factory.mktemp("names")
    path = os.fsencode(root) + b"/" + name
    with open(path, "wb") as handle:
        handle.write(data)
    shown_name = os.fsdecode(name)  # how a model would echo the name back (with surrogates)
    box = make_tools(root)

    async def all_outputs() -> list[ToolOutput]:
        return [
            await box.run("glob", {"pattern": "*"}),
            await box.run("glob", {"pattern": "**"}),
            await box.run("read_file", {"path": shown_name}),
            await box.run("edit_file", {"path": shown_name, "old_text": "\udcff", "new_text": "x"}),
            await box.run("write_file", {"path": shown_name + "\udcfe", "content": "x\udcff"}),
            await box.run("bash", {"command": "ls; cat -- *"}),
        ]

    for output in asyncio.run(all_outputs()):
        output.content.encode("utf-8")
