"""The proxy's model of what it saw: exchanges in, `ProxyCall`s out, as an async stream of events.

The server hands over each `/v1/messages` exchange (and each OpenAI one, `/v1/chat/completions` and
`/v1/responses`, whose request and reply are converted to the Messages API's shape for the model by
core/proxy/openai.py, and recorded as sent) twice, without waiting: when the request goes
out (`started`) and when it has ended (`finished`). One worker task takes them in that order, so a
call's diff is always against the request before it in its conversation; the parsing, diffing,
reassembly and record writing run in a thread, never on the event loop that forwards bytes.

A view consumes `async for event in watch.events()`: first the calls seen so far (each as
`CallStarted`, then `CallFinished` if it ended), then every new event as it happens.

What comes in is untrusted and enters the model once, checked: a request body is inflated and
recorded only up to the body limit, a reply is read only from the part the server kept (its limit),
every text passes the exchange's `Redactor` (so no credential reaches a record, a `--headless` line,
the view or a notice), and the reply's usage figures are checked before anything prices them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.client_markers import find_client_markers, is_compaction_summary
from core.history.sizes import list_chars, message_chars
from core.proxy.calls import (
    CLIENT_COMPACTION,
    CallFinished,
    CallStarted,
    Conversation,
    Outcome,
    ProxyCall,
    ProxyEvent,
    ProxyNotice,
    Timings,
    diff_request,
    first_diff,
)
from core.proxy.diff import digest
from core.proxy.http import recorded_request_headers, recorded_response_headers
from core.proxy.limits import MAX_BODY_PREVIEW, ProxyLimits, capped
from core.proxy.openai import read_openai_reply, request_view, wire_of
from core.proxy.openai import usage_of as openai_usage
from core.proxy.record import RECORD_VERSION, REQUEST, RESPONSE, Recorder, RecordError
from core.proxy.redact import NO_SECRETS, Redactor
from core.proxy.sse import BodyTooLarge, UndecodableBody, checked_usage, decode_body, loads, read_reply
from core.text import one_line
from core.usage.prices import Usage, price_for

Message = dict[str, Any]
Headers = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class ExchangeStart:
    """A request as the proxy received it (handed over as soon as it is forwarded)."""

    id: str
    started: float
    method: str
    path: str
    headers: Headers
    body: bytes
    secrets: frozenset[str]
    upstream: str = ""


@dataclass(frozen=True)
class ExchangeEnd:
    """How an exchange ended: the status and the reply bytes the client was sent (`body`: as many of them
    as the reply limit let the server keep; `size`: how many there were, when more than that)."""

    id: str
    status: int | None
    headers: Headers
    body: bytes
    timings: Timings
    outcome: Outcome
    note: str | None = None  # the proxy's own error text (an unreachable upstream)
    size: int | None = None  # every byte the client was sent (None: `body` is all of it)


_STOP = object()
SUMMARY_LOOKBACK = 50  # calls searched for the reply that wrote a compaction summary


@dataclass(frozen=True)
class _Placed:
    """A new call and where it goes in the model (computed in a thread, entered on the loop)."""

    call: ProxyCall
    conversation: Conversation
    new: bool
    keys: tuple[str, ...]
    sizes: list[int]
    redactor: Redactor
    notes: tuple[str, ...] = ()


def canonical(value: Any) -> Any:
    """A system prompt or message content as its conversation is known by, whatever the client's
    spelling: a string is its one text block, and cache breakpoints (which clients move from call to
    call) are left out, so the same first message as a string or as blocks is one conversation."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, list):
        return [without_breakpoints(item) for item in value]
    return value


