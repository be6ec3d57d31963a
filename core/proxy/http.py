"""What the proxy does to headers and addresses: which headers travel, which are kept, which are secret.

Pure functions, no I/O. The rules:
- Forwarded both ways: every end-to-end header as received. Hop-by-hop headers (RFC 9110 7.6.1:
  Connection and the headers it names, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding,
  Upgrade) belong to one connection and are dropped; Host and Content-Length are set anew for the
  other connection (the body is the same bytes, so the length is the same).
- Recorded: an allow-list only (the user agent, the API version and betas, the reply's content
  type, request id, retry and rate-limit headers), so a credential can never reach the disk
  through a header.
- Secret: the values of credential headers (authorization, x-api-key, cookies, anything named like
  a key, token or secret); core/proxy/redact.py scrubs them from everything the proxy shows or writes.
- Hops: each forwarded request carries `X-Ctxtui-Hops`, the ids of the ctxtui proxies it went
  through; a proxy refuses a request that already carries its own id, or too many (a loop of proxies).
- Paths: only a path that stays under `/v1` once its escapes are decoded and its dot segments
  resolved is forwarded, and it is forwarded in that resolved form (what was checked is what is sent).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, unquote, urlsplit

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
SET_PER_CONNECTION = frozenset({"host", "content-length"})

RECORDED_REQUEST_HEADERS = ("user-agent", "anthropic-version", "anthropic-beta", "content-type", "x-app")
RECORDED_RESPONSE_HEADERS = (
    "content-type",
    "content-encoding",
    "request-id",
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
)
RECORDED_RESPONSE_PREFIXES = ("anthropic-ratelimit-",)

_SECRET_NAMES = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"})
_SECRET_WORDS = ("key", "token", "secret", "auth", "cookie", "password", "session")
MIN_SECRET_LENGTH = 6  # shorter values are not scrubbed (they would match ordinary text)


def _connection_tokens(headers: Iterable[tuple[str, str]]) -> set[str]:
    tokens: set[str] = set()
    for name, value in headers:
        if name.lower() == "connection":
            tokens.update(token.strip().lower() for token in value.split(",") if token.strip())
    return tokens


def forwarded_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers that travel on to the other side: all but hop-by-hop, Host and Content-Length.

    Names keep their case and repeated headers stay repeated, in order.
    """
    items = list(headers)
    dropped = HOP_BY_HOP | SET_PER_CONNECTION | _connection_tokens(items)
    return [(name, value) for name, value in items if name.lower() not in dropped]


def recorded_request_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The request headers a record keeps (an allow-list: never a credential)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        if lower in RECORDED_REQUEST_HEADERS:
            kept[lower] = f"{kept[lower]}, {value}" if lower in kept else value
    return kept


def recorded_response_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The response headers a record keeps: content type, request id, retry and rate-limit headers."""
    kept: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        if lower in RECORDED_RESPONSE_HEADERS or lower.startswith(RECORDED_RESPONSE_PREFIXES):
            kept[lower] = f"{kept[lower]}, {value}" if lower in kept else value
    return kept


def is_secret_header(name: str) -> bool:
    lower = name.lower()
    return lower in _SECRET_NAMES or any(word in lower for word in _SECRET_WORDS)


def secret_values(headers: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The credential values in `headers`: whole values, the token after an auth scheme, cookie values."""
    found: set[str] = set()
    for name, value in headers:
        if not is_secret_header(name):
            continue
        found.add(value.strip())
        scheme, _, token = value.strip().partition(" ")
        if token and scheme.isalpha():
            found.add(token.strip())
        if "cookie" in name.lower():
            for part in value.split(";"):
                _, _, cookie = part.partition("=")
                found.add(cookie.strip())
    return frozenset(value for value in found if len(value) >= MIN_SECRET_LENGTH)


# --- hops ----------------------------------------------------------------------------------------

HOPS_HEADER = "X-Ctxtui-Hops"
_HOP_ID = re.compile(r"[0-9a-f]{16}")


