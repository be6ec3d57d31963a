"""The `ctxtui` command: the TUI, one headless turn with `-p`, `sessions`, `config`, `inspect`, `--serve`.

Heavy modules (textual, anthropic, tiktoken) are imported only where needed, so `--version` and
`--help` are instant; the sub-commands' parsers and modules are loaded only when argv names one
(`parse_arguments`); the TUI's start runs with the cyclic garbage collector paused until its first
frame is painted (tui/startup.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from core import __version__
from core.text import error_line, visible
from tui.startup import pause_collector, resume_collector

EXIT_OK = 0
EXIT_MODEL_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

ENVIRONMENT_HELP = """environment:
  ANTHROPIC_API_KEY     use the real model (without it, or with --offline, the offline model runs)
  ANTHROPIC_BASE_URL    another Messages API endpoint (a proxy, a gateway, a test server)
  ANTHROPIC_MODEL       the default for --model
  CTXTUI_<FIELD>        any setting below, e.g. CTXTUI_CONTEXT_CHAR_LIMIT=80000 or CTXTUI_THEME=nord
  XDG_CONFIG_HOME       where the config file lives ($XDG_CONFIG_HOME/ctxtui/config.toml)
  CTXTUI_ALLOW_UNCHECKED_TEXTUAL=1  start the TUI on a Textual version it was not checked with
"""

COMMANDS_HELP = """commands:
  ctxtui sessions               this workdir's sessions, newest first (ids for --resume ID)
  ctxtui sessions --prune [--older-than DAYS] [--keep N] [--dry-run]
                                remove old sessions and the archive files no remaining session needs
  ctxtui config                 the effective settings as TOML, each with its source
  ctxtui config --markdown      every setting with its default, allowed values and help (README's tables)
  ctxtui inspect FILE --report  totals, breakdown and a dry run of the pipeline for a history file
  ctxtui proxy [--port P]       watch any Messages-API client: a loopback proxy that records each call
  ctxtui inspect FILE --ledger --facts  what compaction took out, and which facts are no longer visible
  ctxtui inspect FILE --audit   what a client's compaction did wrong (did_not_shrink, loop, early,
                                lost_instructions); FILE may be a proxy folder (--conversation ID)
  ctxtui search QUERY [--output-format json]  search what this workdir's sessions archived
  ctxtui statusline             Claude Code's status line: its JSON on stdin, one line of context,
                                prompt cache and last compaction on stdout (always exit 0)
"""

# The sub-commands, in the order of `ctxtui --help` (build_parser adds a parser for each).
COMMANDS = ("sessions", "config", "inspect", "proxy", "replay", "search")
COMMANDS_METAVAR = "{" + ",".join(COMMANDS) + "}"


class UsageError(Exception):
    """Bad flags or arguments: exit 2 with a one-line message."""


def _settings_help() -> str:
    """The settings the config file, CTXTUI_* and --set take, with their help and defaults, and the file's path."""
    from core.config import config_path, settings_help

    return settings_help(config_path())


def _common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options every command takes (on sub-commands their absence leaves the main parser's value)."""
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--workdir", type=Path, default=default, help="the workspace (default: the current directory)"
    )
    parser.add_argument(
        "--model", default=default, help="model name (default: $ANTHROPIC_MODEL or a current Sonnet model)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=argparse.SUPPRESS if suppress else [],
        metavar="FIELD=VALUE",
        help="override a setting, e.g. --set context_char_limit=80000 (repeatable)",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default=default,
        help="-p: text (default), json (one object at the end) or stream-json (one object per "
        "event); inspect --report and sessions: text or json",
    )


class _Parser(argparse.ArgumentParser):
    """The main parser: its epilog (the settings table, which loads the config module and tomlkit) is
    written only when `--help` is asked for, not at every start."""

    def format_help(self) -> str:
        if self.epilog is None:
            self.epilog = COMMANDS_HELP + "\n" + ENVIRONMENT_HELP + "\n" + _settings_help()
        return super().format_help()


