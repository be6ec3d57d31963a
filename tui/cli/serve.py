"""`ctxtui --serve`: the app in a browser through textual-serve (the optional `serve` extra).

Each browser tab runs its own `ctxtui` process with the same flags (less the serve ones). The
server binds to loopback unless told otherwise, says where it listens, and warns when the host is
not loopback: anyone who reaches the port drives an agent that runs commands in the workdir.
"""

from __future__ import annotations

import ipaddress
import shlex
import sys
from collections.abc import Sequence

SERVE_FLAGS_WITH_VALUE = ("--host", "--port")
MISSING_EXTRA = "ctxtui: --serve needs textual-serve: pip install 'ctxtui[serve]'"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def app_arguments(argv: Sequence[str]) -> list[str]:
    """The command line without --serve, --host and --port: what each browser session runs."""
    kept: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        if item == "--serve":
            continue
        if item in SERVE_FLAGS_WITH_VALUE:
            skip = True
            continue
        if item.startswith(tuple(flag + "=" for flag in SERVE_FLAGS_WITH_VALUE)):
            continue
        kept.append(item)
    return kept


def app_command(argv: Sequence[str]) -> str:
    return shlex.join([sys.executable, "-m", "tui.cli", *app_arguments(argv)])


def serve(argv: Sequence[str], host: str, port: int) -> int:
    """Serve until interrupted; 2 when the extra is missing."""
    try:
        from textual_serve.server import Server
    except ImportError:
        print(MISSING_EXTRA, file=sys.stderr, flush=True)
        return 2
    if is_loopback(host):
        print(f"ctxtui: serving on http://{host}:{port} (loopback only: other machines cannot connect)",
              file=sys.stderr, flush=True)
    else:
        print(f"ctxtui: warning: serving on {host}:{port}, which is not loopback: anyone who can reach it "
              "drives an agent that runs commands in this workdir", file=sys.stderr, flush=True)
    server = Server(app_command(argv), host=host, port=port, title="ctxtui")
    server.serve()
    return 0
