"""The ToolBox: dispatch by name, which calls need consent and the change the consent dialog
previews, the compact tool, the schemas, and long output saved whole in the archive."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from core.tools import COMPACT_TOOL_OUTPUT, ToolBox, ToolOutput, Workspace
from tests.support.tools import make_tools


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
        "search_context",
        "note",
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


# -- consent ---------------------------------------------------------------------------------------


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


async def test_preview_of_a_new_file_is_a_diff_from_nothing(ws: Path) -> None:
    preview = await make_tools(ws).permission_preview("write_file", {"path": "new.py", "content": "a = 1\nb = 2\n"})
    assert preview.splitlines() == ["--- /dev/null", "+++ b/new.py", "@@ -0,0 +1,2 @@", "+a = 1", "+b = 2"]
    assert not (ws / "new.py").exists()


async def test_preview_of_a_replacement_and_an_edit_shows_the_change(ws: Path) -> None:
    (ws / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    box = make_tools(ws)
    written = await box.permission_preview("write_file", {"path": "app.py", "content": "a = 1\nb = 20\nc = 3\n"})
    edited = await box.permission_preview("edit_file", {"path": "app.py", "old_text": "b = 2\n", "new_text": "b = 20\n"})
    for preview in (written, edited):
        assert "--- a/app.py" in preview and "+++ b/app.py" in preview
        assert "-b = 2\n" in preview and "+b = 20\n" in preview and " a = 1\n" in preview
    assert (ws / "app.py").read_text() == "a = 1\nb = 2\nc = 3\n"
    (ws / ".git").mkdir()
    refused = await box.permission_preview("write_file", {"path": ".git/config", "content": "x"})
    assert "Refusing to write" in refused
    failing = await box.permission_preview("edit_file", {"path": "app.py", "old_text": "zzz", "new_text": "y"})
    assert "would fail" in failing and "not found" in failing
    assert await box.permission_preview("bash", {"command": "rm -rf /"}) == ""


async def test_preview_of_a_huge_change_is_cut_with_a_visible_line(ws: Path) -> None:
    content = "".join(f"line {n}\n" for n in range(5_000))
    preview = await make_tools(ws).permission_preview("write_file", {"path": "big.txt", "content": content})
    lines = preview.splitlines()
    assert len(lines) <= 401
    assert "more diff lines" in lines[-1] and "4,6" in lines[-1]


async def test_preview_of_one_giant_line_shows_its_start_clipped(ws: Path) -> None:
    preview = await make_tools(ws).permission_preview("write_file", {"path": "min.js", "content": "x" * 1_000_000})
    added = [line for line in preview.splitlines() if line.startswith("+x")]
    assert len(added) == 1 and "line clipped: 1,000," in added[0]
    assert len(preview) < 3_000