def _main_parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """The main parser's own flags (every flag before a sub-command), declared here only."""
    parser = parser_class(
        prog="ctxtui",
        description="Chat with a Claude coding agent while a live inspector shows its context.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-p",
        "--prompt",
        help="run one turn headless: final text on stdout, "
        "one line per compaction step on stderr (-p - reads the prompt from stdin)",
    )
    _common(parser, suppress=False)
    parser.add_argument(
        "--offline", action="store_true", help="use the deterministic offline model even with a key"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="allow bash and file writes without asking (headless denies them otherwise)",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=None,
        metavar="ID",
        help="continue the newest session of this workdir that replays to a valid history, "
        "or the session ID (see ctxtui sessions)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="a scripted offline session that fires every compaction step (TUI)",
    )
    parser.add_argument(
        "--serve", action="store_true", help="serve the app in a browser (needs ctxtui[serve])"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="--serve: the address to bind (default 127.0.0.1, loopback)"
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="--serve: the port (default 8000; 0 picks a free one)"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="headless: also print tool calls and notices on stderr"
    )
    parser.add_argument("--version", action="version", version=f"ctxtui {__version__}")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The full parser: the main flags and every sub-command's parser (`parse_arguments` uses it only
    when argv has a word where a sub-command goes)."""
    from tui.cli.proxy import add_proxy_parser
    from tui.cli.replay import add_replay_parser
    from tui.cli.search import add_search_parser

    parser = _main_parser(_Parser)
    commands = parser.add_subparsers(dest="command", metavar=COMMANDS_METAVAR)
    sessions = commands.add_parser("sessions", help="list this workdir's sessions, newest first")
    _common(sessions, suppress=True)
    sessions.add_argument(
        "--prune",
        action="store_true",
        help="remove old sessions (--older-than, --keep) and the archive files no "
        "remaining session needs; prints what it frees",
    )
    sessions.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="--prune: remove sessions last active more than DAYS days ago",
    )
    sessions.add_argument("--keep", type=int, metavar="N", help="--prune: keep the newest N sessions")
    sessions.add_argument(
        "--dry-run", action="store_true", help="--prune: print what would go, remove nothing"
    )
    config = commands.add_parser("config", help="print the effective settings as TOML with their sources")
    _common(config, suppress=True)
    config.add_argument(
        "--markdown",
        action="store_true",
        help="print every setting as Markdown tables instead (default, allowed values, what it does)",
    )
    inspect = commands.add_parser("inspect", help="read a transcript, session, messages or Claude Code file")
    inspect.add_argument(
        "file",
        type=Path,
        help="a .jsonl session or transcript, a .json list of messages / request body, a trajectory, "
        "or a ctxtui proxy recording folder (.ctxtui/proxy)",
    )
    inspect.add_argument(
        "--report",
        action="store_true",
        help="print totals, breakdown and the dry run instead of opening the read-only inspector",
    )
    inspect.add_argument(
        "--ledger",
        action="store_true",
        help="print what compaction took out of the context (a ctxtui or Claude Code session)",
    )
    inspect.add_argument(
        "--facts",
        action="store_true",
        help="print the constraints, paths and error lines the history held, and which are not visible",
    )
    inspect.add_argument(
        "--compare",
        action="store_true",
        help="replay the session's requests under every engine and compare context and cost",
    )
    inspect.add_argument(
        "--audit",
        action="store_true",
        help="list what the client's compaction did wrong: did_not_shrink, loop, early, lost_instructions",
    )
    inspect.add_argument(
        "--conversation",
        metavar="ID",
        help="FILE a proxy recording folder: the conversation to read (its id, an exchange id or its "
        "number; default the newest)",
    )
    _common(inspect, suppress=True)
    add_proxy_parser(commands)
    add_replay_parser(commands)
    add_search_parser(commands)
    return parser


class _TuiParser(argparse.ArgumentParser):
    """`parse_arguments`' light parser; its help is the full parser's (it lists the sub-commands)."""

    def format_help(self) -> str:
        return build_parser().format_help()


def _tui_parser() -> argparse.ArgumentParser:
    """The main parser with, where the sub-commands go, a positional that only collects words: like
    the sub-commands' action it has nargs=PARSER, dest `command`, their metavar (so the same usage
    line) and is not required, so argparse gives it exactly the words it would give a sub-command."""
    parser = _main_parser(_TuiParser)
    words = parser.add_argument("command", nargs=argparse.PARSER, metavar=COMMANDS_METAVAR)
    words.required = False
    return parser


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """argv parsed as `build_parser().parse_args(argv)` parses it, but without building the
    sub-commands' parsers, nor importing their modules (tui.cli.proxy, .replay, .search and through
    replay core.engines), unless argv has a word where a sub-command goes: the TUI's start does not
    pay for them.

    Why a light parser rather than scanning argv for command names: the light one is the same main
    parser (`_main_parser`: the same flags, abbreviations and reading of each token) with a stand-in
    for the sub-commands that argparse matches by the same nargs pattern. So argparse itself decides
    where a sub-command would start, and up to there both parsers do the same: --version, -h (the
    full help) and errors (the same usage line) included. When the stand-in caught a word (`proxy`,
    `bogus`, `-- x`), the full parser parses argv again from the start: sub-commands, their help and
    their errors are its own. No private argparse names: PARSER is in argparse's __all__, `required`
    a public attribute of an Action.
    """
    light = _tui_parser()
    args, unknown = light.parse_known_args(argv)
    if args.command is not None:
        return build_parser().parse_args(argv)
    if unknown:  # exits 2 with "unrecognized arguments", as the full parser would
        return light.parse_args(argv)
    return args


def _workdir(args: argparse.Namespace) -> Path:
    workdir: Path = args.workdir if args.workdir is not None else Path.cwd()
    if not workdir.is_dir():
        raise UsageError(f"--workdir {workdir} is not a directory")
    return workdir


def _demo_workdir(args: argparse.Namespace) -> Path:
    """The demo's own folder (tui/demo.py: never over a file of the user's); says so when it is not --workdir."""
    from tui.demo import choose_workdir

    try:
        workdir, note = choose_workdir(args.workdir)
    except OSError as error:
        raise UsageError(f"--demo: {error_line(error)}") from error
    if note is not None:
        _print_err(f"ctxtui: {note}")
    return workdir


_warned: set[str] = set()  # what `_config` has said on stderr: each warning once per process


def _config(args: argparse.Namespace) -> Any:
    from core.config import ConfigError, resolve_config

    try:
        config = resolve_config(flags={"model": args.model}, overrides=args.set)
    except ConfigError as error:
        raise UsageError(str(error)) from error
    for line in config.warnings:
        if line not in _warned:
            _warned.add(line)
            _print_err(f"ctxtui: warning: {line}")
    return config


def _settings(args: argparse.Namespace) -> Any:
    from core.config import Settings, apply_config

    config = _config(args)  # before the demo makes its folder: a bad setting leaves nothing behind
    workdir = _demo_workdir(args) if args.demo else _workdir(args)
    if not os.access(workdir, os.W_OK):
        raise UsageError(f"--workdir {workdir} is not writable (the archive lives there)")
    settings = apply_config(Settings(workdir=workdir.resolve()), config)
    settings.offline = args.offline or args.demo
    settings.yes = args.yes or args.demo
    settings.resume = args.resume is not None
    if isinstance(args.resume, str):
        settings.resume_id = args.resume
    settings.offline_chunk_delay = 0.004 if args.demo else 0.0
    return settings


def _check_textual() -> None:
    """Before a TUI starts: it relies on Textual internals checked with a few Textual versions only
    (tui/textual_private.py); another is refused in one line (UsageError: exit 2) unless
    CTXTUI_ALLOW_UNCHECKED_TEXTUAL=1. Reads the installed version's metadata, imports nothing of Textual."""
    from tui.textual_private import check_textual_version

    problem = check_textual_version()
    if problem is not None:
        raise UsageError(problem)


