"""`ctxtui proxy`: the capture proxy's command line (the server itself is core/proxy/).

Prints `listening on http://127.0.0.1:P` as its first stdout line, then where it records and where
it forwards. Then either the live view (tui/proxy_app.py) takes the terminal, or with `--headless`
(or when stderr is not a terminal to paint on) it prints one line per call. The view paints on
stderr (Textual's way), so stdout keeps those first lines, and they are on the screen again when
the view closes. Ctrl-C (or ctrl+q in the view) or SIGTERM stops it; exit 0.

The settings are read once, at start (flags > CTXTUI_* > config file, as for every command; `--set`
too): the proxy's limits (proxy_request_limit, proxy_body_limit, proxy_reply_limit) and the view's
own. A bad one is one line and exit 2, before anything listens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.text import visible

if TYPE_CHECKING:
    from core.config import ResolvedConfig
    from core.proxy.limits import ProxyLimits

DEFAULT_PORT = 8788
DEFAULT_UPSTREAM = "https://api.anthropic.com"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_proxy_parser(commands: Any) -> None:
    """The `proxy` sub-command's flags."""
    proxy = commands.add_parser(
        "proxy",
        help="watch any Messages-API or OpenAI-format client (Claude Code, Codex, the SDKs) through a loopback proxy",
        description="Forward /v1/... requests to the upstream unchanged, record each /v1/messages, "
        "/v1/chat/completions and /v1/responses exchange, and show each request live (or print one line per "
        "call with --headless). Point a client at it with ANTHROPIC_BASE_URL=http://127.0.0.1:PORT "
        "(or OPENAI_BASE_URL=http://127.0.0.1:PORT/v1).",
    )
    proxy.add_argument(
        "--port",
        dest="proxy_port",
        default=str(DEFAULT_PORT),
        metavar="P",
        help=f"the port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    proxy.add_argument(
        "--host",
        dest="proxy_host",
        default="127.0.0.1",
        metavar="H",
        help="a loopback address to listen on (default 127.0.0.1; any other host is refused)",
    )
    proxy.add_argument(
        "--upstream",
        default=None,
        metavar="URL",
        help=f"where every request goes (default $ANTHROPIC_BASE_URL, else {DEFAULT_UPSTREAM}; OpenAI's paths: "
        "$OPENAI_BASE_URL, else https://api.openai.com)",
    )
    proxy.add_argument(
        "--workdir",
        type=Path,
        default=argparse.SUPPRESS,
        help="where the recordings go: WORKDIR/.ctxtui/proxy/ (default: the current directory)",
    )
    proxy.add_argument(
        "--headless", action="store_true", help="print one line per call instead of the live view"
    )
    proxy.add_argument("--no-record", action="store_true", help="keep nothing on disk")
    proxy.add_argument(
        "--set",
        dest="proxy_set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a setting, e.g. --set proxy_reply_limit=8000000 (repeatable)",
    )


class ProxyUsageError(Exception):
    """A bad flag: one line, exit 2."""


def _default_limits() -> ProxyLimits:
    from core.proxy.limits import ProxyLimits

    return ProxyLimits()


@dataclass(frozen=True)
class ProxyOptions:
    host: str
    port: int
    upstream: str
    workdir: Path
    headless: bool
    record: bool
    limits: ProxyLimits = field(default_factory=_default_limits)
    openai_upstream: str | None = None  # OpenAI's paths, when no --upstream: OPENAI_BASE_URL, else its API


