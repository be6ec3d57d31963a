"""Thinking blocks: what the API returned, kept verbatim, and checked before a request replays them.

The API refuses a `thinking` or `redacted_thinking` block that differs in any way from what it
returned (text, signature, data), one moved out of its assistant message, and one written by
another model (current models bind thinking blocks to the model and the conversation). No
compaction step or steering action edits these blocks; `ThinkingLedger.problem` is the check that a
request about to be sent still holds only blocks the API gave, unchanged, to this model: a request
that would be refused is not sent, and the one line says why and what to do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

THINKING_TYPES = ("thinking", "redacted_thinking")

Message = dict[str, Any]


def is_thinking(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in THINKING_TYPES


def _identity(block: dict[str, Any]) -> str:
    """What names a block: its signature (thinking) or its data (redacted_thinking)."""
    value = block.get("signature") if block.get("type") == "thinking" else block.get("data")
    return f"{block.get('type')}:{value}" if isinstance(value, str) and value else ""


def thinking_positions(messages: Sequence[Any]) -> Iterable[tuple[int, int, dict[str, Any]]]:
    """(message index, block index, block) of every thinking block in `messages`."""
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block_index, block in enumerate(content):
                if is_thinking(block):
                    yield index, block_index, block


class ThinkingLedger:
    """The thinking blocks this conversation received, as received, with the model that wrote them."""

    def __init__(self) -> None:
        self._blocks: dict[str, tuple[dict[str, Any], str | None]] = {}

    def received(self, content: Iterable[Any], model: str | None) -> None:
        """Blocks of a reply, as the API returned them (written by `model`)."""
        for block in content:
            if is_thinking(block) and _identity(block):
                self._blocks[_identity(block)] = (dict(block), model)

    def adopt(self, messages: Sequence[Any], model: str | None) -> None:
        """The blocks of a history ctxtui starts from (a resumed session, written by `model`; None:
        not known): taken as they are, since ctxtui recorded them as it received them."""
        for _, _, block in thinking_positions(messages):
            if _identity(block) and (model is not None or _identity(block) not in self._blocks):
                self._blocks[_identity(block)] = (dict(block), model)

    def clear(self) -> None:
        self._blocks.clear()

    def problem(self, messages: Sequence[Any], model: str) -> str | None:
        """Why the API would refuse the thinking blocks of a request to `model` (one line: what and
        what to do), or None when every block is one it returned, unchanged, in an assistant message."""
        for index, block_index, block in thinking_positions(messages):
            where = f"messages.{index}.content.{block_index}"
            kind = str(block.get("type"))
            role = messages[index].get("role") if isinstance(messages[index], dict) else None
            known = self._blocks.get(_identity(block)) if _identity(block) else None
            if role != "assistant":
                why = f"{where} is a {kind} block in a {role} message; the API accepts them only where it wrote them"
            elif known is None:
                why = f"{where} is a {kind} block the API did not return in this session (no valid signature)"
            elif known[0] != block:
                why = f"{where} is a {kind} block changed since the API returned it, and its signature no longer matches"
            elif known[1] is not None and known[1] != model:
                why = (
                    f"{where} is a {kind} block written by {known[1]}; the API binds thinking to the model "
                    f"that wrote it and refuses it from {model}"
                )
            else:
                continue
            return (
                f"not sent: {why}. Undo the last compaction (u), resume with the model that wrote it, "
                "or start a new session (/new)"
            )
        return None


__all__ = ["THINKING_TYPES", "ThinkingLedger", "is_thinking", "thinking_positions"]
