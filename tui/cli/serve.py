"""`ctxtui --serve`: the app in a browser through textual-serve (the optional `serve` extra).

Each browser tab runs its own ctxtui process with the flags parsed from this command line (less the
serve ones), started as `python -P -m tui.cli` so that the current directory, which may be the
workdir, is never put on `sys.path` (a workdir holding a `core/` or `tui/` package must not run).
Only the page this server printed may drive it (tui/cli/serve_guard.py): a per-run secret path
(the page, its WebSocket and its static files all live under it), the Host and Origin of every
request checked, and at most MAX_SESSIONS open tabs at once (a tab counts until its WebSocket
closes; its app is then told to quit, and killed after STOP_GRACE seconds). The page is ctxtui's
own (tui/cli/serve_page.py): no font or script from elsewhere. Nothing is logged per request (the
URL holds the secret); a warning or an error is one line. The socket is bound before anything is
printed, so a busy port or a bad address is one line and exit 2. The server binds to loopback
unless told otherwise and warns when the host is not loopback: anyone who reaches the port (and
knows the URL) drives an agent that runs commands in the workdir.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from core.jsonlines import parse_json
from core.text import one_line, visible
from tui.cli.serve_guard import Guard, is_loopback
from tui.cli.serve_page import content_security_policy, page
from tui.textual_private import app_process

MISSING_EXTRA = "ctxtui: --serve needs textual-serve: pip install 'ctxtui[serve]'"
MAX_SESSIONS = 4
STOP_GRACE = 5.0  # seconds a closed tab's app has to quit before it is killed
TOKEN_COOKIE = "ctxtui_serve"
EXIT_USAGE = 2
MOST_CELLS = 1_000  # a terminal size a tab may ask for, in columns or rows


class ServeError(Exception):
    """The server cannot start (a busy port, an address that does not resolve): one line, exit 2."""


def tab_arguments(args: argparse.Namespace) -> list[str]:
    """The flags each browser tab's ctxtui runs with, built from the parsed arguments (never from the raw
    command line, where `--serv --por 9` would survive a filter and start a server in every tab).
    Values are joined with `=`, so one that starts with `-` stays a value."""
    argv: list[str] = []
    if args.workdir is not None or not args.demo:  # a demo without --workdir makes its own folder per tab
        argv.append(f"--workdir={Path(args.workdir or Path.cwd()).resolve()}")
    if args.model:
        argv.append(f"--model={args.model}")
    argv.extend(f"--set={item}" for item in args.set or ())
    if args.offline:
        argv.append("--offline")
    if args.yes:
        argv.append("--yes")
    if args.demo:
        argv.append("--demo")
    if args.resume is True:
        argv.append("--resume")
    elif isinstance(args.resume, str):
        argv.append(f"--resume={args.resume}")
    return argv


def tab_command(args: argparse.Namespace) -> str:
    """The shell command textual-serve starts per tab: `exec` (the shell becomes the app, so the process
    the server stops or kills is the app itself, not a shell that leaves it running), this interpreter,
    `-P` (no current directory on sys.path), the installed `tui.cli` entry point, and the tab's flags."""
    return "exec " + shlex.join([sys.executable, "-P", "-m", "tui.cli", *tab_arguments(args)])


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket bound to host:port; ServeError (one line) when that is not possible."""
    if not 0 <= port <= 65_535:
        raise ServeError(f"--port {port} is out of range (1-65535, or 0 for a free port)")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as error:
        raise ServeError(f"--host {host}: cannot resolve it ({error})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as error:
        sock.close()
        reason = error.strerror or str(error)
        raise ServeError(f"cannot serve on {host}:{port}: {reason}") from None
    return sock


def serve(args: argparse.Namespace) -> int:
    """Serve until interrupted; 2 when the extra is missing or the socket cannot be bound."""
    try:
        from textual_serve.server import Server  # noqa: F401  (the check that the extra is installed)
    except ImportError:
        print(MISSING_EXTRA, file=sys.stderr, flush=True)
        return EXIT_USAGE
    try:
        sock = bind(args.host, args.port)
    except ServeError as error:
        print(f"ctxtui: error: {error}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    port = int(sock.getsockname()[1])
    guard = Guard(args.host, port)
    if is_loopback(args.host):
        print(
            f"ctxtui: serving on {guard.url()} (loopback only: other machines cannot connect; "
            "only this URL opens the app)",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(
            f"ctxtui: warning: serving on {args.host}:{port}, which is not loopback: anyone who can reach it "
            "and has the URL drives an agent that runs commands in this workdir",
            file=sys.stderr,
            flush=True,
        )
        print(f"ctxtui: open {guard.url()} (only this URL opens the app)", file=sys.stderr, flush=True)
    server = guarded_server(tab_command(args), guard, sock)
    server.serve()
    return 0


class _OneLine(logging.Formatter):
    """A log record as one line, `ctxtui: LOGGER: MESSAGE (ERROR)`: never a traceback on the console."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"ctxtui: {record.name}: {one_line(record.getMessage(), 300)}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f" ({type(error).__name__}: {one_line(str(error), 200)})"
        return visible(text)


