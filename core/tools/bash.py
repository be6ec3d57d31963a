"""bash: one shell command in the workspace, bounded in time, output, spill size and reach.

A command is killed with everything it started (its process group and every process carrying its
run tag) on timeout, on cancel, or when background children keep its output open. Secrets are not
in its environment. Only cancellation propagates out of `run`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shutil
import signal
from pathlib import Path
from typing import Any

from core.tools.base import OutputSink, ToolError, ToolOutput, optional_seconds, require_str
from core.tools.bash_output import BoundedOutput, Spill
from core.tools.processes import kill_tree, new_run_tag, tool_environment
from core.tools.workspace import Workspace

# After the shell exits, how long to keep reading output that background children still write.
_DRAIN_GRACE_SECONDS = 0.5
_OUTPUT_POLL_SECONDS = 0.1
_READ_CHUNK_BYTES = 64 * 1024


class BashTool:
    """Runs commands with bash; asks the user first (the agent does the asking)."""

    name = "bash"
    needs_permission = True
    streams_output = True  # run() takes on_output: the output as it is printed

    def __init__(
        self,
        workspace: Workspace,
        *,
        timeout: float,
        max_timeout: float,
        output_limit: int,
        spill_dir: Path | None,
        spill_byte_limit: int,
    ) -> None:
        self.workspace = workspace
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.output_limit = output_limit
        self.spill_dir = spill_dir  # where the whole output of over-long commands is kept
        self.spill_byte_limit = spill_byte_limit
        self._shell: str | None = shutil.which("bash")

    def schema(self) -> dict[str, Any]:
        timeout = f"{self.timeout:g}"
        return {
            "name": self.name,
            "description": (
                "Run a shell command with bash in the workspace root and return its combined "
                "stdout and stderr, followed by a final line with the exit code. The user must "
                "approve every command; if a command is denied, do not retry it unchanged. Each "
                "call starts a fresh non-interactive shell (stdin is empty; `cd` and variables do "
                f"not persist; secrets such as API keys and tokens are not in its environment). Times "
                f"out after {timeout} seconds unless `timeout` is given (at most {self.max_timeout:g}); "
                "on timeout the command and every process it started are killed and the partial output "
                f"is returned. Output longer than {self.output_limit} characters keeps only its "
                "beginning and end here; the whole output (up to "
                f"{self.spill_byte_limit:,} bytes) is then saved to a file whose path is "
                "given, to be read with read_file (offset/limit). Background processes that still hold "
                "the output open when the command ends are stopped; redirect their output to a file to "
                "keep them running. Prefer read_file, write_file, edit_file and glob for reading and "
                "changing files."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command to run."},
                    "timeout": {
                        "type": "number",
                        "description": f"Seconds before the command is killed (default {timeout}, "
                        f"at most {self.max_timeout:g}).",
                    },
                },
                "required": ["command"],
            },
        }

    async def preview(self, tool_input: dict[str, Any]) -> str:
        return ""

    async def run(self, tool_input: dict[str, Any], on_output: OutputSink | None = None) -> ToolOutput:
        """Run the command; `on_output` gets its output as it is printed (decoded, invalid bytes replaced)."""
        command = require_str(tool_input, "command")
        if not command.strip():
            raise ToolError("Input field 'command' must not be empty.")
        notes: list[str] = []
        timeout = optional_seconds(tool_input, "timeout")
        if timeout is None:
            timeout = self.timeout
        elif timeout > self.max_timeout:
            notes.append(
                f"[the requested timeout of {timeout:g}s is above the {self.max_timeout:g}s maximum; "
                f"{self.max_timeout:g}s was used]"
            )
            timeout = self.max_timeout

        tag = new_run_tag()
        starting = asyncio.ensure_future(
            asyncio.create_subprocess_shell(
                command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=self.workspace.root,
                env=tool_environment(os.environ, tag),
                start_new_session=True,
                executable=self._shell,
            )
        )
        try:
            process = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # Cancelled while the shell was starting: it may already run, so let it start, then kill it.
            with contextlib.suppress(Exception):
                kill_tree((await starting).pid, tag)
            raise
        output = BoundedOutput(self.output_limit)
        spill = (
            Spill(self.spill_dir, self.workspace.root, self.spill_byte_limit)
            if self.spill_dir is not None
            else None
        )
        assert process.stdout is not None
        pump = asyncio.create_task(self._pump(process.stdout, output, spill, on_output))
        try:
            timed_out, stopped_background = await self._supervise(process, pump, timeout, tag)
        except BaseException:
            # Cancelled: nothing the command started may outlive the call.
            kill_tree(process.pid, tag)
            if spill is not None:
                await asyncio.shield(spill.finish())
            raise
        finally:
            if not pump.done():
                pump.cancel()
                await asyncio.wait({pump})
            if not pump.cancelled() and pump.exception() is not None:
                output.add(b"\n[reading the output failed]\n")

        text = output.text() or "(no output)"
        if not text.endswith("\n"):
            text += "\n"
        if spill is not None:
            saved = await spill.finish()
            if saved is not None:
                where = self.workspace.relative(saved)
                if spill.truncated:
                    text += (
                        f"[the output ({output.total_bytes:,} bytes) went past the {spill.byte_limit:,}-byte "
                        f"cap for saved output: its first {spill.written:,} bytes are saved at {where}]\n"
                    )
                else:
                    text += f"[the full output ({output.total_bytes:,} bytes) is saved at {where}]\n"
            elif spill.failed is not None:
                text += f"[the full output could not be saved: {spill.failed}]\n"
        text += "".join(note + "\n" for note in notes)
        if timed_out:
            return ToolOutput(f"{text}[timed out after {timeout:g}s; the command was killed]", is_error=True)
        if stopped_background:
            text += "[background processes still holding the output were stopped]\n"
        code = process.returncode
        if code is None:
            return ToolOutput(f"{text}[exit code unknown]", is_error=True)
        if code < 0:
            try:
                signal_name = signal.Signals(-code).name
            except ValueError:
                signal_name = f"signal {-code}"
            return ToolOutput(f"{text}[exit code {code}: killed by {signal_name}]", is_error=True)
        return ToolOutput(f"{text}[exit code {code}]", is_error=code != 0)

    @staticmethod
    async def _supervise(
        process: asyncio.subprocess.Process, pump: asyncio.Task[None], time_limit: float, tag: str
    ) -> tuple[bool, bool]:
        """Wait for the command and its output, killing all it started on timeout or when
        background children keep the output open after the shell exits.

        Returns (timed_out, stopped_background). Process.wait() only returns once the output pipe
        closes, so the exit code and the end of output are watched separately.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + time_limit
        while not pump.done() and process.returncode is None and loop.time() < deadline:
            await asyncio.wait({pump}, timeout=min(_OUTPUT_POLL_SECONDS, deadline - loop.time()))
        if pump.done():
            await _wait_for_exit(process, deadline - loop.time())
        elif process.returncode is not None:
            await asyncio.wait({pump}, timeout=_DRAIN_GRACE_SECONDS)
            if pump.done():
                return False, False
            kill_tree(process.pid, tag)
            await asyncio.wait({pump}, timeout=_DRAIN_GRACE_SECONDS)
            return False, True
        if process.returncode is not None:
            return False, False
        kill_tree(process.pid, tag)
        await asyncio.wait({pump}, timeout=_DRAIN_GRACE_SECONDS)
        if pump.done():
            await _wait_for_exit(process, 2.0)
        return True, False

    async def _pump(
        self,
        stream: asyncio.StreamReader,
        output: BoundedOutput,
        spill: Spill | None,
        on_output: OutputSink | None,
    ) -> None:
        spilling = False
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character split over two reads
        while chunk := await stream.read(_READ_CHUNK_BYTES):
            if on_output is not None and (text := decoder.decode(chunk)):
                on_output(text)
            if spill is not None:
                if spilling:
                    await spill.write(chunk)
                elif output.total_bytes + len(chunk) > self.output_limit:
                    # From here the text may be clipped: everything so far is still held, save it all.
                    spilling = True
                    await spill.write(output.held() + chunk)
            output.add(chunk)


async def _wait_for_exit(process: asyncio.subprocess.Process, seconds: float) -> None:
    """Wait up to `seconds` for the shell to exit. Only call this once the output pipe has closed:
    Process.wait() waits for the pipes too."""
    if process.returncode is not None:
        return
    waiter = asyncio.ensure_future(process.wait())
    try:
        await asyncio.wait({waiter}, timeout=max(seconds, 0.0))
    finally:
        if not waiter.done():
            waiter.cancel()