def _print_err(line: str) -> None:
    print(visible(line), file=sys.stderr, flush=True)


def run_tui(settings: Any, demo: bool) -> int:
    """The TUI. A fresh session's agent is built after the first frame (core/agent/launch.py); a
    resumed one, and the demo's, before the app starts (their first frame shows their history)."""
    from core.agent.launch import Launch

    demo_commands: list[str] | None = None
    if demo:
        from tui.demo import DEMO_COMMANDS, build_demo_workspace

        asyncio.run(build_demo_workspace(settings.workdir))
        demo_commands = list(DEMO_COMMANDS)
    given: Any
    if demo or settings.resume:
        from core.agent import Agent
        from core.model.base import ModelError
        from core.sessions.listing import ResumeError

        try:
            given = Agent.from_settings(settings)
        except ModelError as error:
            _print_err(f"ctxtui: {error}")
            return EXIT_MODEL_ERROR
        except ResumeError as error:
            _print_err(f"ctxtui: error: {error}")
            return EXIT_USAGE
    else:
        given = Launch.of(settings)
    from tui.app import CtxApp

    app = CtxApp(given, demo_commands=demo_commands, theme=settings.theme)
    try:
        app.run()
    finally:
        # Said after the app has left the screen, so it stays visible in the terminal.
        if app.start_failure is not None:
            _print_err(f"ctxtui: {app.start_failure}")
        agent = app.built_agent
        if agent is not None and (failure := agent.view.session_failure()):
            _print_err(f"ctxtui: this session was not saved completely: {failure}")
        if demo:
            _print_err(f"ctxtui: the demo's workdir is kept at {settings.workdir} (remove it when done)")
    return app.return_code or EXIT_OK