def quiet_logging() -> None:
    """Warnings and errors only, one line each: no line per request (each URL holds the run's secret)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def _cells(text: str | None, default: int) -> int:
    """A terminal size from a query parameter: a whole number from 1 to MOST_CELLS, else `default`."""
    if text is None or not text.isdigit() or len(text) > 5:
        return default
    return min(max(int(text), 1), MOST_CELLS)


def guarded_server(command: str, guard: Guard, sock: socket.socket, max_sessions: int = MAX_SESSIONS) -> Any:
    """A textual-serve Server that answers only the guarded routes, on the socket already bound."""
    from aiohttp import WSMsgType, web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server

    class GuardedServer(Server):
        """textual-serve's server with ctxtui's routes: the page, its WebSocket and its static files under the
        secret path, every request's Host and Origin checked, downloads only for the page's own cookie,
        a cap on open tabs."""

        def __init__(self) -> None:
            super().__init__(command, host=guard.host, port=guard.port, title="ctxtui")
            self.tabs: set[web.WebSocketResponse] = set()
            self.apps: set[AppService] = set()  # the tabs' apps still running (or quitting)

        @property
        def sessions(self) -> int:
            """Open tabs: a WebSocket closed a moment ago (its app may still be quitting) no longer counts."""
            return sum(not websocket.closed for websocket in self.tabs)

        async def _make_app(self) -> web.Application:
            app = web.Application(middlewares=[self.check_origin])
            app.add_routes(
                [
                    web.get(f"/{guard.token}/", self.handle_index, name="index"),
                    web.get(f"/{guard.token}/ws", self.handle_websocket, name="websocket"),
                    web.get("/download/{key}", self.handle_download, name="download"),  # textual.js asks here
                    web.static(f"/{guard.token}/static", self.statics_path, name="static"),
                ]
            )
            app.on_shutdown.append(self._stop_all)
            return app

        @web.middleware
        async def check_origin(self, request: web.Request, handler: Any) -> web.StreamResponse:
            host = request.headers.get("Host")
            if not guard.host_allowed(host):
                return web.Response(
                    status=403, text="ctxtui: this server answers only at the address it printed\n"
                )
            if not guard.origin_allowed(request.headers.get("Origin"), host or ""):
                return web.Response(status=403, text="ctxtui: only the page this server served may connect\n")
            response: web.StreamResponse = await handler(request)
            return response

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            base = f"{request.host}/{guard.token}"
            response = web.Response(
                text=page(f"http://{base}/static/", f"ws://{base}/ws"), content_type="text/html"
            )
            response.set_cookie(TOKEN_COOKIE, guard.token, httponly=True, samesite="Strict", path="/")
            response.headers["Content-Security-Policy"] = content_security_policy(request.host)
            response.headers["Cache-Control"] = "no-store"
            response.headers["Referrer-Policy"] = "no-referrer"  # the secret path never leaves in a Referer
            response.headers["X-Content-Type-Options"] = "nosniff"
            return response

        async def handle_download(self, request: web.Request) -> web.StreamResponse:
            if not guard.token_matches(request.cookies.get(TOKEN_COOKIE)):
                return web.Response(
                    status=403, text="ctxtui: downloads are for the page this server served\n"
                )
            response: web.StreamResponse = await super().handle_download(request)
            return response

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """One tab: its app runs while its WebSocket is open; the tab stops counting the moment it closes."""
            if self.sessions >= max_sessions:
                raise web.HTTPServiceUnavailable(
                    text=f"ctxtui: at most {max_sessions} browser sessions at once; close one first\n"
                )
            websocket = web.WebSocketResponse(heartbeat=15)
            self.tabs.add(websocket)  # counted from here, so tabs opening together cannot pass the cap
            app: AppService | None = None

            async def close() -> None:  # the app asked to end (it quit)
                await websocket.close()

            try:
                await websocket.prepare(request)
                app = AppService(
                    command,
                    write_bytes=websocket.send_bytes,
                    write_str=websocket.send_str,
                    close=close,
                    download_manager=self.download_manager,
                )
                self.apps.add(app)
                await app.start(
                    _cells(request.query.get("width"), 80), _cells(request.query.get("height"), 24)
                )
                await self._relay(websocket, app)
            finally:
                self.tabs.discard(websocket)
                if not websocket.closed:
                    await websocket.close()
                if app is not None:
                    await self._stop(app)
            return websocket

        async def _relay(self, websocket: web.WebSocketResponse, app: AppService) -> None:
            """The browser's messages to the tab's app, until the tab closes; a message of another shape is
            ignored (never a traceback)."""
            async for message in websocket:
                if message.type != WSMsgType.TEXT:
                    continue
                envelope = parse_json(
                    message.data
                )  # core/jsonlines.py: not JSON or nested too deep is a BadLine
                if not isinstance(envelope, list) or len(envelope) < 1:
                    continue
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
                if kind == "stdin" and isinstance(data, str):
                    await app.send_bytes(data.encode("utf-8", "replace"))
                elif kind == "resize" and isinstance(data, dict):
                    width, height = data.get("width"), data.get("height")
                    if isinstance(width, int) and isinstance(height, int):
                        await app.set_terminal_size(
                            min(max(width, 1), MOST_CELLS), min(max(height, 1), MOST_CELLS)
                        )
                elif kind == "ping" and isinstance(data, str) and len(data) <= 100:
                    await websocket.send_json(["pong", data])
                elif kind == "blur":
                    await app.blur()
                elif kind == "focus":
                    await app.focus()

        async def _stop(self, app: AppService) -> None:
            """Tell the tab's app to quit; kill it if it has not within STOP_GRACE seconds."""
            try:
                await asyncio.wait_for(app.stop(), STOP_GRACE)
            except TimeoutError:
                process = app_process(app)  # textual-serve's handle on the tab's process
                if process is not None and process.returncode is None:
                    process.kill()
                    await process.wait()
            self.apps.discard(app)

        async def _stop_all(self, _: web.Application) -> None:
            """At shutdown, before the loop closes: every tab's app quits (or is killed), none is left behind."""
            await asyncio.gather(*(self._stop(app) for app in list(self.apps)), return_exceptions=True)

        async def on_startup(self, app: web.Application) -> None:
            """ctxtui printed its own line (with the secret URL) before binding; nothing more to say."""

        def serve(self, debug: bool = False) -> None:
            self.debug = debug
            quiet_logging()
            loop = asyncio.new_event_loop()
            for number in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(number, self.request_exit)
            web.run_app(
                self._make_app(),
                sock=sock,
                handle_signals=False,
                loop=loop,
                print=lambda *_: None,
                access_log=None,
            )

    return GuardedServer()
