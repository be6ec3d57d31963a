"""What the proxy saw, call by call: the records a view (and `--headless`) consumes.

A `ProxyCall` is one `/v1/messages` exchange: the request (its messages, system, tools, model), the
conversation it belongs to, what changed since that conversation's previous request (a
`RequestDiff` with exact splices), the client markers in it, and once it ended its status, the
reply, usage, cost and timings. Calls are immutable: `CallStarted` carries the call as the request
went out, `CallFinished` the same call completed. `Conversation` groups the calls of one client
conversation, keyed by its system prompt and first user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from core.client_markers import FoundMarker, is_compaction_summary
from core.proxy.diff import RequestDiff, diff_messages, loose_equal
from core.text import one_line, visible
from core.usage.cache import CacheTracker
from core.usage.fingerprint import Fingerprinter, PrefixPrint
from core.usage.prices import Usage
from core.usage.timeline import CLIENT_COMPACTION as CLIENT_COMPACTION  # re-exported for core.proxy.watch
from core.values.miss import CacheMiss
from core.values.samples import ContextSample
from core.values.splice import Splice

Message = dict[str, Any]
Outcome = Literal["pending", "complete", "client_gone", "upstream_cut", "unreachable", "stopped"]


@dataclass(frozen=True)
class Timings:
    """Seconds from the request's arrival to the upstream's headers, its first body byte, and the end."""

    headers: float | None = None
    first_byte: float | None = None
    total: float | None = None


@dataclass(frozen=True)
class ProxyCall:
    """One `/v1/messages` exchange through the proxy (or an OpenAI one, `wire`, converted to its shape).

    `number` counts every call in arrival order; `conversation` numbers conversations in the order
    they appeared and `turn` counts calls within one. `messages` are the request's (equal messages
    are the previous request's own objects, see core/proxy/diff.py). Reply fields are None until
    `outcome` leaves "pending".
    """

    id: str
    number: int
    started: float  # epoch seconds
    user_agent: str | None
    conversation: int
    conversation_key: str
    turn: int
    model: str | None
    stream: bool
    messages: list[Message]
    system: Any = None
    tools: list[Any] | None = None
    params: dict[str, Any] = field(
        default_factory=dict
    )  # every other top-level request field (thinking, ...)
    chars: int = 0  # estimate_chars(messages)
    diff: RequestDiff = field(default_factory=RequestDiff)
    markers: tuple[FoundMarker, ...] = ()
    body_error: str | None = None  # the body was not a JSON request (it was forwarded as it was)
    record: str | None = None  # the record file, when recording
    outcome: Outcome = "pending"
    status: int | None = None
    reply: Message | None = None
    error: dict[str, Any] | None = None  # the API's error object (an error body or an `error` event)
    usage: Usage | None = None
    cost: float | None = None
    timings: Timings = field(default_factory=Timings)
    complete: bool = False  # the reply ended as the API ends one (message_stop, or a whole JSON body)
    prefix: PrefixPrint | None = None  # the request's cacheable prefix, block by block
    cache_miss: CacheMiss | None = None  # why it could not read the conversation's last cached prefix
    wire: str = "messages"  # the wire format: "messages", or OpenAI's "chat" or "responses" (converted)

    @property
    def finished(self) -> bool:
        return self.outcome != "pending"


@dataclass(frozen=True)
class CallStarted:
    """A `/v1/messages` request went out to the upstream."""

    call: ProxyCall


@dataclass(frozen=True)
class CallFinished:
    """An exchange ended (answered, failed, or cut): the call with its reply, usage, cost and timings."""

    call: ProxyCall


@dataclass(frozen=True)
class ProxyNotice:
    """Something about the proxy itself worth saying (a record that could not be written)."""

    message: str


ProxyEvent = CallStarted | CallFinished | ProxyNotice


@dataclass
class Conversation:
    """The calls of one client conversation (a system prompt and a first user message)."""

    number: int
    key: str
    label: str  # the first user message, on one line, cut
    system_key: str
    calls: list[str] = field(default_factory=list)  # call ids, oldest first
    latest: ProxyCall | None = None
    latest_sizes: list[int] = field(default_factory=list)  # message_chars of latest.messages, in order
    aliases: set[str] = field(default_factory=set)  # keys it continued under after a compaction
    cache: CacheTracker = field(default_factory=CacheTracker)  # the prefix its last answered call cached
    prints: Fingerprinter = field(default_factory=Fingerprinter)


def first_diff(messages: Sequence[Any]) -> RequestDiff:
    """A conversation's first request: every message added (one splice onto an empty history)."""
    return RequestDiff(
        added=tuple(range(len(messages))), changes=(Splice(0, 0, tuple(messages)),) if messages else ()
    )


