"""A session file as the sequence of requests it made: what each model call added to the conversation
and the reply that answered it, for the replay under each engine (compare.py).

- a ctxtui session log: the messages it appended, in order (what compaction later did to them is
  the engine's business); each assistant message is one call's reply;
- a `ctxtui proxy` recording (a file, or a folder's conversation): one call per exchange; what a
  request added is what it has beyond the conversation so far, messages compared by content (a
  client re-sends the model's blocks with another key order); a client's own rewrite shows up as new
  messages; the recorded reply follows;
- a Claude Code session, a transcript or a list of messages: the whole conversation (what lies
  before a compaction boundary too), one call per assistant message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import jsonlines
from core.jsonlines import BadLine
from core.sessions.inspection import Inspected, load_file
from core.sessions.log import valid_message

Message = dict[str, Any]


@dataclass
class Call:
    """One model call of the session: the messages added before it, and its reply (None: none recorded)."""

    added: list[Message]
    reply: Message | None


@dataclass
class Recorded:
    """The calls of a session file, with the system prompt and tools its requests carried."""

    inspected: Inspected
    calls: list[Call] = field(default_factory=list)
    system: Any = None
    tools: list[Any] = field(default_factory=list)
    model: str | None = None
    times: list[float | None] = field(default_factory=list)  # when each call was made (epoch s), if known


def split_calls(messages: list[Message]) -> list[Call]:
    """One call per assistant message: what came before it since the last one, and it."""
    calls: list[Call] = []
    pending: list[Message] = []
    for message in messages:
        if message.get("role") == "assistant":
            calls.append(Call(pending, message))
            pending = []
        else:
            pending.append(message)
    return calls


def _session_messages(path: Path) -> tuple[list[Message], str | None]:
    """The messages a ctxtui session log appended, in order, and the model its meta names."""
    messages: list[Message] = []
    model = None
    for record in jsonlines.read_records(path, follow_symlinks=True):
        if isinstance(record, BadLine) or not isinstance(record, dict):
            continue
        if record.get("type") == "meta" and isinstance(record.get("model"), str):
            model = record["model"]
        elif record.get("type") == "message" and valid_message(record.get("message")):
            messages.append(record["message"])
    return messages, model


def _prefix(old: list[str], new: list[str]) -> int:
    """How many leading messages two histories share, compared by their canonical keys."""
    count = 0
    for before, after in zip(old, new, strict=False):
        if before != after:
            break
        count += 1
    return count


def _proxy_calls(recorded: Recorded) -> None:
    from core.sessions.proxy_folder import content_key, request_of

    conversation: list[Message] = []
    keys: list[str] = []  # content_key of each message of `conversation`
    for exchange in recorded.inspected.exchanges:
        body = request_of(exchange)
        messages = [message for message in body.get("messages") or [] if valid_message(message)]
        if not messages:
            continue
        recorded.system = body.get("system", recorded.system)
        tools = body.get("tools")
        recorded.tools = tools if isinstance(tools, list) else recorded.tools
        recorded.model = body.get("model") if isinstance(body.get("model"), str) else recorded.model
        sent = [content_key(message) for message in messages]
        shared = _prefix(keys, sent)
        added = messages[shared:]
        reply_record = (exchange.response or {}).get("reply")
        content = reply_record.get("content") if isinstance(reply_record, dict) else None
        reply = {"role": "assistant", "content": content} if isinstance(content, list) and content else None
        if reply is not None and not valid_message(reply):
            reply = None
        recorded.calls.append(Call(added, reply))
        conversation.extend(added)
        keys.extend(sent[shared:])
        if reply is not None:
            conversation.append(reply)
            keys.append(content_key(reply))


def recorded_calls(
    path: Path, system: Any = None, tools: list[Any] | None = None, conversation: str | None = None
) -> Recorded:
    """The session file at `path` as its calls (InspectError, one line, when it is no history file);
    `system` and `tools` stand in where the file does not hold them (a ctxtui session);
    `conversation`: which one of a proxy recording folder (the newest by default)."""
    inspected = load_file(path, conversation)
    recorded = Recorded(
        inspected,
        system=inspected.system if inspected.system is not None else system,
        tools=list(inspected.tools if inspected.tools is not None else tools or []),
    )
    if inspected.kind == "session":
        messages, recorded.model = _session_messages(path)
        recorded.calls = split_calls(messages)
    elif inspected.kind == "proxy":
        _proxy_calls(recorded)
    else:
        recorded.calls = split_calls([*inspected.archived, *inspected.messages])
        recorded.model = inspected.model
        recorded.times = list(inspected.times)
    return recorded
