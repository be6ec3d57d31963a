"""The loopback fake's model of the API's server-side context management (tests/support/fakeapi.py).

Written from the API's documentation and the SDK's types, independently of ctxtui's own reading of
them (core/engines/): a request's `context_management` is checked as the API checks it (the beta
header, known edit types, clear_thinking first and only with thinking on, a compaction trigger of
at least 50,000 tokens), the compaction blocks it sends back must carry the signature the fake gave
them, and the edits are applied to what the "model" sees:

- nothing before the newest compaction block is read;
- `clear_thinking_20251015`: the thinking of all but the newest `keep` assistant turns is removed;
- `clear_tool_uses_20250919`: once the input tokens reach `trigger` (input_tokens, or tool_uses),
  the results of all but the newest `keep` tool uses (never of `exclude_tools`) become a placeholder,
  their inputs too with `clear_tool_inputs`, but only when at least `clear_at_least` tokens go;
- `compact_20260112`: once the input tokens reach `trigger` (default 150,000), the reply starts with
  a signed `compaction` block summarising what was read, and the usage has a `compaction` iteration.

The response reports `context_management.applied_edits` for the clearing edits that changed something.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.fake_cache import _mac, estimate_tokens, thinking_on

JSONDict = dict[str, Any]
CLEARED = "[tool result cleared by context management]"
CLEARED_INPUT = "[tool input cleared]"
BETAS = {"clear_tool_uses_20250919": "context-management-2025-06-27",
         "clear_thinking_20251015": "context-management-2025-06-27",
         "compact_20260112": "compact-2026-01-12"}


class ContextError(Exception):
    """A request the API would refuse (400 invalid_request_error); the message is one line."""


@dataclass
class Managed:
    """What the server did to one request: the body the model read, the edits applied, and a
    compaction block to put first in the reply (or None)."""

    body: JSONDict
    applied: list[JSONDict] = field(default_factory=list)
    compaction: JSONDict | None = None
    iterations: list[JSONDict] = field(default_factory=list)

    def response(self) -> JSONDict:
        return {"applied_edits": self.applied}


def signature(content: Any, encrypted: Any) -> str:
    return _mac("compaction", json.dumps(content), json.dumps(encrypted))


def _tokens(messages: list[JSONDict], body: Mapping[str, Any]) -> int:
    return estimate_tokens({**body, "messages": messages})


def _value(item: Any, kind: str, default: int) -> int:
    if item is None:
        return default
    if not isinstance(item, dict) or item.get("type") != kind or type(item.get("value")) is not int \
            or item["value"] < 0:
        raise ContextError(f"expected {{'type': '{kind}', 'value': <non-negative int>}}, got {item!r}")
    return int(item["value"])


class ServerContext:
    """The fake's context management (see the module docstring); `compactions` counts the blocks made."""

    def __init__(self) -> None:
        self.compactions = 0
        self.summaries: list[str] = []

    def check(self, body: Mapping[str, Any], betas: str) -> list[JSONDict]:
        """The request's edits, or ContextError as the API refuses them."""
        config = body.get("context_management")
        self._check_blocks(body)
        if config is None:
            return []
        edits = config.get("edits") if isinstance(config, dict) else None
        if not isinstance(edits, list):
            raise ContextError("context_management.edits: Field required")
        types = [edit.get("type") if isinstance(edit, dict) else None for edit in edits]
        for index, kind in enumerate(types):
            if kind not in BETAS:
                raise ContextError(f"context_management.edits.{index}.type: unknown edit type {kind!r}")
            if BETAS[kind] not in betas.split(","):
                raise ContextError(f"context_management.edits.{index}: {kind} needs the beta header "
                                   f"anthropic-beta: {BETAS[kind]}")
        if "clear_thinking_20251015" in types:
            if types[0] != "clear_thinking_20251015":
                raise ContextError("clear_thinking_20251015 must be the first edit")
            if not thinking_on(body):
                raise ContextError("clear_thinking_20251015 requires thinking to be enabled")
        for index, edit in enumerate(edits):
            if edit["type"] == "compact_20260112" and _value(edit.get("trigger"), "input_tokens", 150_000) < 50_000:
                raise ContextError(f"context_management.edits.{index}.trigger.value: must be at least 50000")
        return edits

    def _check_blocks(self, body: Mapping[str, Any]) -> None:
        for index, message in enumerate(body.get("messages") or []):
            content = message.get("content") if isinstance(message, dict) else None
            for position, block in enumerate(content if isinstance(content, list) else []):
                if not isinstance(block, dict) or block.get("type") != "compaction":
                    continue
                where = f"messages.{index}.content.{position}"
                if message.get("role") != "assistant":
                    raise ContextError(f"{where}: `compaction` blocks are only allowed in assistant messages")
                if block.get("content") == "":
                    raise ContextError(f"{where}.content: empty string is not allowed (use null)")
                if block.get("signature") != signature(block.get("content"), block.get("encrypted_content")):
                    raise ContextError(f"{where}: Invalid `signature` in `compaction` block")

    def manage(self, body: Mapping[str, Any], betas: str) -> Managed:
        """What the model reads of `body`, and what the server did to it (ContextError: refused)."""
        edits = self.check(body, betas)
        messages = copy.deepcopy(list(body.get("messages") or []))
        start = max((index for index, message in enumerate(messages) if isinstance(message.get("content"), list)
                     and any(isinstance(b, dict) and b.get("type") == "compaction" for b in message["content"])),
                    default=0)
        messages = messages[start:]
        managed = Managed({**body, "messages": messages})
        for edit in edits:
            if edit["type"] == "clear_thinking_20251015":
                self._clear_thinking(managed, edit)
            elif edit["type"] == "clear_tool_uses_20250919":
                self._clear_tool_uses(managed, edit)
            else:
                self._compact(managed, edit)
        return managed

    def _clear_thinking(self, managed: Managed, edit: JSONDict) -> None:
        keep = edit.get("keep", {"type": "thinking_turns", "value": 1})
        messages = managed.body["messages"]
        turns = [index for index, message in enumerate(messages) if message.get("role") == "assistant"
                 and isinstance(message.get("content"), list)
                 and any(b.get("type") in ("thinking", "redacted_thinking") for b in message["content"])]
        kept = len(turns) if keep == "all" or (isinstance(keep, dict) and keep.get("type") == "all") \
            else _value(keep, "thinking_turns", 1)
        cleared = turns[: max(0, len(turns) - kept)]
        if not cleared:
            return
        before = _tokens(messages, managed.body)
        for index in cleared:
            messages[index]["content"] = [b for b in messages[index]["content"]
                                          if b.get("type") not in ("thinking", "redacted_thinking")]
        managed.applied.append({"type": "clear_thinking_20251015", "cleared_thinking_turns": len(cleared),
                                "cleared_input_tokens": before - _tokens(messages, managed.body)})

    def _clear_tool_uses(self, managed: Managed, edit: JSONDict) -> None:
        messages = managed.body["messages"]
        uses = [(index, block) for index, message in enumerate(messages) if message.get("role") == "assistant"
                and isinstance(message.get("content"), list)
                for block in message["content"] if block.get("type") == "tool_use"]
        trigger = edit.get("trigger") or {"type": "input_tokens", "value": 100_000}
        reached = len(uses) if isinstance(trigger, dict) and trigger.get("type") == "tool_uses" \
            else _tokens(messages, managed.body)
        kind = trigger.get("type") if isinstance(trigger, dict) else None
        if reached < _value(trigger, str(kind), 100_000):
            return
        keep = _value(edit.get("keep"), "tool_uses", 3)
        exclude = set(edit.get("exclude_tools") or [])
        inputs = edit.get("clear_tool_inputs") or False
        chosen = [(index, block) for index, block in uses[: max(0, len(uses) - keep)]
                  if block.get("name") not in exclude]
        before = _tokens(messages, managed.body)
        edited = copy.deepcopy(messages)
        count = 0
        for index, use in chosen:
            answer = edited[index + 1] if index + 1 < len(edited) else None
            for block in answer.get("content", []) if answer and isinstance(answer.get("content"), list) else []:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == use.get("id") \
                        and block.get("content") != CLEARED:
                    block["content"] = CLEARED
                    count += 1
            if inputs is True or (isinstance(inputs, list) and use.get("name") in inputs):
                for block in edited[index]["content"]:
                    if block.get("type") == "tool_use" and block.get("id") == use.get("id"):
                        block["input"] = {"cleared": CLEARED_INPUT}
        freed = before - _tokens(edited, managed.body)
        if not count or freed < _value(edit.get("clear_at_least"), "input_tokens", 0):
            return
        managed.body["messages"] = edited
        managed.applied.append({"type": "clear_tool_uses_20250919", "cleared_tool_uses": count,
                                "cleared_input_tokens": freed})

    def _compact(self, managed: Managed, edit: JSONDict) -> None:
        tokens = _tokens(managed.body["messages"], managed.body)
        if tokens < _value(edit.get("trigger"), "input_tokens", 150_000):
            return
        self.compactions += 1
        read = managed.body["messages"]
        summary = (f"Summary {self.compactions} of {len(read)} messages"
                   + (f" ({edit['instructions']})" if edit.get("instructions") else "") + ": "
                   + " | ".join(_gist(message) for message in read)[:600])
        self.summaries.append(summary)
        encrypted = f"opaque-{self.compactions}"
        managed.compaction = {"type": "compaction", "content": summary, "encrypted_content": encrypted,
                              "signature": signature(summary, encrypted)}
        managed.iterations = [
            {"type": "compaction", "input_tokens": tokens, "output_tokens": len(summary) // 4,
             "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
        ]
        managed.body = {**managed.body, "messages": [{"role": "assistant", "content": [managed.compaction]},
                                                     *read[-1:]]}


def failed_block() -> JSONDict:
    """A compaction block the server could not summarise (null content), signed like any other."""
    return {"type": "compaction", "content": None, "encrypted_content": None, "signature": signature(None, None)}


def _gist(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content[:60]
    parts = [str(block.get("text") or block.get("name") or block.get("type"))[:30]
             for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    return ",".join(parts)
