"""`ctxtui proxy`: the capture proxy's command line (the server itself is core/proxy/).

Prints `listening on http://127.0.0.1:P` as its first line, then where it records and where it
forwards, then one line per call. Until the live view exists, the default is the same line per
call as `--headless` (and it says so on stderr). Ctrl-C or SIGTERM stops it; exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.text import visible

DEFAULT_PORT = 8788
DEFAULT_UPSTREAM = "https://api.anthropic.com"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_proxy_parser(commands: Any) -> None:
    """The `proxy` sub-command's flags."""
    proxy = commands.add_parser(
        "proxy", help="watch any Messages-API client (Claude Code, the SDKs) through a loopback proxy",
        description="Forward /v1/... requests to the upstream unchanged, record each /v1/messages exchange, "
        "and print one line per call. Point a client at it with ANTHROPIC_BASE_URL=http://127.0.0.1:PORT.")
    proxy.add_argument("--port", dest="proxy_port", default=str(DEFAULT_PORT), metavar="P",
                       help=f"the port to listen on (default {DEFAULT_PORT}; 0 picks a free one)")
    proxy.add_argument("--host", dest="proxy_host", default="127.0.0.1", metavar="H",
                       help="a loopback address to listen on (default 127.0.0.1; any other host is refused)")
    proxy.add_argument("--upstream", default=None, metavar="URL",
                       help=f"where requests go (default $ANTHROPIC_BASE_URL, else {DEFAULT_UPSTREAM})")
    proxy.add_argument("--workdir", type=Path, default=argparse.SUPPRESS,
                       help="where the recordings go: WORKDIR/.ctxtui/proxy/ (default: the current directory)")
    proxy.add_argument("--headless", action="store_true", help="print one line per call (no live view)")
    proxy.add_argument("--no-record", action="store_true", help="keep nothing on disk")


class ProxyUsageError(Exception):
    """A bad flag: one line, exit 2."""


@dataclass(frozen=True)
class ProxyOptions:
    host: str
    port: int
    upstream: str
    workdir: Path
    headless: bool
    record: bool


def proxy_options(args: argparse.Namespace, environ: dict[str, str] | None = None) -> ProxyOptions:
    """The checked options; ProxyUsageError (one line) for a bad host, port, upstream or workdir."""
    from core.proxy.http import BadUpstream, is_loopback_host, normalize_upstream

    environ = dict(os.environ) if environ is None else environ
    host = str(args.proxy_host)
    if not is_loopback_host(host):
        raise ProxyUsageError(f"--host {host}: the proxy listens on loopback only (127.0.0.1, ::1 or localhost)")
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
    workdir = Path(args.workdir) if getattr(args, "workdir", None) is not None else Path.cwd()
    record = not args.no_record
    if record and not workdir.is_dir():
        raise ProxyUsageError(f"--workdir {workdir} is not a directory")
    if record and not os.access(workdir, os.W_OK):
        raise ProxyUsageError(f"--workdir {workdir} is not writable (the recordings go there; or --no-record)")
    return ProxyOptions(host, port, upstream, workdir.resolve(), bool(args.headless), record)


def _say(line: str, *, err: bool = False) -> None:
    print(visible(line), file=sys.stderr if err else sys.stdout, flush=True)


def run_proxy(args: argparse.Namespace) -> int:
    try:
        options = proxy_options(args)
    except ProxyUsageError as error:
        _say(f"ctxtui proxy: error: {error}", err=True)
        return EXIT_USAGE
    return asyncio.run(serve_proxy(options))


async def serve_proxy(options: ProxyOptions) -> int:
    """Serve until SIGINT or SIGTERM, printing a line per call."""
    from core.proxy.calls import CallFinished, ProxyNotice, describe_call
    from core.proxy.http import shown_upstream, upstream_is
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
    watch = Watch(recorder)
    server = ProxyServer(options.upstream, watch, host=options.host, port=options.port)
    try:
        await server.start()
    except ProxyError as error:
        _say(f"ctxtui proxy: {error}", err=True)
        return EXIT_FAILED
    if upstream_is(options.upstream, options.host, server.port):
        await server.aclose()
        _say(f"ctxtui proxy: error: the upstream {shown_upstream(options.upstream)} is this proxy "
             "(unset ANTHROPIC_BASE_URL or pass --upstream)", err=True)
        return EXIT_USAGE
    _say(f"listening on {server.url}")
    if recorder is not None:
        _say(f"recording to {recorder.folder}{os.sep} (one file per call, 0600; --no-record keeps nothing)")
    else:
        _say("not recording (--no-record): nothing is written to disk")
    _say(f"forwarding to {shown_upstream(options.upstream)}")
    _say(f"start a client with ANTHROPIC_BASE_URL={server.url}")
    if not options.headless:
        _say("ctxtui proxy: the live view is not built yet; printing one line per call as --headless does",
             err=True)

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
    where = f" ({recorder.written} recorded in {recorder.folder})" if recorder is not None else ""
    _say(f"ctxtui proxy: stopped after {len(watch.calls)} call(s){where}", err=True)
    return EXIT_OK