def proxy_options(args: argparse.Namespace, environ: dict[str, str] | None = None) -> ProxyOptions:
    """The checked options; ProxyUsageError (one line) for a bad host, port, upstream or workdir."""
    from core.proxy.http import BadUpstream, is_loopback_host, normalize_upstream

    environ = dict(os.environ) if environ is None else environ
    host = str(args.proxy_host)
    if not is_loopback_host(host):
        raise ProxyUsageError(
            f"--host {host}: the proxy listens on loopback only (127.0.0.1, ::1 or localhost)"
        )
    try:
        port = int(str(args.proxy_port), 10)
    except ValueError:
        raise ProxyUsageError(f"--port {args.proxy_port}: expected a number from 0 to 65535") from None
    if not 0 <= port <= 65535:
        raise ProxyUsageError(f"--port {port}: expected a number from 0 to 65535")
    upstream = args.upstream or environ.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM
    try:
        upstream = normalize_upstream(upstream)
    except BadUpstream as error:
        source = "--upstream" if args.upstream else "ANTHROPIC_BASE_URL"
        raise ProxyUsageError(f"{source}: {error}") from None
    openai = None
    if not args.upstream:
        from core.proxy.openai import openai_upstream

        try:
            openai = normalize_upstream(openai_upstream(environ.get("OPENAI_BASE_URL")))
        except BadUpstream as error:
            raise ProxyUsageError(f"OPENAI_BASE_URL: {error}") from None
    workdir = Path(args.workdir) if getattr(args, "workdir", None) is not None else Path.cwd()
    record = not args.no_record
    if record and not workdir.is_dir():
        raise ProxyUsageError(f"--workdir {workdir} is not a directory")
    if record and not os.access(workdir, os.W_OK):
        raise ProxyUsageError(
            f"--workdir {workdir} is not writable (the recordings go there; or --no-record)"
        )
    return ProxyOptions(
        host, port, upstream, workdir.resolve(), bool(args.headless), record, openai_upstream=openai
    )


def _say(line: str, *, err: bool = False) -> None:
    print(visible(line), file=sys.stderr if err else sys.stdout, flush=True)


def proxy_settings(args: argparse.Namespace) -> ResolvedConfig:
    """The settings in effect (flags > CTXTUI_* > config file > defaults); ProxyUsageError (one line) if one is bad."""
    from core.config import ConfigError, resolve_config

    try:
        overrides = [*(getattr(args, "set", None) or []), *(getattr(args, "proxy_set", None) or [])]
        return resolve_config(flags={}, overrides=overrides)
    except ConfigError as error:
        raise ProxyUsageError(str(error)) from None


def run_proxy(args: argparse.Namespace) -> int:
    from core.proxy.limits import ProxyLimits

    try:
        options = proxy_options(args)
        config = proxy_settings(args)
    except ProxyUsageError as error:
        _say(f"ctxtui proxy: error: {error}", err=True)
        return EXIT_USAGE
    options = replace(options, limits=ProxyLimits.from_settings(config.top))
    if not options.headless and not sys.stderr.isatty():
        note = "ctxtui proxy: stderr is not a terminal, so no live view: one line per call, as --headless"
        return asyncio.run(serve_proxy(replace(options, headless=True), note))
    if options.headless:
        return asyncio.run(serve_proxy(options))
    from tui.textual_private import check_textual_version

    problem = check_textual_version()  # the live view relies on Textual internals (one line, exit 2)
    if problem is not None:
        _say(f"ctxtui proxy: error: {problem}", err=True)
        return EXIT_USAGE
    return run_view(options, config)


def _announce(url: str, options: ProxyOptions, folder: Path | None) -> None:
    """The first lines on stdout: where it listens (the contract's first line), records and forwards."""
    from core.proxy.http import shown_upstream

    _say(f"listening on {url}")
    if folder is not None:
        _say(f"recording to {folder}{os.sep} (one file per call, 0600; --no-record keeps nothing)")
    else:
        _say("not recording (--no-record): nothing is written to disk")
    _say(f"forwarding to {shown_upstream(options.upstream)}")
    _say(f"start a client with ANTHROPIC_BASE_URL={url}")
    if options.openai_upstream is not None:
        _say(
            f"forwarding OpenAI's paths to {shown_upstream(options.openai_upstream)}: "
            f"start an OpenAI-format client with OPENAI_BASE_URL={url}/v1"
        )


def _self_upstream(options: ProxyOptions, port: int) -> bool:
    """The upstream is this very proxy: said in one line (the caller stops and exits 2)."""
    from core.proxy.http import shown_upstream, upstream_is

    for upstream, variable in (
        (options.upstream, "ANTHROPIC_BASE_URL"),
        (options.openai_upstream, "OPENAI_BASE_URL"),
    ):
        if upstream is not None and upstream_is(upstream, options.host, port):
            _say(
                f"ctxtui proxy: error: the upstream {shown_upstream(upstream)} is this proxy "
                f"(unset {variable} or pass --upstream)",
                err=True,
            )
            return True
    return False


