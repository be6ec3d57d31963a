"""`ctxtui --demo`: a scripted offline session that walks through every compaction step.

It writes a small fake project into a folder of its own (never over a file of the user's: a given
`--workdir` that is not empty gets a fresh subfolder, see `choose_workdir`) and returns the commands
to type. With the
default settings the session crosses 50,000 chars and fires, in this order:
tool_result_budget and fit_tool_results (one huge batch), micro_compact (older reads over the
limit), snip_compact (50 messages), compact_history (a pasted log that only a summary can
shrink), and a manual `compact` with a focus at the end. `play` types the commands into the running
app as a user would.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

from tui.format import plural
from tui.widgets.chat_pane import ChatPane

_MODULES = 12


def _module_text(index: int, chars: int) -> str:
    lines = [f'"""Module {index:02d} of the demo project: a pretend service layer."""', ""]
    number = 0
    size = sum(len(line) + 1 for line in lines)
    while size < chars:
        number += 1
        block = [
            f"def handler_{index:02d}_{number:03d}(request: dict) -> dict:",
            f'    """Handle request kind {number} for module {index}."""',
            f"    return {{'status': 'ok', 'module': {index}, 'handler': {number}}}",
            "",
        ]
        lines.extend(block)
        size += sum(len(line) + 1 for line in block)
    return "\n".join(lines)[:chars] + "\n"


def _log_text(name: str, chars: int) -> str:
    lines: list[str] = []
    number = 0
    size = 0
    while size < chars:
        number += 1
        level = ("INFO", "DEBUG", "WARN", "INFO", "ERROR")[number % 5]
        line = (
            f"2026-11-30T12:{number // 60 % 60:02d}:{number % 60:02d}Z {level} {name} event={number} "
            f"latency_ms={(number * 37) % 900} user=u{number % 97:02d}"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars] + "\n"


DEMO_PREFIX = "ctxtui-demo-"


def choose_workdir(requested: Path | None) -> tuple[Path, str | None]:
    """The folder the demo writes its project into, and a line saying so when it is not the one asked for.

    No `--workdir`: a fresh temporary folder. A missing or empty `--workdir`: that folder. One that
    holds anything: a fresh subfolder inside it, so that no file of the user's is ever changed.
    Raises OSError when the folder cannot be made, NotADirectoryError when `requested` is a file.
    """
    if requested is None:
        return Path(tempfile.mkdtemp(prefix=DEMO_PREFIX)), None
    if requested.exists() and not requested.is_dir():
        raise NotADirectoryError(f"--workdir {requested} is not a directory")
    requested.mkdir(parents=True, exist_ok=True)
    with os.scandir(requested) as entries:
        empty = next(entries, None) is None
    if empty:
        return requested, None
    fresh = Path(tempfile.mkdtemp(prefix=DEMO_PREFIX, dir=requested))
    return fresh, (
        f"--workdir {requested} is not empty, so the demo runs in a new folder inside it, {fresh} "
        "(no file of yours is changed)"
    )


def _write_new(path: Path, text: str) -> None:
    """Create `path` with `text`; an existing file (or a link in its place) is never written (FileExistsError)."""
    with path.open("x", encoding="utf-8") as handle:
        handle.write(text)


def _write_files(workdir: Path) -> None:
    (workdir / "logs").mkdir(parents=True, exist_ok=True)
    (workdir / "src").mkdir(parents=True, exist_ok=True)
    _write_new(workdir / "logs" / "build.log", _log_text("build", 150_000))
    _write_new(workdir / "logs" / "test.log", _log_text("test", 100_000))
    for index in range(1, _MODULES + 1):
        _write_new(workdir / "src" / f"module_{index:02d}.py", _module_text(index, 6_000))
    _write_new(
        workdir / "README.md",
        "# Demo project\n\nA pretend service used by `ctxtui --demo` to fill the context.\n",
    )


async def build_demo_workspace(workdir: Path) -> None:
    """Write the demo project into `workdir` (off the event loop)."""
    await asyncio.to_thread(_write_files, workdir)


def _incident_note() -> str:
    """A pasted incident log: user text (and the write_file call that saves it) is not a tool result,
    so no cheap step can shrink it and the pipeline has to summarise."""
    return "write notes/incident.md\n# Incident 4711: pasted log\n\n" + _log_text("incident", 21_000)


DEMO_COMMANDS: list[str] = [
    "help",
    "glob **/*",
    # One batch of 150,000 + 100,000 chars: step 1 persists the larger (2,000-char preview); the
    # smaller alone still overflows the context, so fit_tool_results persists it (1,000-char preview).
    "read logs/build.log logs/test.log",
    # Twelve 6,000-char reads: the context crosses 50,000 and micro_compact replaces older reads;
    # at 50 messages snip_compact archives the middle of the conversation.
    *[f"read src/module_{index:02d}.py" for index in range(1, _MODULES + 1)],
    # A pasted 21,000-char log saved to a file: the paste and the write_file call cannot be shrunk
    # by the cheap steps, so compact_history summarises the conversation.
    _incident_note(),
    "read README.md",
    "compact the incident and the module reads",
]


class DemoHost(Protocol):
    """What the demo types into: the main screen's chat, its idle signal and its submit."""

    @property
    def chat(self) -> ChatPane: ...

    turn_idle: asyncio.Event

    async def submit(self, text: str) -> bool: ...

    def notify(self, message: str, *, title: str = ..., severity: Any = ...) -> None: ...


async def play(screen: DemoHost, commands: list[str], pause: float) -> None:
    """Type and send each command into the prompt, waiting for each turn to end plus `pause` seconds."""
    prompt = screen.chat.input
    await asyncio.sleep(min(pause, 1.0))
    for number, command in enumerate(commands, start=1):
        await screen.turn_idle.wait()
        screen.chat.set_activity(f"demo {number}/{len(commands)}")
        prompt.clear()
        delay = min(0.03, pause / 20)
        if delay > 0 and len(command) < 200:
            for char in command:
                prompt.insert(char)
                await asyncio.sleep(delay)
        else:
            prompt.insert(command)
        await asyncio.sleep(pause / 2)
        prompt.clear()
        if prompt.prompt_history[-1:] != [command]:
            prompt.prompt_history.append(command)
        await screen.submit(command)
        await screen.turn_idle.wait()
        await asyncio.sleep(pause)
    screen.notify(f"Demo finished: {plural(len(commands), 'command')} ran. Your turn!", title="demo")