def without_breakpoints(value: Any) -> Any:
    """`value` with every `cache_control` key left out, at any depth (clients move breakpoints)."""
    if isinstance(value, dict):
        return {key: without_breakpoints(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [without_breakpoints(item) for item in value]
    return value


class Watch:
    """Turns exchanges into calls, records them (unless `recorder` is None) and publishes events."""

    def __init__(self, recorder: Recorder | None = None, limits: ProxyLimits | None = None) -> None:
        self.recorder = recorder
        self.limits = limits or ProxyLimits()
        self.calls: list[ProxyCall] = []
        self.conversations: list[Conversation] = []
        self._by_key: dict[str, Conversation] = {}
        self._by_id: dict[str, int] = {}  # call id -> index in self.calls
        self._redactors: dict[str, Redactor] = {}  # call id -> its request's redactor, until it ends
        self._inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._subscribers: set[asyncio.Queue[Any]] = set()
        self._worker: asyncio.Task[None] | None = None
        self.problems = 0  # exchanges that could not be read or recorded

    # --- the server's side --------------------------------------------------------------------

    def started(self, start: ExchangeStart) -> None:
        self._ensure_worker()
        self._inbox.put_nowait(start)

    def finished(self, end: ExchangeEnd) -> None:
        self._ensure_worker()
        self._inbox.put_nowait(end)

    def _ensure_worker(self) -> None:
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work(), name="ctxtui-proxy-watch")

    async def aclose(self) -> None:
        """Finish what was handed over (records included), then end every subscriber's stream."""
        if self._worker is not None:
            self._inbox.put_nowait(_STOP)
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        for queue in self._subscribers:
            queue.put_nowait(_STOP)

    # --- the view's side ----------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[ProxyEvent, None]:
        """Every call so far, then each event as it happens, until the watch is closed."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._subscribers.add(queue)
        try:
            for call in list(self.calls):
                yield CallStarted(call)
                if call.finished:
                    yield CallFinished(call)
            while True:
                item = await queue.get()
                if item is _STOP:
                    return
                yield item
        finally:
            self._subscribers.discard(queue)

    def _publish(self, event: ProxyEvent) -> None:
        for queue in self._subscribers:
            queue.put_nowait(event)

    # --- the worker ---------------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            item = await self._inbox.get()
            if item is _STOP:
                return
            try:
                if isinstance(item, ExchangeStart):
                    placed = await asyncio.to_thread(self._start_call, item)
                    self._place(placed)
                    self._publish(CallStarted(placed.call))
                    self._notify(placed.notes)
                elif item.id in self._by_id:
                    index = self._by_id[item.id]
                    done, notes = await asyncio.to_thread(self._finish_call, self.calls[index], item)
                    self.calls[index] = done
                    self._redactors.pop(item.id, None)
                    conversation = self.conversations[done.conversation - 1]
                    if conversation.latest is not None and conversation.latest.id == done.id:
                        conversation.latest = done
                    self._notify(notes)  # before the call's end: its end is the last word about it
                    self._publish(CallFinished(done))
            except Exception as error:  # untrusted bodies must never stop the watch
                redactor = (
                    Redactor(item.secrets)
                    if isinstance(item, ExchangeStart)
                    else self._redactors.get(item.id, NO_SECRETS)
                )
                self._notify(
                    (
                        redactor.text(
                            f"could not read an exchange: {type(error).__name__}: {str(error)[:300]}"
                        ),
                    )
                )
            del item  # its body (up to a limit's worth of bytes) is not kept until the next exchange comes

    def _notify(self, notes: Sequence[str]) -> None:
        """Publish an exchange's notes (what could not be read, recorded or kept whole)."""
        if notes:
            self.problems += 1
            for note in notes:
                self._publish(ProxyNotice(note))

    def _place(self, placed: _Placed) -> None:
        """Enter a new call into the model (on the loop, so a view never sees half an update)."""
        call, conversation = placed.call, placed.conversation
        if placed.new:
            self.conversations.append(conversation)
        for key in placed.keys:
            self._by_key[key] = conversation
            if key != conversation.key:
                conversation.aliases.add(key)
        conversation.calls.append(call.id)
        conversation.latest, conversation.latest_sizes = call, placed.sizes
        self._by_id[call.id] = len(self.calls)
        self.calls.append(call)
        self._redactors[call.id] = placed.redactor

    # Runs in a thread: reads the model, changes nothing in it (the worker waits meanwhile).
    def _start_call(self, start: ExchangeStart) -> _Placed:
        redactor = Redactor(start.secrets)
        body, body_error, text = _parse_body(start, self.limits.body_bytes)
        body = redactor.value(body)
        text = redactor.text(text[:MAX_BODY_PREVIEW])
        body_error = redactor.text(body_error) if body_error is not None else None
        wire = wire_of(start.method, start.path) or "messages"
        sent, body = body, request_view(body, wire) if wire != "messages" else body
        listed = body.get("messages")
        messages: list[Any] = listed if isinstance(listed, list) else []
        system, tools = body.get("system"), body.get("tools") if isinstance(body.get("tools"), list) else None
        model = body.get("model") if isinstance(body.get("model"), str) else None
        conversation, new, key = self._conversation_for(system, messages)
        previous = conversation.latest
        if previous is None:
            interned, diff = list(messages), first_diff(messages)
        else:
            interned, diff = diff_request(previous, messages, system, tools, model)
            # Equal system prompts and tool lists are the previous call's objects: a long session keeps one copy.
            system = previous.system if system == previous.system else system
            tools = previous.tools if tools == previous.tools else tools
        known = (
            dict(zip(map(id, previous.messages), conversation.latest_sizes, strict=False)) if previous else {}
        )
        sizes = [known.get(id(message)) or message_chars(message) for message in interned]
        prefix, miss = None, None
        if wire == "messages":  # OpenAI's cache is not modelled: only what its replies report is shown
            prefix = conversation.prints.print(model or "", system, tools or [], interned)
            if _one_hour_marks(body):
                conversation.cache.ttl = "1h"
            miss = conversation.cache.miss(prefix, start.started)
            if miss is not None and miss.cause == "messages_changed" and diff.compacted:
                miss = replace(miss, by=CLIENT_COMPACTION)
        user_agent = next(
            (redactor.text(value) for name, value in start.headers if name.lower() == "user-agent"), None
        )
        call = ProxyCall(
            id=start.id,
            number=len(self.calls) + 1,
            started=start.started,
            user_agent=user_agent,
            conversation=conversation.number,
            conversation_key=conversation.key,
            turn=len(conversation.calls) + 1,
            model=model,
            stream=body.get("stream") is True,
            messages=interned,
            system=system,
            tools=tools,
            params={key: value for key, value in body.items() if key not in ("messages", "system", "tools")},
            chars=list_chars(sizes, len(sizes)),
            diff=diff,
            markers=tuple(find_client_markers(interned)),
            body_error=body_error,
            prefix=prefix,
            cache_miss=miss,
            wire=wire,
        )
        notes: list[str] = []
        if body_error is not None and body_error.startswith(_OVER_LIMIT):
            notes.append(f"call #{call.number}: {body_error}")
        if self.recorder is not None:
            record = _request_record(start, call, sent, body_error, text, redactor)
            try:
                path = self.recorder.write(start.id, record, redactor, first=True)
            except RecordError as error:
                notes.append(f"not recorded: {error}")
                return _Placed(call, conversation, new, (key,), sizes, redactor, tuple(notes))
            call = replace(call, record=str(path))
        return _Placed(call, conversation, new, (key,), sizes, redactor, tuple(notes))

    def _conversation_for(self, system: Any, messages: list[Any]) -> tuple[Conversation, bool, str]:
        """The conversation of a request (a new one when its key is new), whether it is new, and the key.

        A request that opens with a client's compaction summary continues a known conversation (the
        compaction replaced its first message, hence its key): see `_compacted_from`.
        """
        first = next(
            (message for message in messages if isinstance(message, dict) and message.get("role") == "user"),
            None,
        )
        system_key = digest(canonical(system))
        key = digest([canonical(system), canonical(first.get("content") if first is not None else None)])[:12]
        known = self._by_key.get(key)
        if known is not None:
            return known, False, key
        if (
            first is not None
            and first is (messages[0] if messages else None)
            and is_compaction_summary(first)
        ):
            continued = self._compacted_from(_first_text(first), system_key)
            if continued is not None:
                return continued, False, key
        label = one_line(_first_text(first), 60) if first is not None else "(no user message)"
        return (
            Conversation(number=len(self.conversations) + 1, key=key, label=label, system_key=system_key),
            True,
            key,
        )

    def _compacted_from(self, summary: str, system_key: str) -> Conversation | None:
        """The conversation a compaction summary continues: the one whose recent reply wrote that summary
        (a client asks the model for it, then opens the new history with it), else the latest
        conversation with the same system prompt."""
        for call in reversed(self.calls[-SUMMARY_LOOKBACK:]):
            lines = [line.strip() for line in _first_text(call.reply).splitlines() if len(line.strip()) >= 30]
            sample = lines[:5]
            if sample and sum(line in summary for line in sample) * 2 >= len(sample):
                return self.conversations[call.conversation - 1]
        return next(
            (
                conversation
                for conversation in reversed(self.conversations)
                if conversation.system_key == system_key
            ),
            None,
        )

    def _finish_call(self, call: ProxyCall, end: ExchangeEnd) -> tuple[ProxyCall, tuple[str, ...]]:
        """The call completed from how its exchange ended, recorded; and the notes worth a ProxyNotice."""
        redactor = self._redactors.get(call.id, NO_SECRETS)
        headers = {name.lower(): value for name, value in end.headers}
        size = len(end.body) if end.size is None else end.size
        cut = size > len(end.body)
        if call.wire == "messages":
            reply = read_reply(
                end.body,
                headers.get("content-type"),
                headers.get("content-encoding"),
                limit=self.limits.reply_bytes,
                cut=cut,
            )
            usage_map, usage_notes = checked_usage(reply.usage) if reply.usage is not None else (None, [])
            usage = _usage(reply.usage, usage_map)
        else:
            reply = read_openai_reply(
                end.body,
                headers.get("content-type"),
                headers.get("content-encoding"),
                "chat" if call.wire == "chat" else "responses",
                limit=self.limits.reply_bytes,
                cut=cut,
            )
            usage, usage_map, usage_notes = openai_usage(reply.usage)
        message, error = redactor.value(reply.message), redactor.value(reply.error)
        if message is not None and usage_map is not None:
            message = {**message, "usage": usage_map}
        model = (
            message.get("model")
            if message is not None and isinstance(message.get("model"), str)
            else call.model
        )
        price = price_for(model) if model else None
        cost = price.cost(usage) if price is not None and usage is not None else None
        if end.note is not None and error is None:
            error = {"type": "api_error", "message": redactor.text(end.note)}
        notes = [f"call #{call.number}: {note}" for note in usage_notes]
        if cut:
            notes.append(
                f"call #{call.number}: the reply was {size:,} bytes, over proxy_reply_limit: the client got "
                f"all of it, the recording and the view keep its first {len(end.body):,} bytes"
            )
        problems = capped([*notes, *(redactor.text(problem) for problem in reply.problems)])
        done = replace(
            call,
            outcome=end.outcome,
            status=end.status,
            reply=message,
            error=error,
            usage=usage,
            cost=cost,
            timings=end.timings,
            complete=reply.complete and not cut,
        )
        conversation = self._by_key.get(call.conversation_key)
        if (
            conversation is not None
            and call.prefix is not None
            and usage is not None
            and (end.status or 0) < 400
        ):
            # The usage shows a cache the server lost though the client changed nothing (expired, evicted).
            ended = call.started + (end.timings.total or 0.0)
            done = replace(
                done,
                cache_miss=conversation.cache.settle(
                    call.prefix, call.cache_miss, usage.figure("cache_read_tokens"), ended
                ),
            )
            conversation.cache.answered(call.prefix, usage, call.started)
        if self.recorder is not None and call.record is not None:
            record = {
                "type": RESPONSE,
                "id": call.id,
                "status": end.status,
                "outcome": end.outcome,
                "headers": recorded_response_headers(end.headers),
                "streamed": reply.events > 0,
                "reply": message,
                "error": error,
                "complete": done.complete,
                "usage": usage_map,
                "model": model,
                "cost": cost,
                "events": reply.events,
                "bytes": size,
                "timings": {
                    "headers": end.timings.headers,
                    "first_byte": end.timings.first_byte,
                    "total": end.timings.total,
                },
                "problems": problems,
            }
            if cut:
                record["cut"] = {"kept_bytes": len(end.body), "limit": "proxy_reply_limit"}
            try:
                self.recorder.write(call.id, record, redactor, first=False)
            except RecordError as failed:
                notes.append(f"reply not recorded: {failed}")
        return done, tuple(notes)


_PRICED = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _usage(sent: dict[str, Any] | None, checked: dict[str, Any] | None) -> Usage | None:
    """The call's Usage; None (unknown, so nothing is priced) when a priced figure was sent but was not a count."""
    if sent is None or checked is None:
        return None
    if any(sent.get(key) is not None and checked.get(key) is None for key in _PRICED):
        return None
    return Usage.from_mapping(checked)


def _one_hour_marks(body: dict[str, Any]) -> bool:
    """The request asks for 1-hour cache entries: a breakpoint with `"ttl": "1h"` on a tool, a system
    block or a block of its last messages (where clients put their breakpoints)."""
    messages = body.get("messages")
    blocks: list[Any] = []
    for part in (body.get("tools"), body.get("system")):
        if isinstance(part, list):
            blocks.extend(part)
    for message in messages[-4:] if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            blocks.extend(content)
    return any(
        isinstance(block, dict)
        and isinstance(block.get("cache_control"), dict)
        and block["cache_control"].get("ttl") == "1h"
        for block in blocks
    )


def _request_record(
    start: ExchangeStart,
    call: ProxyCall,
    body: dict[str, Any],
    body_error: str | None,
    text: str,
    redactor: Redactor,
) -> dict[str, Any]:
    """The `proxy_request` record: the body as the client sent it, an allow-list of headers."""
    record: dict[str, Any] = {
        "type": REQUEST,
        "version": RECORD_VERSION,
        "id": start.id,
        "started": start.started,
        "method": start.method,
        "path": start.path,
        "upstream": start.upstream,
        "user_agent": call.user_agent,
        "headers": redactor.value(recorded_request_headers(start.headers)),
        "body_bytes": len(start.body),
        "conversation": call.conversation_key,
        "conversation_number": call.conversation,
        "turn": call.turn,
    }
    if body_error is None:
        record["body"] = body
    else:
        record["body_text"], record["body_error"] = text, body_error
    return record


_OVER_LIMIT = "over proxy_body_limit"


def _parse_body(start: ExchangeStart, limit: int) -> tuple[dict[str, Any], str | None, str]:
    """The request body as a dict, or ({}, why not, its text); never inflated or read past `limit` bytes."""
    if len(start.body) > limit:
        return (
            {},
            f"{_OVER_LIMIT}: the body is {len(start.body):,} bytes: forwarded as sent, recorded without it",
            "",
        )
    encoding = next((value for name, value in start.headers if name.lower() == "content-encoding"), None)
    try:
        raw = decode_body(start.body, encoding, limit)
    except BodyTooLarge:
        return (
            {},
            (
                f"{_OVER_LIMIT}: the body inflates past {limit:,} bytes ({encoding}): forwarded as sent, "
                "recorded without it"
            ),
            "",
        )
    except UndecodableBody as error:
        return {}, str(error), ""
    text = raw.decode("utf-8", errors="replace")
    try:
        body, _ = loads(text)
    except ValueError as error:
        return {}, f"not JSON: {str(error)[:200]}", text
    if not isinstance(body, dict):
        return {}, "not a JSON object", text
    return body, None, text


def _first_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        return "\n".join(texts) if texts else "(no text)"
    return ""
