"""The loopback fake's model of the API's prompt cache, cache diagnostics and thinking signatures.

Modelled on the API's documentation (prompt caching, cache diagnostics, extended/adaptive thinking)
and the installed SDK's types, which are the reference for every shape:

- `PromptCache`: prefixes in the API's cache order (tools -> system -> messages, each content block
  one block; a string content or system prompt one text block), keyed by the model and the blocks'
  JSON without their `cache_control` marks. Breakpoints are the blocks marked with `cache_control`
  and, with a top-level `cache_control`, the last block. A request reads the longest unexpired
  prefix an earlier request wrote, at a breakpoint or up to 20 blocks before one, and writes the
  prefix at each breakpoint; creation tokens are split by each breakpoint's TTL ("5m" default, or
  "1h"). An entry lives for its TTL from the start of the request that last read or wrote it; the
  clock is the test's (`FakeClock`). Sizes are JSON length // 4 tokens; `min_tokens` is the
  minimum cacheable prefix (0: any).
- `CacheDiagnostics`: a request that carries `diagnostics` has its fingerprint kept under the reply's
  id; with `previous_message_id` set, the reply's `diagnostics.cache_miss_reason` says where the
  request first diverges from that one (model, system, tools, or an earlier message changed rather
  than messages appended), `previous_message_not_found` for an unknown id, `unavailable` when only
  another prompt-affecting parameter (`thinking`, `tool_choice`) differs, and null when nothing
  diverged (independent of whether the cache hit, as the documentation says).
- `ThinkingSigner`: signs the thinking blocks of scripted replies for the request's model and checks
  every thinking / redacted_thinking block a request sends back: a changed text, signature or data,
  a block replayed to another model, or one outside an assistant message is refused with the API's
  400 ("messages.K.content.J: Invalid `signature` in `thinking` block").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
_SECRET = b"fakeapi-thinking-key"


class FakeClock:
    """A clock the test moves: `advance(seconds)`."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: strip_cache_control(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(item) for item in value]
    return value