# --------------------------------------------------------------------------- sub-commands


def run_sessions(args: argparse.Namespace) -> int:
    import json
    import time

    from core.sessions.listing import list_sessions
    from core.text import one_line, plural

    if args.output_format == "stream-json":
        raise UsageError("sessions: --output-format takes text or json")
    if args.prune:
        return run_prune(args)
    given = [
        flag
        for flag, value in (
            ("--older-than", args.older_than),
            ("--keep", args.keep),
            ("--dry-run", args.dry_run or None),
        )
        if value is not None
    ]
    if given:
        raise UsageError(f"sessions: {', '.join(given)} needs --prune")
    workdir = _workdir(args).resolve()
    infos = list_sessions(workdir / ".ctxtui")
    if args.output_format == "json":
        rows = [
            {
                "id": info.id,
                "path": str(info.path),
                "started": info.started,
                "last_active": info.last_active,
                "messages": info.messages,
                "chars": info.chars,
                "first_request": info.first_request,
                "resumable": info.resumable,
                "skipped": info.skipped,
            }
            for info in infos
        ]
        print(json.dumps(rows, ensure_ascii=True, allow_nan=False), flush=True)
        return EXIT_OK
    if not infos:
        _print_err(f"ctxtui: no sessions in {workdir / '.ctxtui' / 'sessions'}")
        return EXIT_OK

    def stamp(seconds: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))

    width = max(len(info.id) for info in infos)
    print(
        f"{'id':<{width}}  {'started':<16}  {'last active':<16}  {'messages':>8}  {'chars':>10}  first request",
        flush=True,
    )
    for info in infos:
        request = one_line(info.first_request, 60) or ("(empty)" if not info.messages else "-")
        mark = "" if info.resumable else "  [cannot resume]"
        if info.skipped:  # lines a replay could not use: each cost itself only
            mark += f"  [{plural(info.skipped, 'bad record')} skipped]"
        print(
            visible(
                f"{info.id:<{width}}  {stamp(info.started):<16}  {stamp(info.last_active):<16}  "
                f"{info.messages:>8,}  {info.chars:>10,}  {request}{mark}"
            ),
            flush=True,
        )
    return EXIT_OK


def run_prune(args: argparse.Namespace) -> int:
    """`sessions --prune`: remove old session logs and the archive files no remaining session needs."""
    import json
    import math

    from core.sessions.prune import apply_prune, plan_prune
    from core.text import plural

    if args.older_than is not None and not (math.isfinite(args.older_than) and args.older_than >= 0):
        raise UsageError(
            f"sessions --prune: --older-than takes a number of days from 0, got {args.older_than}"
        )
    if args.keep is not None and args.keep < 0:
        raise UsageError(f"sessions --prune: --keep takes a number of sessions from 0, got {args.keep}")
    workdir = _workdir(args).resolve()
    try:
        plan = plan_prune(workdir, args.older_than, args.keep)
        removed, failures = (plan.removals, []) if args.dry_run else apply_prune(workdir, plan)
    except OSError as error:
        _print_err(f"ctxtui: error: sessions --prune: {error_line(error)}")
        return EXIT_MODEL_ERROR
    for line in [*plan.notes, *failures]:
        _print_err(f"ctxtui: {line}")
    size = sum(item.size for item in removed)
    if args.output_format == "json":
        rows = [{"path": item.path, "kind": item.kind, "bytes": item.size} for item in removed]
        print(
            json.dumps(
                {
                    "dry_run": args.dry_run,
                    "files": len(removed),
                    "bytes": size,
                    "removed": rows,
                    "kept_sessions": plan.kept_sessions,
                    "running": plan.running,
                    "failures": failures,
                },
                ensure_ascii=True,
            ),
            flush=True,
        )
        return EXIT_MODEL_ERROR if failures else EXIT_OK
    verb = "would remove" if args.dry_run else "removed"
    for item in removed:
        print(visible(f"{verb} {item.path} ({item.size:,} bytes)"), flush=True)
    sessions = sum(item.kind == "session" for item in removed)
    running = f", {len(plan.running)} of them running" if plan.running else ""
    print(
        f"{'would free' if args.dry_run else 'freed'} {plural(len(removed), 'file')}, {size:,} bytes: "
        f"{plural(sessions, 'session')} and {plural(len(removed) - sessions, 'archive file')} "
        f"(kept {plural(plan.kept_sessions, 'session')}{running})",
        flush=True,
    )
    return EXIT_MODEL_ERROR if failures else EXIT_OK


