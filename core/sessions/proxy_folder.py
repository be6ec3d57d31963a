"""A `ctxtui proxy` recording folder (`.ctxtui/proxy/`, one file per exchange) as conversations.

The proxy writes one file per exchange, so a conversation is spread over many files. Here they are
read in the order of their ids (which sort by time) and grouped: a request belongs to the
conversation of its system prompt and first message, compared by content (canonical JSON: keys
sorted, cache breakpoints left out, a string the same as its one text block), never by the JSON
text a client happened to write; a request that opens with a compaction summary continues the
latest conversation of the same system prompt. A conversation is named by the id of its first
exchange; `choose` takes that id, any exchange id of it, or its number (1 = the oldest), and by
default the newest (the one with the latest exchange).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.client_markers import is_compaction_summary
from core.proxy.record import RecordedExchange, read_proxy_file
from core.proxy.watch import without_breakpoints
from core.sessions.claude_code import read_records

MAX_FILES = 100_000


def canonical(value: Any) -> Any:
    """`value` as compared by content: a string is its one text block, cache breakpoints are left out."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return without_breakpoints(value)


def content_key(value: Any) -> str:
    """The canonical JSON of a message or prompt: equal for equal content whatever the key order."""
    if isinstance(value, dict) and "content" in value:
        value = {**value, "content": canonical(value["content"])}
    else:
        value = canonical(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class ProxyConversation:
    """The exchanges of one client conversation, oldest first."""

    id: str
    number: int
    exchanges: list[RecordedExchange] = field(default_factory=list)


@dataclass
class ProxyFolder:
    conversations: list[ProxyConversation] = field(default_factory=list)
    files: int = 0
    skipped: int = 0  # records that were no exchange, and files that could not be read


def request_of(exchange: RecordedExchange) -> dict[str, Any]:
    """The request in the Messages API's shape: the proxy's converted `view` of an OpenAI-format one
    where the recording reader offers it, else the body as sent."""
    view = getattr(exchange, "view", None)  # absent before the proxy spoke OpenAI formats
    return view if isinstance(view, dict) else exchange.body


def _messages(exchange: RecordedExchange) -> list[Any]:
    messages = request_of(exchange).get("messages")
    return messages if isinstance(messages, list) else []


def read_folder(folder: Path) -> ProxyFolder:
    """Every recording of `folder` grouped into conversations (files that cannot be read are counted)."""
    result = ProxyFolder()
    by_key: dict[str, ProxyConversation] = {}
    latest_by_system: dict[str, ProxyConversation] = {}
    paths = sorted(path for path in folder.iterdir() if path.suffix == ".jsonl")[:MAX_FILES]
    for path in paths:
        try:
            records, skipped = read_records(path)
        except OSError:
            result.skipped += 1
            continue
        result.files += 1
        recording = read_proxy_file(records)
        result.skipped += skipped + recording.skipped
        for exchange in recording.exchanges:
            messages = _messages(exchange)
            if not messages:
                result.skipped += 1
                continue
            system = content_key(request_of(exchange).get("system"))
            key = system + "\x00" + content_key(messages[0])
            conversation = by_key.get(key)
            if conversation is None and is_compaction_summary(messages[0]):
                conversation = latest_by_system.get(system)
            if conversation is None:
                conversation = ProxyConversation(exchange.id, len(result.conversations) + 1)
                result.conversations.append(conversation)
            by_key[key] = conversation
            latest_by_system[system] = conversation
            conversation.exchanges.append(exchange)
    return result


def choose(found: ProxyFolder, wanted: str | None) -> ProxyConversation | None:
    """The conversation `wanted` names (its id, one of its exchange ids, or its number); the newest by default."""
    if not found.conversations:
        return None
    if wanted is None:
        return max(found.conversations, key=lambda conversation: conversation.exchanges[-1].id)
    for conversation in found.conversations:
        if wanted == conversation.id or wanted == str(conversation.number):
            return conversation
    for conversation in found.conversations:
        if any(exchange.id == wanted for exchange in conversation.exchanges):
            return conversation
    return None


def describe(found: ProxyFolder) -> list[str]:
    """One line per conversation: its id, number of calls and first exchange."""
    return [
        f"{conversation.number}. {conversation.id}: {len(conversation.exchanges)} call(s)"
        for conversation in found.conversations
    ]
