"""The `ctxtui` command: the TUI, or one headless turn with `-p`.

Heavy modules (textual, anthropic, tiktoken) are imported only where needed, so `--version` and
`--help` are instant.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from core import __version__

EXIT_OK = 0
EXIT_MODEL_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

ENVIRONMENT_HELP = """environment:
  ANTHROPIC_API_KEY     use the real model (without it, or with --offline, the offline model runs)
  ANTHROPIC_BASE_URL    another Messages API endpoint (a proxy, a gateway, a test server)
  ANTHROPIC_MODEL       the default for --model
  CTXTUI_<FIELD>        any compaction setting, e.g. CTXTUI_CONTEXT_CHAR_LIMIT=80000 (see --set)
"""


class UsageError(Exception):
    """Bad flags or arguments: exit 2 with a one-line message."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxtui",
        description="Chat with a Claude coding agent while a live inspector shows its context.",
        epilog=ENVIRONMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-p", "--prompt", help="run one turn headless: final text on stdout, "
                        "one line per compaction step on stderr")
    parser.add_argument("--workdir", type=Path, help="the workspace the tools act on (default: the current directory)")
    parser.add_argument("--model", help="model name (default: $ANTHROPIC_MODEL or a current Sonnet model)")
    parser.add_argument("--offline", action="store_true", help="use the deterministic offline model even with a key")
    parser.add_argument("--yes", action="store_true", help="allow bash without asking (headless denies it otherwise)")
    parser.add_argument("--resume", action="store_true", help="continue the latest session in this workdir")
    parser.add_argument("--demo", action="store_true",
                        help="a scripted offline session that fires every compaction step (TUI)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a compaction setting, e.g. --set context_char_limit=80000 (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="headless: also print tool calls and notices on stderr")
    parser.add_argument("--version", action="version", version=f"ctxtui {__version__}")
    return parser


def _settings(args: argparse.Namespace) -> Any:
    from core.config import Settings, compaction_settings, default_model

    workdir: Path = args.workdir if args.workdir is not None else Path.cwd()
    if args.demo and args.workdir is None:
        workdir = Path(tempfile.mkdtemp(prefix="ctxtui-demo-"))
    if not workdir.exists() and args.demo:
        workdir.mkdir(parents=True)
    if not workdir.is_dir():
        raise UsageError(f"--workdir {workdir} is not a directory")
    if not os.access(workdir, os.W_OK):
        raise UsageError(f"--workdir {workdir} is not writable (the archive lives there)")
    try:
        compaction = compaction_settings(args.set)
    except ValueError as error:
        raise UsageError(str(error)) from error
    return Settings(
        workdir=workdir.resolve(),
        model=args.model or default_model(),
        offline=args.offline or args.demo,
        yes=args.yes or args.demo,
        resume=args.resume,
        compaction=compaction,
        offline_chunk_delay=0.004 if args.demo else 0.0,
    )


def _print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def run_headless(settings: Any, prompt: str, verbose: bool = False) -> int:
    """One turn to completion; returns the exit code."""
    from core.agent import Agent
    from core.events import (
        CompactionStep,
        ErrorEvent,
        Notice,
        PermissionRequested,
        ToolCallFinished,
        ToolCallStarted,
        TurnFinished,
    )
    from core.model.base import ModelError

    try:
        agent = Agent.from_settings(settings, allow_all=False)  # headless answers each request below
    except ModelError as error:
        _print_err(f"ctxtui: {error}")
        return EXIT_MODEL_ERROR
    final_text = ""
    error_text: str | None = None
    try:
        async for event in agent.run_turn(prompt):
            if isinstance(event, PermissionRequested):
                event.reply.set_result("once" if settings.yes else "deny")
                if not settings.yes:
                    _print_err(f"ctxtui: {event.tool} denied: headless mode runs it only with --yes")
            elif isinstance(event, CompactionStep):
                _print_err(event.describe())
            elif isinstance(event, ErrorEvent):
                if event.kind == "compaction":
                    _print_err(f"ctxtui: {event.message}")
                else:
                    error_text = event.message
            elif isinstance(event, TurnFinished):
                final_text = event.text
                error_text = event.error or error_text
            elif verbose and isinstance(event, Notice):
                _print_err(f"ctxtui: {event.message}")
            elif verbose and isinstance(event, ToolCallStarted):
                _print_err(f"tool {event.name} {event.input}")
            elif verbose and isinstance(event, ToolCallFinished):
                status = "error" if event.is_error else "ok"
                _print_err(f"tool {event.name} {status}, {event.output_chars:,} chars, {event.duration:.2f}s")
    finally:
        await agent.aclose()
    if error_text is not None:
        if final_text:
            print(final_text, flush=True)
        _print_err(f"ctxtui: {error_text}")
        return EXIT_MODEL_ERROR
    print(final_text, flush=True)
    return EXIT_OK


def run_tui(settings: Any, demo: bool) -> int:
    from core.agent import Agent
    from core.model.base import ModelError

    demo_commands: list[str] | None = None
    if demo:
        from tui.demo import DEMO_COMMANDS, build_demo_workspace

        asyncio.run(build_demo_workspace(settings.workdir))
        demo_commands = list(DEMO_COMMANDS)
    try:
        agent = Agent.from_settings(settings)
    except ModelError as error:
        _print_err(f"ctxtui: {error}")
        return EXIT_MODEL_ERROR
    from tui.app import CtxApp

    app = CtxApp(agent, demo_commands=demo_commands)
    app.run()
    return app.return_code or EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.prompt is not None and args.demo:
            raise UsageError("--demo runs in the TUI; it cannot be combined with -p")
        if args.prompt is not None and not args.prompt.strip():
            raise UsageError("-p needs a non-empty prompt")
        settings = _settings(args)
    except UsageError as error:
        parser.print_usage(sys.stderr)
        _print_err(f"ctxtui: error: {error}")
        return EXIT_USAGE
    try:
        if args.prompt is not None:
            return asyncio.run(run_headless(settings, args.prompt, verbose=args.verbose))
        return run_tui(settings, args.demo)
    except KeyboardInterrupt:
        _print_err("ctxtui: interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
