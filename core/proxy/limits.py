"""What one exchange through `ctxtui proxy` may hold in memory and on disk, and how many proxies it may cross.

Every byte from a client or an upstream is untrusted: a body is read only up to `request_bytes`, a
compressed body is inflated only up to `body_bytes` (a decompression bomb stops while inflating),
and a reply is kept for the recording and the live view only up to `reply_bytes` (the client still
gets every byte). The figures are settings (core/config.py: proxy_request_limit, proxy_body_limit,
proxy_reply_limit); `from_settings` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MIB = 1024 * 1024
MAX_HOPS = 8  # ctxtui proxies a request may pass through (a chain of two or three is normal, a loop is not)
MAX_PROBLEMS = 20  # notes kept per exchange (a reply of a million bad events is not a million notes)
MAX_BODY_PREVIEW = 4096  # characters of a request body that is not JSON kept in its record
MAX_BLOCKS = 100_000  # content blocks one reply may index (an index of 10**9 must not allocate 10**9 slots)


@dataclass(frozen=True)
class ProxyLimits:
    """The bounds of one exchange, in bytes (see the module's docstring)."""

    request_bytes: int = 256 * MIB
    body_bytes: int = 32 * MIB
    reply_bytes: int = 32 * MIB

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> ProxyLimits:
        """The limits from resolved settings (`ResolvedConfig.top`); a missing key keeps its default."""
        base = cls()
        return cls(
            request_bytes=int(values.get("proxy_request_limit", base.request_bytes)),
            body_bytes=int(values.get("proxy_body_limit", base.body_bytes)),
            reply_bytes=int(values.get("proxy_reply_limit", base.reply_bytes)),
        )


def capped(problems: list[str], limit: int = MAX_PROBLEMS) -> list[str]:
    """`problems` with at most `limit` entries, the rest counted in a last one."""
    if len(problems) <= limit:
        return problems
    return [*problems[:limit], f"... and {len(problems) - limit:,} more"]