def hops_of(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The proxy ids a request went through, oldest first (every `X-Ctxtui-Hops` header, comma-separated)."""
    found: list[str] = []
    for name, value in headers:
        if name.lower() == HOPS_HEADER.lower():
            found.extend(part.strip() for part in value.split(",") if part.strip())
    return found


def with_hop(headers: Iterable[tuple[str, str]], hops: list[str], proxy_id: str) -> list[tuple[str, str]]:
    """`headers` with the hops header replaced by one that ends with `proxy_id` (ids kept only when well formed)."""
    kept = [(name, value) for name, value in headers if name.lower() != HOPS_HEADER.lower()]
    chain = [hop if _HOP_ID.fullmatch(hop) else "unknown" for hop in hops]
    return [*kept, (HOPS_HEADER, ", ".join([*chain, proxy_id]))]


# --- paths ----------------------------------------------------------------------------------------

_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_DECODE_ROUNDS = 3  # a path still changing after this many rounds of decoding is refused
_SEGMENT_SAFE = "!$&'()*+,;=:@-._~"  # what a path segment may hold unescaped (RFC 3986 pchar)


def api_path(target: str) -> str | None:
    """The request target's path as the proxy forwards it (query kept as sent), or None when it leaves `/v1`.

    Escapes are decoded (again while a round changes it, so `%252e` counts as a dot too), `\\` and
    encoded slashes count as slashes, dot segments are resolved (RFC 3986 5.2.4), and the result must
    be `/v1` or lie under `/v1/`. The path that is forwarded is that resolved one, each segment escaped
    again: an upstream that decodes or resolves differently still gets the path that was checked.
    """
    path, mark, query = target.partition("?")
    path = path.partition("#")[0]
    if not path.startswith("/"):
        return None  # "*", or an absolute URL: never a path to forward
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote(path, errors="surrogateescape")
        if decoded == path:
            break
        path = decoded
    else:
        return None
    segments: list[str] = []
    for segment in path.replace("\\", "/").split("/")[1:]:
        if segment == "..":
            if len(segments) <= 1:
                return None  # above /v1 (or above the root)
            segments.pop()
        elif segment != ".":
            segments.append(segment)
    if not segments or segments[0] != "v1":
        return None
    if path.endswith(("/.", "/..")):
        segments.append("")  # "/v1/messages/." resolves to "/v1/messages/"
    resolved = "/" + "/".join(
        quote(segment, safe=_SEGMENT_SAFE, errors="surrogateescape") for segment in segments
    )
    return resolved + (mark + query if mark else "")


# --- addresses ------------------------------------------------------------------------------------


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost (the only hosts the proxy listens on or answers to)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_header_is_loopback(value: str | None) -> bool:
    """A Host header that names a loopback address (absent counts as loopback: HTTP/1.0 clients)."""
    if not value:
        return True
    host = value.strip()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return is_loopback_host(host)


class BadUpstream(ValueError):
    """The upstream URL is not an http(s) URL with a host."""


def normalize_upstream(url: str) -> str:
    """`url` without a trailing slash, checked: http or https, a host, no query or fragment."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadUpstream(f"{url!r} is not an http(s) URL with a host")
    if parts.query or parts.fragment:
        raise BadUpstream(f"{url!r}: an upstream takes no query or fragment")
    try:
        parts.port  # noqa: B018 (validates the port)
    except ValueError as error:
        raise BadUpstream(f"{url!r}: {error}") from None
    return url.strip().rstrip("/")


def upstream_secrets(url: str) -> frozenset[str]:
    """The user and password an upstream URL carries (never shown: scrubbed like a request's credentials)."""
    parts = urlsplit(url)
    found = {unquote(value) for value in (parts.username, parts.password) if value}
    return frozenset(value for value in found if len(value) >= MIN_SECRET_LENGTH)


def shown_upstream(url: str) -> str:
    """The upstream as it may be printed or recorded: scheme, host and port, no user or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def upstream_is(url: str, host: str, port: int) -> bool:
    """Whether `url` points at host:port itself (a proxy forwarding to itself would loop)."""
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return (
        (parts.port or default) == port and is_loopback_host(parts.hostname or "") and is_loopback_host(host)
    )


def header_items(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)