def has_cache_control(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(has_cache_control(item) for item in value.values())
    if isinstance(value, list):
        return any(has_cache_control(item) for item in value)
    return False


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """A crude, deterministic input-token estimate for a request body (about 4 characters a token)."""
    relevant = {key: body.get(key) for key in ("system", "messages", "tools") if key in body}
    return max(1, len(json.dumps(relevant, ensure_ascii=False)) // 4)


def _ttl(mark: Any) -> str:
    ttl = mark.get("ttl") if isinstance(mark, dict) else None
    return ttl if ttl in TTL_SECONDS else "5m"


def cache_blocks(body: Mapping[str, Any]) -> list[tuple[Any, str | None]]:
    """The request's blocks in the API's cache order (tools, system, messages), each with the TTL of
    its `cache_control` breakpoint (None: no breakpoint). String content counts as one text block."""
    blocks: list[tuple[Any, str | None]] = []
    for tool in body.get("tools") or []:
        mark = tool.get("cache_control") if isinstance(tool, dict) else None
        blocks.append((tool, _ttl(mark) if mark else None))
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append(({"type": "text", "text": system}, None))
    elif isinstance(system, list):
        for block in system:
            mark = block.get("cache_control") if isinstance(block, dict) else None
            blocks.append((block, _ttl(mark) if mark else None))
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in items:
            mark = block.get("cache_control") if isinstance(block, dict) else None
            blocks.append(({"role": role, "block": block}, _ttl(mark) if mark else None))
    top = body.get("cache_control")
    if top and blocks and blocks[-1][1] is None:
        blocks[-1] = (blocks[-1][0], _ttl(top))
    return blocks


@dataclass(frozen=True)
class CacheUse:
    """What one request did with the cache, in tokens: read, and written per TTL."""

    read: int = 0
    written_5m: int = 0
    written_1h: int = 0

    @property
    def creation(self) -> int:
        return self.written_5m + self.written_1h


class PromptCache:
    """A small, deterministic stand-in for the API's prompt cache (see the module docstring)."""

    LOOKBACK = 20

    def __init__(self, clock: Callable[[], float] | None = None, min_tokens: int = 0) -> None:
        self.clock: Callable[[], float] = clock or time.monotonic
        self.min_tokens = min_tokens
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, str]] = {}  # prefix key -> (expires at, ttl)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def use(self, body: Mapping[str, Any]) -> tuple[int, int]:
        """(read, creation) tokens for ``body``, remembering what it writes."""
        used = self.account(body)
        return used.read, used.creation

    def account(self, body: Mapping[str, Any]) -> CacheUse:
        """What ``body`` reads and writes now (its entries refreshed or written as it goes)."""
        if not has_cache_control(body):
            return CacheUse()
        blocks = cache_blocks(body)
        breakpoints = [index for index, (_, ttl) in enumerate(blocks) if ttl is not None]
        if not breakpoints:
            return CacheUse()
        digest = hashlib.sha256(str(body.get("model")).encode())
        keys: list[str] = []
        sizes: list[int] = []
        chars = 0
        for block, _ in blocks:
            text = json.dumps(strip_cache_control(block), ensure_ascii=False, sort_keys=True)
            digest.update(text.encode())
            keys.append(digest.hexdigest())
            chars += len(text)
            sizes.append(chars // 4)
        total = estimate_tokens(body)
        now = self.clock()
        with self._lock:
            hit = -1
            for point in breakpoints:
                for index in range(point, max(point - self.LOOKBACK, -1), -1):
                    entry = self._entries.get(keys[index])
                    if entry is not None and entry[0] > now:
                        hit = max(hit, index)
                        break
            if hit >= 0:  # a read refreshes the entry's lifetime
                self._entries[keys[hit]] = (now + TTL_SECONDS[self._entries[keys[hit]][1]], self._entries[keys[hit]][1])
            read = min(sizes[hit], total) if hit >= 0 else 0
            written = {"5m": 0, "1h": 0}
            covered = read
            for point in breakpoints:
                ttl = blocks[point][1] or "5m"
                if sizes[point] < self.min_tokens:
                    continue
                self._entries[keys[point]] = (now + TTL_SECONDS[ttl], ttl)
                if point > hit:
                    size = min(sizes[point], total)
                    written[ttl] += max(size - covered, 0)
                    covered = max(covered, size)
        return CacheUse(read, written["5m"], written["1h"])


# --------------------------------------------------------------------------- diagnostics


def _fingerprint(body: Mapping[str, Any]) -> dict[str, Any]:
    def canon(value: Any) -> str:
        return json.dumps(strip_cache_control(value), ensure_ascii=False, sort_keys=True)

    messages = [canon(message) for message in body.get("messages") or []]
    return {
        "model": body.get("model"),
        "system": canon(body.get("system")),
        "tools": canon(body.get("tools")),
        "messages": messages,
        "sizes": [len(text) // 4 for text in messages],
        "prefix": (len(canon(body.get("system"))) + len(canon(body.get("tools")))) // 4,
        "other": canon({key: body.get(key) for key in ("thinking", "tool_choice")}),
    }


class CacheDiagnostics:
    """The API's cache diagnostics (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prints: dict[str, dict[str, Any]] = {}
        self.pending = False
        """Answer `{"cache_miss_reason": null}` (the comparison had not finished) instead of a reason."""

    def answer(self, body: Mapping[str, Any], message_id: str) -> tuple[bool, dict[str, Any] | None]:
        """(whether the reply carries the field, its `diagnostics` value) for a request; keeps its
        fingerprint under `message_id` when it opted in."""
        opted = body.get("diagnostics")
        if not isinstance(opted, dict):
            return False, None
        now = _fingerprint(body)
        with self._lock:
            self._prints[message_id] = now
            previous_id = opted.get("previous_message_id")
            before = self._prints.get(previous_id) if isinstance(previous_id, str) else None
        if previous_id is None:
            return True, None
        if before is None:
            return True, {"cache_miss_reason": {"type": "previous_message_not_found"}}
        reason = self._compare(before, now)
        if reason is None:
            return True, None
        if self.pending:
            return True, {"cache_miss_reason": None}
        return True, {"cache_miss_reason": reason}

    @staticmethod
    def _compare(before: dict[str, Any], now: dict[str, Any]) -> dict[str, Any] | None:
        whole = before["prefix"] + sum(before["sizes"])
        for part in ("model", "system", "tools"):
            if before[part] != now[part]:
                return {"type": f"{part}_changed", "cache_missed_input_tokens": whole}
        old, new = before["messages"], now["messages"]
        for index, text in enumerate(old):
            if index >= len(new) or new[index] != text:
                missed = sum(before["sizes"][index:])
                return {"type": "messages_changed", "cache_missed_input_tokens": missed}
        if before["other"] != now["other"]:
            return {"type": "unavailable"}
        return None


# --------------------------------------------------------------------------- thinking


def _mac(*parts: str) -> str:
    return base64.b64encode(hmac.new(_SECRET, "\0".join(parts).encode(), hashlib.sha256).digest()).decode()


class ThinkingError(Exception):
    """A thinking block the API would refuse; the message is the API's."""


class ThinkingSigner:
    """Signs thinking blocks for a model and checks those a request sends back."""

    def signature(self, model: str, thinking: str) -> str:
        return _mac("thinking", model, thinking)

    def redacted(self, model: str, seed: str) -> str:
        payload = base64.b64encode(seed.encode()).decode()
        return f"{payload}.{_mac('redacted', model, payload)}"

    def sign(self, model: str, block: Mapping[str, Any]) -> dict[str, Any]:
        """A scripted thinking block as the API returns it (signature or data filled in)."""
        if block.get("type") == "thinking":
            return {"type": "thinking", "thinking": str(block.get("thinking", "")),
                    "signature": block.get("signature") or self.signature(model, str(block.get("thinking", "")))}
        return {"type": "redacted_thinking", "data": block.get("data") or self.redacted(model, str(block.get("seed", "x")))}

    def check(self, body: Mapping[str, Any]) -> None:
        """Raise ThinkingError for the first thinking block of the request the API would refuse."""
        model = str(body.get("model"))
        for index, message in enumerate(body.get("messages") or []):
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, list):
                continue
            for block_index, block in enumerate(content):
                kind = block.get("type") if isinstance(block, dict) else None
                if kind not in ("thinking", "redacted_thinking"):
                    continue
                where = f"messages.{index}.content.{block_index}"
                if message.get("role") != "assistant":
                    raise ThinkingError(f"{where}: `{kind}` blocks are only allowed in assistant messages")
                if kind == "thinking":
                    text, signature = block.get("thinking"), block.get("signature")
                    if not isinstance(text, str) or signature != self.signature(model, text):
                        raise ThinkingError(f"{where}: Invalid `signature` in `thinking` block")
                else:
                    data = block.get("data")
                    payload, _, mac = str(data).partition(".")
                    if not isinstance(data, str) or mac != _mac("redacted", model, payload):
                        raise ThinkingError(f"{where}: Invalid `data` in `redacted_thinking` block")


def thinking_on(body: Mapping[str, Any]) -> bool:
    """The request asks for thinking (adaptive or enabled): replies then carry their thinking blocks."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("adaptive", "enabled")


def model_capabilities(thinking_types: tuple[str, ...]) -> dict[str, Any]:
    """A Models API `capabilities` object (every key, as the API sends them) for a model that accepts
    the given `thinking.type` values."""
    def support(flag: bool) -> dict[str, bool]:
        return {"supported": flag}

    return {
        "batch": support(True), "citations": support(True), "code_execution": support(False),
        "context_management": {"supported": False, "clear_thinking_20251015": None, "clear_tool_uses_20250919": None,
                               "compact_20260112": None},
        "effort": {"supported": False, "high": support(False), "low": support(False), "max": support(False),
                   "medium": support(False), "xhigh": None},
        "image_input": support(True), "pdf_input": support(True),
        "server_tools": {"supported": False, "code_execution": support(False), "web_search": support(False)},
        "structured_outputs": support(True),
        "thinking": {"supported": any(kind in thinking_types for kind in ("adaptive", "enabled")),
                     "types": {kind: support(kind in thinking_types)
                               for kind in ("adaptive", "between_tools", "disabled", "enabled")}},
    }


__all__ = [
    "TTL_SECONDS",
    "CacheDiagnostics",
    "CacheUse",
    "FakeClock",
    "PromptCache",
    "ThinkingError",
    "ThinkingSigner",
    "cache_blocks",
    "estimate_tokens",
    "has_cache_control",
    "model_capabilities",
    "strip_cache_control",
    "thinking_on",
]