def diff_request(
    previous: ProxyCall, messages: list[Any], system: Any, tools: Any, model: str | None
) -> tuple[list[Any], RequestDiff]:
    """A request against an earlier call of its conversation: its messages (equal ones interned as the
    earlier call's objects) and the diff."""
    result = diff_messages(previous.messages, messages)
    system_changed = not loose_equal(previous.system, system)
    tools_changed = not loose_equal(previous.tools, tools)
    first_change = (
        "tools"
        if tools_changed
        else "system"
        if system_changed
        else None
        if result.first_change is None
        else f"messages.{result.first_change}"
    )
    opens_compacted = bool(messages) and is_compaction_summary(messages[0])
    same_opening = (
        bool(previous.messages) and loose_equal(previous.messages[0], messages[0]) if messages else False
    )
    return result.interned, RequestDiff(
        previous=previous.id,
        changes=result.changes,
        added=result.added,
        removed=result.removed,
        changed=result.changed,
        remarked=result.remarked,
        system_changed=system_changed,
        tools_changed=tools_changed,
        model_changed=previous.model != model,
        first_change=first_change,
        compacted=opens_compacted and not same_opening,
    )


def compare_calls(earlier: ProxyCall, later: ProxyCall) -> RequestDiff:
    """What changed from `earlier` to `later`, any two calls (a view's diff of two chosen calls).

    For a call and the one before it in its conversation this is `later.diff` again; other pairs
    are aligned here (in full when the history was edited: run it off the event loop for long ones).
    """
    if later.diff.previous == earlier.id:
        return later.diff
    return diff_request(earlier, later.messages, later.system, later.tools, later.model)[1]


def call_sample(call: ProxyCall, previous: ProxyCall | None = None) -> ContextSample:
    """The call as a timeline sample: what was sent, the reply's usage and cost (None until it ended).

    `call` is the call's number in its conversation (`turn`). When the client compacted its history
    since `previous` (the conversation's call before it), the sample names that as its step and
    `chars_before` is what `previous` sent.
    """
    steps: tuple[str, ...] = ()
    saved: tuple[int, ...] = ()
    before = call.chars
    if call.diff.compacted and previous is not None:
        steps, saved = (CLIENT_COMPACTION,), (max(previous.chars - call.chars, 0),)
        before = max(previous.chars, call.chars)
    usage = call.usage
    failed = call.finished and (call.outcome != "complete" or (call.status or 0) >= 400)
    return ContextSample(
        call=call.turn,
        chars_before=before,
        chars_after=call.chars,
        steps=steps,
        saved=saved,
        messages=len(call.messages),
        input_tokens=usage.figure("input_tokens") if usage is not None else None,
        cache_read_tokens=usage.figure("cache_read_tokens") if usage is not None else None,
        cache_creation_tokens=usage.figure("cache_creation_tokens") if usage is not None else None,
        output_tokens=usage.figure("output_tokens") if usage is not None else None,
        cost=call.cost,
        error=failure(call) if failed else None,
        cache_miss=call.cache_miss if usage is not None and not failed else None,
    )


def describe_call(call: ProxyCall, clock: str | None = None) -> str:
    """One line per call, as `ctxtui proxy --headless` prints it (safe for a terminal)."""
    import time

    parts = [
        clock or time.strftime("%H:%M:%S", time.localtime(call.started)),
        f"#{call.number}",
        call.model or "(no model)",
        f"conv {call.conversation}.{call.turn}",
        f"{len(call.messages)} msgs",
    ]
    if call.usage is not None:
        usage = call.usage

        def shown(name: str) -> str:  # an unknown figure (OpenAI's cache writes) is "?", never 0
            value = usage.figure(name)
            return "?" if value is None else f"{value:,}"

        parts.append(
            f"in {shown('input_tokens')} cache r {shown('cache_read_tokens')} "
            f"w {shown('cache_creation_tokens')} out {shown('output_tokens')}"
        )
    parts.append(f"${call.cost:.4f}" if call.cost is not None else "$?")
    if call.outcome != "complete" or (call.status or 0) >= 400:
        parts.append(failure(call))
    parts.append(call.diff.describe())
    return visible(" · ".join(parts))


def failure(call: ProxyCall) -> str:
    """How a call that did not end well ended, in a few words."""
    if call.outcome == "unreachable":
        return "502 upstream unreachable"
    if call.outcome == "client_gone":
        return "client hung up"
    if call.outcome == "upstream_cut":
        return "upstream cut the reply"
    if call.outcome == "stopped":
        return "proxy stopped"
    error = call.error or {}
    kind = error.get("type") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    text = " ".join(str(part) for part in (call.status, kind, message) if part)
    return one_line(text, 120) or f"status {call.status}"