def run_config(args: argparse.Namespace) -> int:
    from core.config import effective_toml, settings_table_markdown

    text = settings_table_markdown() if args.markdown else effective_toml(_config(args))
    sys.stdout.write(visible(text))
    sys.stdout.flush()
    return EXIT_OK


def run_inspect(args: argparse.Namespace) -> int:
    import json

    from core.sessions.inspection import InspectError, load_file, report, report_text

    if args.audit:
        return _audit(args)
    printed = args.report or args.ledger or args.facts or args.compare
    if args.output_format == "stream-json" or (args.output_format == "json" and not printed):
        raise UsageError(
            f"inspect: --output-format {args.output_format} needs --report, --ledger, --facts or "
            "--compare and "
            "takes text or json (without them the read-only inspector opens in the terminal)"
        )
    config = _config(args)
    compare_view = (
        args.compare
        and args.output_format is None
        and not (args.report or args.ledger or args.facts)
        and sys.stdout.isatty()
    )
    if args.compare and not compare_view:
        return _compare(args, config)
    if not (args.report or args.ledger or args.facts):
        _check_textual()  # the read-only inspector opens
    try:
        inspected = load_file(args.file, args.conversation)
    except InspectError as error:
        raise UsageError(str(error)) from error
    if args.ledger or args.facts:
        from core.sessions.facts_report import facts_and_ledger, facts_and_ledger_text

        found = facts_and_ledger(inspected, args.ledger, args.facts)
        if args.report:
            found = {**asyncio.run(report(inspected, config.compaction)), **found}
        if args.output_format == "json":
            print(json.dumps(found, ensure_ascii=True, default=str), flush=True)
        else:
            text = report_text(found) if args.report else ""
            sys.stdout.write(visible(text + facts_and_ledger_text(found)))
            sys.stdout.flush()
        return EXIT_OK
    data = asyncio.run(report(inspected, config.compaction))
    if not args.report:
        from tui.inspect_app import InspectApp

        app = InspectApp(inspected, data, compare=_compare_settings(args, config) if compare_view else None)
        app.run()
        return app.return_code or EXIT_OK
    if args.output_format == "json":
        print(json.dumps(data, ensure_ascii=True, default=str), flush=True)
    else:
        sys.stdout.write(visible(report_text(data)))
        sys.stdout.flush()
    return EXIT_OK


def _audit(args: argparse.Namespace) -> int:
    """`inspect FILE --audit`: what the client's compaction did wrong (core/sessions/audit.py)."""
    import json

    from core.sessions.audit import audit, audit_json, audit_text
    from core.sessions.inspection import InspectError, load_file

    if args.output_format == "stream-json":
        raise UsageError("inspect --audit: --output-format takes text or json")
    try:
        found = audit(load_file(args.file, args.conversation))
    except InspectError as error:
        raise UsageError(str(error)) from error
    if args.output_format == "json":
        print(json.dumps(audit_json(found), ensure_ascii=True), flush=True)
    else:
        sys.stdout.write(visible(audit_text(str(args.file), found)))
        sys.stdout.flush()
    return EXIT_OK


def _compare_settings(args: argparse.Namespace, config: Any) -> Any:
    """The settings every engine of `inspect FILE --compare` replays the file with (--workdir, --set)."""
    from core.config import Settings, apply_config

    return apply_config(Settings(workdir=_workdir(args)), config)


