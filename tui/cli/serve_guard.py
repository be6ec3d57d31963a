"""Who may talk to `ctxtui --serve`: the page it served, at the address it serves, and no one else.

A browser runs any page's scripts, and each of them may open a WebSocket to a port on this machine.
So every request must name the served origin in its Host header (a page whose domain was re-bound to
127.0.0.1, DNS rebinding, sends its own domain there and is refused); a request that carries an
Origin header (every browser's WebSocket and cross-site request does) must come from a page of that
same origin; and the page and its WebSocket live under a per-run secret path that only the URL
printed at start knows. Plain functions, so they are tested without a server.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from dataclasses import dataclass, field

WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(host: str) -> bool:
    if host.lower().rstrip(".") in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def split_host(header: str) -> tuple[str, int | None] | None:
    """A Host header's name (lower case, no brackets, no final dot) and port; None when malformed."""
    header = header.strip().lower()
    if not header or any(char.isspace() or char in "/@?#\\" for char in header):
        return None
    port: int | None = None
    if header.startswith("["):
        end = header.find("]")
        if end < 0:
            return None
        name, rest = header[1:end], header[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                return None
            port = _port(rest[1:])
            if port is None:
                return None
        return (name, port) if _is_ip(name) else None
    name, colon, tail = header.rpartition(":")
    if colon:
        port = _port(tail)
        if port is None or ":" in name:
            return None
    else:
        name = header
    name = name.rstrip(".")
    return (name, port) if name else None


def _port(text: str) -> int | None:
    if not text.isdigit() or len(text) > 5:
        return None
    value = int(text)
    return value if 0 < value < 65_536 else None


@dataclass(frozen=True)
class Guard:
    """The served origin (the address bound and its port) and the run's secret."""

    host: str
    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    def host_allowed(self, header: str | None) -> bool:
        """The Host header names this server: its port, and a name that reaches it without a foreign domain.

        Bound to a name or address: that one (plus `localhost` and loopback addresses when it is
        loopback). Bound to every address (0.0.0.0, ::): an IP literal, `localhost` or this machine's
        own names, never some other domain.
        """
        if header is None:
            return False
        parsed = split_host(header)
        if parsed is None:
            return False
        name, port = parsed
        if (port or 80) != self.port:
            return False
        bound = self.host.strip("[]").lower().rstrip(".")
        if name == bound:
            return True
        if bound in WILDCARD_HOSTS:
            return _is_ip(name) or name in LOOPBACK_NAMES or name in _own_names()
        if is_loopback(bound):
            return name in LOOPBACK_NAMES or (_is_ip(name) and ipaddress.ip_address(name).is_loopback)
        return False

    def origin_allowed(self, origin: str | None, host: str) -> bool:
        """No Origin (not a browser's script), or exactly the origin of the page this server served."""
        if origin is None:
            return True
        return hmac.compare_digest(origin.strip().lower().encode(), f"http://{host.strip().lower()}".encode())

    def token_matches(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    def url(self, port: int | None = None) -> str:
        """The URL to open: the served address (localhost for a wildcard bind) and the secret path."""
        host = "localhost" if self.host in WILDCARD_HOSTS else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{port or self.port}/{self.token}/"


def _own_names() -> frozenset[str]:
    names = {socket.gethostname(), socket.getfqdn()}
    return frozenset(name.lower().rstrip(".") for name in names if name)
