"""Tests for core.tools: workspace confinement, file tools, glob, and bash with real subprocesses."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tools import (
    COMPACT_TOOL_OUTPUT,
    GLOB_MAX_RESULTS,
    ToolBox,
    ToolOutput,
    Workspace,
    WorkspaceError,
)

# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("TOP SECRET\n")
    return directory


def make_tools(root: Path, **kwargs: Any) -> ToolBox:
    return ToolBox(Workspace(root), **kwargs)


def live_group_members(pgid: int) -> list[int]:
    """Pids of processes in group `pgid` that are still running (zombies count as dead)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            data = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = data[data.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            members.append(int(entry))
    return members


async def wait_until(predicate: Callable[[], bool], within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


def read_pid(path: Path) -> int | None:
    """The pid a command wrote to `path`, or None while it is missing or half written."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return int(text) if text.endswith("\n") and text.strip().isdigit() else None


async def wait_for_pid_file(path: Path) -> int:
    assert await wait_until(lambda: read_pid(path) is not None), "pid file never written"
    pid = read_pid(path)
    assert pid is not None
    return pid


# -- workspace confinement -------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x", "..", "", "   ", "a\x00b"])
def test_resolve_refuses_escapes_and_bad_paths(ws: Path, path: str) -> None:
    with pytest.raises(WorkspaceError) as info:
        Workspace(ws).resolve(path)
    assert "\n" not in str(info.value) and str(info.value)


def test_resolve_refuses_dotdot_that_leaves_and_re_enters_the_root(ws: Path) -> None:
    with pytest.raises(WorkspaceError):
        Workspace(ws).resolve(f"../{ws.name}/file.txt")


def test_resolve_accepts_paths_that_stay_inside(ws: Path) -> None:
    workspace = Workspace(ws)
    assert workspace.resolve("a/../b.txt") == ws.resolve() / "b.txt"
    assert workspace.resolve("./sub/file.txt") == ws.resolve() / "sub" / "file.txt"
    assert workspace.relative(workspace.resolve("sub/deeper/f.py")) == "sub/deeper/f.py"
    assert workspace.relative(workspace.root) == "."


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x"])
async def test_file_tools_refuse_escapes(ws: Path, path: str) -> None:
    tools = make_tools(ws)
    for name, tool_input in [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("edit_file", {"path": path, "old_text": "root", "new_text": "pwned"}),
    ]:
        result = await tools.run(name, tool_input)
        assert result.is_error, (name, result)
        assert "outside the workspace" in result.content or "Absolute path" in result.content
    assert not (ws.parent / "x").exists()


async def test_symlink_to_outside_file_is_refused_for_read_and_write(ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    tools = make_tools(ws)

    read = await tools.run("read_file", {"path": "link.txt"})
    assert read.is_error and "symlink" in read.content
    assert "TOP SECRET" not in read.content

    write = await tools.run("write_file", {"path": "link.txt", "content": "overwritten"})
    assert write.is_error and "symlink" in write.content

    edit = await tools.run("edit_file", {"path": "link.txt", "old_text": "TOP", "new_text": "NO"})
    assert edit.is_error
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert (ws / "link.txt").is_symlink()


async def test_symlinked_directory_and_dangling_link_to_outside_are_refused(ws: Path, outside: Path) -> None:
    (ws / "linkdir").symlink_to(outside)
    (ws / "dangling").symlink_to(outside / "not-yet-there.txt")
    tools = make_tools(ws)

    for path in ["linkdir/new.txt", "linkdir/secret.txt", "linkdir/../outside/x.txt", "dangling"]:
        result = await tools.run("write_file", {"path": path, "content": "x"})
        assert result.is_error, path
    assert os.listdir(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_symlink_inside_the_workspace_is_allowed(ws: Path) -> None:
    (ws / "real.txt").write_text("inside\n")
    (ws / "alias.txt").symlink_to("real.txt")
    tools = make_tools(ws)
    result = await tools.run("read_file", {"path": "alias.txt"})
    assert result == ToolOutput("inside\n")


segment = st.sampled_from(["..", ".", "a", "b", "up", "out", "loop", ""])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(segment, min_size=1, max_size=6))
def test_resolve_never_returns_a_path_outside_the_root(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    base = tmp_path_factory.getbasetemp() / "prop"
    root = base / "ws"
    if not root.exists():
        (root / "a" / "b").mkdir(parents=True)
        (base / "elsewhere").mkdir()
        (root / "up").symlink_to("..")
        (root / "a" / "out").symlink_to(base / "elsewhere")
        (root / "loop").symlink_to("loop")
    workspace = Workspace(root)
    try:
        resolved = workspace.resolve("/".join(parts))
    except WorkspaceError:
        return
    assert resolved.is_relative_to(workspace.root)


# -- read_file / write_file ------------------------------------------------------------------


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
    # Issue 8 item 10: no mojibake without a notice. The bytes are kept (as cp1252), and said so.
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


# -- edit_file -------------------------------------------------------------------------------


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


# -- glob ------------------------------------------------------------------------------------


def populate(ws: Path) -> None:
    for relative in [
        "main.py",
        "README.md",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/data.json",
        "tests/test_core.py",
        ".git/hooks/pre-commit.py",
        ".venv/lib/site.py",
        "node_modules/x/index.py",
        "src/__pycache__/core.cpython-311.py",
        ".ctxtui/state.py",
    ]:
        path = ws / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


async def test_glob_recursive_matches_are_sorted_relative_and_skip_tool_dirs(ws: Path) -> None:
    populate(ws)
    result = await make_tools(ws).run("glob", {"pattern": "**/*.py"})
    assert result == ToolOutput("main.py\nsrc/pkg/__init__.py\nsrc/pkg/core.py\ntests/test_core.py")


async def test_glob_single_level_and_directories(ws: Path) -> None:
    populate(ws)
    tools = make_tools(ws)
    assert (await tools.run("glob", {"pattern": "*.py"})).content == "main.py"
    assert (await tools.run("glob", {"pattern": "src/pkg/*.json"})).content == "src/pkg/data.json"
    assert (await tools.run("glob", {"pattern": "*"})).content == "README.md\nmain.py\nsrc/\ntests/"
    assert (await tools.run("glob", {"pattern": "src/**"})).content.splitlines() == [
        "src/pkg/",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/data.json",
    ]


async def test_glob_no_match_and_refusals(ws: Path) -> None:
    populate(ws)
    tools = make_tools(ws)
    assert await tools.run("glob", {"pattern": "*.rs"}) == ToolOutput("No files match *.rs")
    for pattern in ["../*", "/etc/*", "src/../../*", ""]:
        result = await tools.run("glob", {"pattern": pattern})
        assert result.is_error, pattern


async def test_glob_does_not_follow_symlinked_directories_outside(ws: Path, outside: Path) -> None:
    (ws / "linkdir").symlink_to(outside)
    tools = make_tools(ws)
    result = await tools.run("glob", {"pattern": "**/*.txt"})
    assert result == ToolOutput("No files match **/*.txt")
    refused = await tools.run("glob", {"pattern": "linkdir/*.txt"})
    assert refused.is_error and "symlink" in refused.content


async def test_glob_caps_the_number_of_results(ws: Path) -> None:
    for n in range(GLOB_MAX_RESULTS + 7):
        (ws / f"f{n:04d}.txt").write_text("")
    result = await make_tools(ws).run("glob", {"pattern": "*.txt"})
    lines = result.content.splitlines()
    assert lines[0] == "f0000.txt"
    assert len(lines) == GLOB_MAX_RESULTS + 1
    assert "7 more" in lines[-1]


# -- bash ------------------------------------------------------------------------------------


def test_bash_write_and_edit_need_permission_and_the_rest_do_not(ws: Path) -> None:
    tools = make_tools(ws)
    assert tools.needs_permission("bash", {"command": "touch ran"})
    assert tools.needs_permission("write_file", {"path": "a.txt", "content": "x"})
    assert tools.needs_permission("edit_file", {"path": "a.txt", "old_text": "x", "new_text": "y"})
    for name in ["read_file", "glob", "compact", "rm_rf"]:
        assert not tools.needs_permission(name, {}), name


async def test_run_never_asks_the_toolbox_only_runs_what_the_agent_allowed(ws: Path) -> None:
    """Consent is the agent's job: run executes a call it is given."""
    result = await make_tools(ws).run("bash", {"command": "touch ran"})
    assert result == ToolOutput("(no output)\n[exit code 0]")
    assert (ws / "ran").exists()


async def test_bash_runs_in_the_workspace_and_reports_the_exit_code(ws: Path) -> None:
    tools = make_tools(ws)
    ok = await tools.run("bash", {"command": "pwd; echo oops >&2"})
    assert ok == ToolOutput(f"{tools.workspace.root}\noops\n[exit code 0]")

    failed = await tools.run("bash", {"command": "echo partial; exit 3"})
    assert failed == ToolOutput("partial\n[exit code 3]", is_error=True)

    silent = await tools.run("bash", {"command": "true"})
    assert silent == ToolOutput("(no output)\n[exit code 0]")


async def test_bash_reads_no_stdin_and_replaces_invalid_utf8(ws: Path) -> None:
    result = await make_tools(ws).run("bash", {"command": "cat; printf 'a\\377b'"})
    assert result == ToolOutput("a\ufffdb\n[exit code 0]")


async def test_bash_timeout_kills_the_process_group_and_keeps_partial_output(ws: Path) -> None:
    tools = make_tools(ws)
    result = await tools.run(
        "bash", {"command": "echo $$ > shell.pid; echo started; sleep 30; echo never", "timeout": 1}
    )
    assert result.is_error
    assert result.content.startswith("started\n")
    assert "timed out after 1s" in result.content and "never" not in result.content
    pgid = await wait_for_pid_file(ws / "shell.pid")
    assert await wait_until(lambda: not live_group_members(pgid))


async def test_bash_default_timeout_comes_from_the_toolbox(ws: Path) -> None:
    result = await make_tools(ws, bash_timeout=0.5).run("bash", {"command": "sleep 30; echo never"})
    assert result.is_error and "timed out after 0.5s" in result.content and "never" not in result.content


async def test_cancelling_bash_kills_the_whole_process_group(ws: Path) -> None:
    tools = make_tools(ws)
    task = asyncio.create_task(
        # The subshell is a separate process: killing only the top shell would leave it to write the marker.
        tools.run("bash", {"command": "echo $$ > shell.pid; (sleep 1; echo x > marker; sleep 30); echo done"})
    )
    pgid = await wait_for_pid_file(ws / "shell.pid")
    assert live_group_members(pgid), "the command should be running before the cancel"

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_until(lambda: not live_group_members(pgid), within=2)
    await asyncio.sleep(1.3)  # past the point where the command would have written the marker
    assert not (ws / "marker").exists()


async def test_background_process_holding_the_output_does_not_hang_bash(ws: Path) -> None:
    tools = make_tools(ws)
    result = await tools.run(
        "bash", {"command": "echo $$ > shell.pid; (sleep 30; echo done > finished.txt) & echo launched"}
    )
    assert not (ws / "finished.txt").exists()  # the answer came back while the background job still ran
    assert result.content.startswith("launched\n") and "[exit code 0]" in result.content
    pgid = await wait_for_pid_file(ws / "shell.pid")
    assert await wait_until(lambda: not live_group_members(pgid))
    assert not (ws / "finished.txt").exists()  # and that job was ended with the shell's process group


async def test_bash_output_cap_keeps_head_and_tail(ws: Path) -> None:
    tools = make_tools(ws, output_limit=1000)
    command = "printf HEAD; head -c 6000 /dev/zero | tr '\\0' x; printf TAIL"
    result = await tools.run("bash", {"command": command})
    body, status = result.content.rsplit("\n", 1)
    assert status == "[exit code 0]" and not result.is_error
    assert body.startswith("HEAD" + "x" * 496 + "\n[... 5008 chars omitted ...]\n")
    assert body.endswith("x" * 496 + "TAIL")
    assert len(body) < 1100


async def test_bash_output_cap_counts_chars_dropped_while_streaming(ws: Path) -> None:
    # 2 MB of two-byte characters far exceeds what the collector keeps for a 100-char limit.
    tools = make_tools(ws, output_limit=100)
    command = "printf START; yes é | head -n 700000 | tr -d '\\n'; printf END"
    result = await tools.run("bash", {"command": command})
    body = result.content.rsplit("\n", 1)[0]
    assert body.startswith("START" + "é" * 45 + "\n")
    assert body.endswith("\n" + "é" * 47 + "END")
    total = len("START") + 700_000 + len("END")
    assert f"[... {total - 100} chars omitted ...]" in body


@pytest.mark.parametrize(
    "tool_input",
    [
        {},
        {"command": 5},
        {"command": "   "},
        {"command": "true", "timeout": -1},
        {"command": "true", "timeout": "x"},
    ],
)
async def test_bash_bad_input_is_an_error(ws: Path, tool_input: dict[str, Any]) -> None:
    result = await make_tools(ws).run("bash", tool_input)
    assert result.is_error and "\n" not in result.content


# -- dispatch, compact, schemas --------------------------------------------------------------


async def test_unknown_tool_and_non_dict_input_are_errors(ws: Path) -> None:
    tools = make_tools(ws)
    unknown = await tools.run("rm_rf", {"path": "."})
    assert unknown.is_error and "rm_rf" in unknown.content
    weird = await tools.run("read_file", ["not", "a", "dict"])  # type: ignore[arg-type]
    assert weird.is_error


async def test_compact_returns_the_marker_output(ws: Path) -> None:
    tools = make_tools(ws)
    assert await tools.run("compact", {}) == ToolOutput(COMPACT_TOOL_OUTPUT)
    assert await tools.run("compact", {"focus": "the parser bug"}) == ToolOutput(COMPACT_TOOL_OUTPUT)
    assert (await tools.run("compact", {"focus": 7})).is_error


def test_schemas_describe_every_tool(ws: Path) -> None:
    tools = make_tools(ws, bash_timeout=42, read_line_limit=123)
    schemas = tools.schemas
    assert [schema["name"] for schema in schemas] == [
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "compact",
    ]
    for schema in schemas:
        assert set(schema) == {"name", "description", "input_schema"}
        assert len(schema["description"]) > 80
        assert schema["input_schema"]["type"] == "object"
        for required in schema["input_schema"].get("required", []):
            assert required in schema["input_schema"]["properties"]
    by_name = {schema["name"]: schema for schema in schemas}
    assert "42" in by_name["bash"]["description"]
    assert "123" in by_name["read_file"]["description"]
    schemas[0]["name"] = "mutated"
    assert tools.schemas[0]["name"] == "bash"


async def test_long_bash_output_is_saved_whole_in_the_archive(tmp_path: Path) -> None:
    """Nothing is lost: output clipped for the context is kept in full under the tool-results dir."""
    spill_dir = tmp_path / ".task_outputs" / "tool-results"

    box = ToolBox(Workspace(tmp_path), output_limit=1_000, spill_dir=spill_dir)
    script = "import sys\nfor i in range(5000): sys.stdout.write(f'line {i:05d} é\\n')\n"
    (tmp_path / "emit.py").write_text(script, encoding="utf-8")
    result = await box.run("bash", {"command": f"{sys.executable} emit.py"})
    assert "chars omitted" in result.content
    match = re.search(r"full output \(([\d,]+) bytes\) is saved at (\S+)\]", result.content)
    assert match is not None, result.content
    saved = tmp_path / match.group(2)
    expected = "".join(f"line {i:05d} é\n" for i in range(5000))
    assert saved.parent == spill_dir
    assert saved.read_text(encoding="utf-8") == expected
    assert int(match.group(1).replace(",", "")) == len(expected.encode("utf-8"))
    assert not [path for path in spill_dir.iterdir() if path.name.endswith(".tmp")]

    short = await box.run("bash", {"command": "echo short"})
    assert "saved at" not in short.content
    assert len(list(spill_dir.iterdir())) == 1