def _compare(args: argparse.Namespace, config: Any) -> int:
    """`inspect FILE --compare`: the file's requests replayed under every engine (core/engines/compare.py)."""
    import json

    from core.engines.compare import compare_file, compare_text
    from core.sessions.inspection import InspectError
    from tui.cli.replay import Progress

    try:
        data = asyncio.run(
            compare_file(
                args.file, _compare_settings(args, config), Progress("compare", "calls"), args.conversation
            )
        )
    except InspectError as error:
        raise UsageError(str(error)) from error
    if args.output_format == "json":
        print(json.dumps(data, ensure_ascii=True, default=str), flush=True)
    else:
        sys.stdout.write(visible(compare_text(data) + "\n"))
        sys.stdout.flush()
    return EXIT_OK


# --------------------------------------------------------------------------- main


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's last flush cannot fail."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["statusline"]:  # tui/launcher.py takes this path before importing this module
        from core.sessions.statusline import main as statusline

        return statusline(argv[1:])
    pause_collector()  # back on after the TUI's first frame (tui/startup.py), at once for the rest
    try:
        return _main(argv)
    except BrokenPipeError:
        _quiet_stdout()  # the reader went away (`ctxtui -p ... | head`): nothing more to say
        return EXIT_MODEL_ERROR
    finally:
        resume_collector()


def _check_combinations(args: argparse.Namespace) -> None:
    """Flags that cannot go together, refused before anything starts (UsageError)."""
    if args.prompt is not None and args.demo:
        raise UsageError("--demo runs in the TUI; it cannot be combined with -p")
    if args.prompt is not None and args.serve:
        raise UsageError("--serve runs the TUI in a browser; it cannot be combined with -p")
    if args.prompt is None and args.output_format not in (None, "text"):
        raise UsageError(
            f"--output-format {args.output_format} is for -p (one headless turn); "
            "the TUI draws on the terminal, not JSON"
        )


def _check_serve(args: argparse.Namespace) -> None:
    """What every browser tab would refuse, refused once here: the settings, the workdir (a demo
    makes its own per tab) and a --resume with nothing to continue."""
    from core.sessions.listing import ResumeError, resume_replay

    _check_textual()
    _config(args)
    if args.demo:
        return
    workdir = _workdir(args)
    if args.resume is not None:
        try:
            resume_replay(
                workdir.resolve() / ".ctxtui", args.resume if isinstance(args.resume, str) else None
            )
        except ResumeError as error:
            raise UsageError(str(error)) from error


def _main(argv: list[str]) -> int:
    args = parse_arguments(argv)
    for name in ("workdir", "model", "output_format"):
        if not hasattr(args, name):
            setattr(args, name, None)
    if not hasattr(args, "set"):
        args.set = []
    if args.command is not None or args.prompt is not None or args.serve:
        resume_collector()  # only the TUI's first frame waits for the collector
    try:
        if args.command == "sessions":
            return run_sessions(args)
        if args.command == "config":
            return run_config(args)
        if args.command == "inspect":
            return run_inspect(args)
        if args.command == "proxy":
            from tui.cli.proxy import run_proxy

            return run_proxy(args)
        if args.command == "replay":
            from tui.cli.replay import run_replay

            return run_replay(args, _compare_settings(args, _config(args)))
        if args.command == "search":
            from tui.cli.search import run_search

            return run_search(args)
        _check_combinations(args)
        prompt = None
        if args.prompt is not None:
            from tui.cli.headless import read_prompt

            prompt = read_prompt(args.prompt, sys.stdin)
        if prompt is not None and not prompt.strip():
            raise UsageError(
                "-p needs a non-empty prompt" + (" (stdin was empty)" if args.prompt == "-" else "")
            )
        if args.serve:
            _check_serve(args)
        else:
            if prompt is None:
                _check_textual()
            settings = _settings(args)
    except UsageError as error:
        # One line: the argparse usage block is for flags argparse itself could not parse.
        _print_err(f"ctxtui: error: {error}")
        return EXIT_USAGE
    try:
        if args.serve:
            from tui.cli.serve import serve

            return serve(args)
        if prompt is not None:
            from tui.cli.headless import run_headless

            return asyncio.run(
                run_headless(
                    settings, prompt, verbose=args.verbose, output_format=args.output_format or "text"
                )
            )
        return run_tui(settings, args.demo)
    except KeyboardInterrupt:
        _print_err("ctxtui: interrupted")
        return EXIT_INTERRUPTED
