"""What every trajectory importer returns: a real agent's run as a Messages API history.

A trajectory is a log some other agent wrote (SWE-agent / mini-swe-agent, ATIF, a Codex CLI rollout,
OpenHands). Its importer turns it into the history ctxtui works on (`list[dict]` in the Messages API
shape: `text`, `tool_use`, `tool_result` blocks), with the system prompt and tools its requests carried
where the file says, the model, and a time per model call where the file has one. The model calls of
a trajectory are its assistant messages: call k sends the messages before the k-th assistant message.

Every byte of a trajectory is untrusted: importers only build plain dicts of strings from it, and a
file they cannot read raises `TrajectoryError` with one line naming the file and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Message = dict[str, Any]


class TrajectoryError(ValueError):
    """The file is a trajectory of a known kind but cannot be read: one line saying why."""


@dataclass
class Trajectory:
    """A real agent's run, converted."""

    path: Path
    format: str  # "swe-agent" | "atif" | "codex" | "openhands"
    messages: list[Message]  # user/assistant only, Messages API shape, pairing valid
    system: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)  # Messages API tool definitions, when known
    model: str | None = None
    times: list[float | None] = field(default_factory=list)  # epoch seconds of each assistant message (call)
    notes: list[str] = field(default_factory=list)  # what the reader left out or had to assume
    skipped: int = 0  # records of the file that carried nothing the model read, or could not be read

    @property
    def calls(self) -> int:
        return sum(1 for message in self.messages if message.get("role") == "assistant")


def as_text(value: Any) -> str:
    """A field of the file as the text the model read: strings as they are, a list of OpenAI-style
    content parts as their texts joined, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(part, dict) for part in value):
        texts = [part.get("text") for part in value]
        if all(isinstance(text, str) for text in texts):
            return "\n".join(str(text) for text in texts)
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


class HistoryBuilder:
    """Builds a valid Messages API history from the turns of a trajectory, in file order.

    Consecutive assistant turns merge into one message (the API merges them too), every tool result
    lands in the user message right after the call it answers, a call left without a result before the
    next turn is answered `[no result recorded]`, and a result that answers no call becomes text.
    """

    NO_RESULT = "[no result recorded]"

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.times: list[float | None] = []
        self.notes: list[str] = []
        self._pending: dict[str, list[str]] = {}  # the file's call id -> the open calls' ids in the history
        self._used: set[str] = set()  # every tool_use id given so far (the API wants them unique)
        self._unanswered = 0
        self._orphans = 0

    def _last(self, role: str) -> Message:
        if not self.messages or self.messages[-1]["role"] != role:
            self.messages.append({"role": role, "content": []})
        return self.messages[-1]

    def _close_calls(self) -> None:
        """Answer the calls still open before the conversation moves on."""
        if not self._pending:
            return
        user = self._last("user")
        for use_id in [unique for uniques in self._pending.values() for unique in uniques]:
            user["content"].insert(
                self._results_end(user),
                {"type": "tool_result", "tool_use_id": use_id, "content": self.NO_RESULT},
            )
            self._unanswered += 1
        self._pending.clear()

    @staticmethod
    def _results_end(user: Message) -> int:
        count = 0
        for block in user["content"]:
            if block.get("type") != "tool_result":
                break
            count += 1
        return count

    def user_text(self, text: str) -> None:
        """A turn the person (or the harness speaking for them) added."""
        if not text:
            return
        self._close_calls()
        self._last("user")["content"].append({"type": "text", "text": text})

    def assistant(
        self,
        text: str,
        calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
        time: float | None = None,
        extra: list[dict[str, Any]] | None = None,
    ) -> None:
        """A model reply: its text, then its tool calls `(id, name, input)` (ids made unique here)."""
        self._close_calls()
        started = not self.messages or self.messages[-1]["role"] != "assistant"
        message = self._last("assistant")
        if started:
            self.times.append(time)
        message["content"].extend(extra or [])
        if text:
            message["content"].append({"type": "text", "text": text})
        for use_id, name, arguments in calls:
            unique = use_id or f"call_{len(self.messages)}_{len(message['content'])}"
            while unique in self._used:  # a provider that numbers calls per reply (call_0 every time)
                unique += "_"
            self._used.add(unique)
            message["content"].append(
                {
                    "type": "tool_use",
                    "id": unique,
                    "name": name or "tool",
                    "input": arguments if isinstance(arguments, dict) else {"input": arguments},
                }
            )
            self._pending.setdefault(use_id, []).append(unique)
        if not message["content"]:
            message["content"].append({"type": "text", "text": "(no text)"})

    def tool_result(self, use_id: str, text: str, is_error: bool = False) -> None:
        """The output of the call `use_id` (the file's id of the call, or the id the history gave it);
        a result that answers no open call is kept as text."""
        if use_id not in self._pending:
            given = next((key for key, uniques in self._pending.items() if use_id in uniques), None)
            if given is not None:  # a reader that kept the history's id: that very call is answered
                self._pending[given].remove(use_id)
                self._pending[given].insert(0, use_id)
                use_id = given
        if use_id not in self._pending:
            self._orphans += 1
            self._last("user")["content"].append({"type": "text", "text": text or "(empty tool output)"})
            return
        uniques = self._pending[use_id]
        unique = uniques.pop(0)  # calls sharing one id are answered in the order they were made
        if not uniques:
            del self._pending[use_id]
        user = self._last("user")
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": unique, "content": text}
        if is_error:
            block["is_error"] = True
        user["content"].insert(self._results_end(user), block)

    @property
    def open_calls(self) -> list[str]:
        """The file's ids of the calls still waiting for a result."""
        return list(self._pending)

    def finish(self) -> tuple[list[Message], list[float | None], list[str]]:
        """The history (calls still open at the end stay open when nothing answered them; once some
        of their results came, the rest are answered as missing), the call times, and notes on what
        had to be assumed."""
        if self._pending and self.messages and self.messages[-1]["role"] == "user":
            self._close_calls()  # a file cut between two results of one reply
        if self._unanswered:
            self.notes.append(
                f"{self._unanswered} tool call(s) had no recorded result: answered {self.NO_RESULT}"
            )
        if self._orphans:
            self.notes.append(f"{self._orphans} tool output(s) answered no call: kept as text")
        messages = [message for message in self.messages if message["content"]]
        return messages, self.times, self.notes
