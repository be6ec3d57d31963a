"""bash with real subprocesses: the workspace as its directory, exit codes, no stdin, output capped
(head and tail kept, the whole saved in a capped spill file), timeouts (capped when the model
asks for more) and cancels that end the whole process group, setsid children included."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from core.tools import ToolOutput
from tests.support.tools import alive, eventually, live_group_members, make_tools, wait_for_pid_file


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


# -- output caps -----------------------------------------------------------------------------------


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


async def test_spill_file_is_capped_and_the_result_says_so(ws: Path) -> None:
    spill_dir = ws / ".task_outputs" / "tool-results"
    box = make_tools(ws, output_limit=1_000, spill_dir=spill_dir, spill_byte_limit=100_000)
    result = await box.run("bash", {"command": "yes | head -c 3000000"})
    saved = next(spill_dir.glob("bash-*.txt"))
    assert saved.stat().st_size == 100_000
    assert saved.read_bytes() == b"y\n" * 50_000
    assert "100,000-byte cap" in result.content and "3,000,000 bytes" in result.content
    assert len(result.content) < 1_500


# -- timeouts and cancels end the whole process group ----------------------------------------------


async def test_bash_timeout_kills_the_process_group_and_keeps_partial_output(ws: Path) -> None:
    tools = make_tools(ws)
    result = await tools.run(
        "bash", {"command": "echo $$ > shell.pid; echo started; sleep 30; echo never", "timeout": 1}
    )
    assert result.is_error
    assert result.content.startswith("started\n")
    assert "timed out after 1s" in result.content and "never" not in result.content
    pgid = await wait_for_pid_file(ws / "shell.pid")
    assert await eventually(lambda: not live_group_members(pgid))


async def test_bash_default_timeout_comes_from_the_toolbox(ws: Path) -> None:
    result = await make_tools(ws, bash_timeout=0.5).run("bash", {"command": "sleep 30; echo never"})
    assert result.is_error and "timed out after 0.5s" in result.content and "never" not in result.content


async def test_cancelling_bash_kills_the_whole_process_group(ws: Path) -> None:
    tools = make_tools(ws)
    # The subshell is a separate process: killing only the top shell would leave it to write the
    # marker once its sleep is over (the sleep is part of the test: the subshell must outlive the cancel).
    command = "echo $$ > shell.pid; (echo $BASHPID > subshell.pid; sleep 1; echo x > marker; sleep 30); echo done"
    task = asyncio.create_task(tools.run("bash", {"command": command}))
    pgid = await wait_for_pid_file(ws / "shell.pid")
    subshell = await wait_for_pid_file(ws / "subshell.pid")
    assert live_group_members(pgid), "the command should be running before the cancel"

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await eventually(lambda: not live_group_members(pgid), within=2)
    assert subshell not in live_group_members(pgid) and not alive(subshell)  # the marker's writer is gone
    assert not (ws / "marker").exists()


async def test_background_process_holding_the_output_does_not_hang_bash(ws: Path) -> None:
    tools = make_tools(ws)
    result = await tools.run(
        "bash", {"command": "echo $$ > shell.pid; (sleep 30; echo done > finished.txt) & echo launched"}
    )
    assert not (ws / "finished.txt").exists()  # the answer came back while the background job still ran
    assert result.content.startswith("launched\n") and "[exit code 0]" in result.content
    pgid = await wait_for_pid_file(ws / "shell.pid")
    assert await eventually(lambda: not live_group_members(pgid))
    assert not (ws / "finished.txt").exists()  # and that job was ended with the shell's process group


async def test_model_chosen_timeout_is_capped_with_a_note(ws: Path) -> None:
    box = make_tools(ws, max_bash_timeout=1)
    result = await box.run("bash", {"command": "sleep 30", "timeout": 1e300})
    assert result.is_error
    assert "above the 1s maximum" in result.content and "timed out after 1s" in result.content
    huge_int = await box.run("bash", {"command": "true", "timeout": 10**400})
    assert "maximum" in huge_int.content and "[exit code 0]" in huge_int.content


async def test_setsid_child_does_not_outlive_the_timeout(ws: Path) -> None:
    command = (
        "setsid sh -c 'echo $$ > child.pid; exec sleep 60' > /dev/null 2>&1 < /dev/null & "
        "while [ ! -s child.pid ]; do sleep 0.05; done; sleep 30"
    )
    result = await make_tools(ws).run("bash", {"command": command, "timeout": 2})
    assert "timed out" in result.content
    pid = int((ws / "child.pid").read_text())
    assert await eventually(lambda: not alive(pid))


async def test_setsid_child_does_not_outlive_a_cancel(ws: Path) -> None:
    command = "setsid sh -c 'echo $$ > child.pid; exec sleep 60' > /dev/null 2>&1 < /dev/null & sleep 30"
    task = asyncio.create_task(make_tools(ws).run("bash", {"command": command}))
    assert await eventually(lambda: (ws / "child.pid").exists() and (ws / "child.pid").read_text().strip() != "")
    pid = int((ws / "child.pid").read_text())
    assert alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await eventually(lambda: not alive(pid))