def _stopped(calls: int, recorder: Any) -> None:
    where = f" ({recorder.written} recorded in {recorder.folder})" if recorder is not None else ""
    _say(f"ctxtui proxy: stopped after {calls} call(s){where}", err=True)


def run_view(options: ProxyOptions, config: ResolvedConfig) -> int:
    """The proxy on a thread of its own (a repaint never delays a reply), the live view on this one."""
    from core.proxy.http import shown_upstream
    from core.proxy.record import Recorder, RecordError
    from core.proxy.server import ProxyError
    from core.proxy.thread import ProxyThread

    sys.setswitchinterval(
        0.001
    )  # see serve_proxy: the view's thread hands the GIL back to the proxy's sooner
    recorder = Recorder(options.workdir) if options.record else None
    if recorder is not None:
        try:
            recorder.prepare()
        except RecordError as error:
            _say(f"ctxtui proxy: {error}", err=True)
            return EXIT_FAILED
    proxy = ProxyThread(
        options.upstream,
        recorder,
        host=options.host,
        port=options.port,
        limits=options.limits,
        openai_upstream=options.openai_upstream,
    )
    try:
        proxy.start()
    except ProxyError as error:
        _say(f"ctxtui proxy: {error}", err=True)
        return EXIT_FAILED
    if _self_upstream(options, proxy.server.port):
        proxy.stop()
        return EXIT_USAGE
    folder = recorder.folder if recorder is not None else None
    _announce(proxy.url, options, folder)
    from tui.proxy_app import ProxyApp
    from tui.widgets.proxy_status import ProxyAbout

    compaction = config.compaction
    about = ProxyAbout(proxy.url, shown_upstream(options.upstream), f"{folder}{os.sep}" if folder else None)
    app = ProxyApp(
        proxy.events,
        about,
        options.workdir,
        limit=compaction.context_char_limit,
        target_ratio=compaction.micro_target_ratio,
        theme=config.top.get("theme"),
        stop_on_sigterm=True,
    )
    try:
        app.run()
    finally:
        proxy.stop()  # what the watch was handed is recorded before this returns
    _stopped(proxy.calls, recorder)
    return EXIT_OK


async def serve_proxy(options: ProxyOptions, note: str | None = None) -> int:
    """Serve until SIGINT or SIGTERM, printing a line per call (`note`, when given, on stderr once it listens)."""
    from core.proxy.calls import CallFinished, ProxyNotice, describe_call
    from core.proxy.record import Recorder, RecordError
    from core.proxy.server import ProxyError, ProxyServer
    from core.proxy.watch import Watch

    # The watch parses and diffs requests in a thread; a shorter switch interval hands the GIL back to
    # the forwarding loop sooner between the thread's Python steps (5 ms by default, the goal is < 1 ms
    # added per streamed event).
    sys.setswitchinterval(0.001)
    recorder = Recorder(options.workdir) if options.record else None
    if recorder is not None:
        try:
            await asyncio.to_thread(recorder.prepare)
        except RecordError as error:
            _say(f"ctxtui proxy: {error}", err=True)
            return EXIT_FAILED
    watch = Watch(recorder, options.limits)
    server = ProxyServer(
        options.upstream,
        watch,
        host=options.host,
        port=options.port,
        limits=options.limits,
        openai_upstream=options.openai_upstream,
    )
    try:
        await server.start()
    except ProxyError as error:
        _say(f"ctxtui proxy: {error}", err=True)
        return EXIT_FAILED
    if _self_upstream(options, server.port):
        await server.aclose()
        return EXIT_USAGE
    _announce(server.url, options, recorder.folder if recorder is not None else None)
    if note is not None:
        _say(note, err=True)

    async def print_calls() -> None:
        async for event in watch.events():
            if isinstance(event, CallFinished):
                _say(describe_call(event.call))
            elif isinstance(event, ProxyNotice):
                _say(f"ctxtui proxy: {event.message}", err=True)

    printer = asyncio.create_task(print_calls())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await server.aclose()
        await watch.aclose()
        with contextlib.suppress(asyncio.CancelledError):
            await printer
    _stopped(len(watch.calls), recorder)
    return EXIT_OK
