"""What the user pinned, as the pipeline's steps see it.

A pin is a key: the tool_use id of a tool result (the result survives every step byte-exact, in a
pair with its tool_use), or the `user:` key of a user message (`core.history.messages.user_pin_key`;
the message survives byte-exact). Snip keeps pinned messages right after its marker, micro and fit
skip pinned results, and the summary steps carry what is pinned after the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.history.messages import USER_PIN_PREFIX, has_tool_use, is_tool_result, user_pin_key

Message = dict[str, Any]


class Pins:
    """A conversation's pins, one object that its owner (the agent's state) changes and its compactor
    reads: no copy to keep in step."""

    __slots__ = ("keys",)

    def __init__(self, keys: frozenset[str] = frozenset()) -> None:
        self.keys = keys


def is_pinned(pinned: frozenset[str], block: dict[str, Any]) -> bool:
    """A tool_result block whose tool_use id is pinned."""
    return bool(pinned) and str(block.get("tool_use_id")) in pinned


def _pinned_results(pinned: frozenset[str], message: Message) -> list[dict[str, Any]]:
    return [
        block
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result" and is_pinned(pinned, block)
    ]


def pinned_result_indices(
    pinned: frozenset[str], messages: Sequence[Message], start: int, end: int
) -> list[int]:
    """Indices in [start, end) of tool_result messages answering their tool_use with a pinned result."""
    if not pinned:
        return []
    return [
        index
        for index in range(max(start, 1), end)
        if is_tool_result(messages[index])
        and has_tool_use(messages[index - 1])
        and _pinned_results(pinned, messages[index])
    ]


def pinned_user_indices(
    pinned: frozenset[str], messages: Sequence[Message], start: int, end: int
) -> list[int]:
    """Indices in [start, end) of the user messages pinned by their `user_pin_key`."""
    keys = {key for key in pinned if key.startswith(USER_PIN_PREFIX)}
    if not keys:
        return []
    return [
        index
        for index in range(max(start, 0), end)
        if messages[index].get("role") == "user" and user_pin_key(messages[index]) in keys
    ]


def pinned_messages(pinned: frozenset[str], messages: Sequence[Message], start: int, end: int) -> set[int]:
    """The pinned messages inside [start, end): every pinned pair (tool_use and tool_result) and
    every pinned user message."""
    pairs = {
        index
        for result in pinned_result_indices(pinned, messages, start + 1, end)
        for index in (result - 1, result)
    }
    return pairs | set(pinned_user_indices(pinned, messages, start, end))


def carried_pins(pinned: frozenset[str], messages: Sequence[Message], request: str) -> list[Message]:
    """What is pinned in `messages`, in order, to follow a summary: pinned results as pairs with
    their tool_use (the blocks byte-exact) and pinned user messages as they are. A pinned message
    that is the current request is not repeated: the summary's steps put the request last."""
    carried: list[tuple[int, list[Message]]] = []
    for index in pinned_result_indices(pinned, messages, 1, len(messages)):
        results = _pinned_results(pinned, messages[index])
        ids = {str(block.get("tool_use_id")) for block in results}
        uses = [
            block
            for block in messages[index - 1]["content"]
            if isinstance(block, dict) and block.get("type") == "tool_use" and str(block.get("id")) in ids
        ]
        carried.append(
            (index, [{"role": "assistant", "content": uses}, {"role": "user", "content": results}])
        )
    for index in pinned_user_indices(pinned, messages, 0, len(messages)):
        if messages[index].get("content") != request:
            carried.append((index, [messages[index]]))
    return [message for _, pair in sorted(carried, key=lambda item: item[0]) for message in pair]


def request_pinned(pinned: frozenset[str], request: str) -> bool:
    """The current request is a pinned user message: a summary keeps it as a message of its own after
    itself (inside the summary's marker a pin could not follow it through the next summary)."""
    return bool(request) and user_pin_key({"role": "user", "content": request}) in pinned


def holding(pinned: frozenset[str], request: str, limit: int, notes: int = 0) -> str:
    """One line on what keeps the history over the limit, for the warning in a step's event (`notes`:
    the size of the model's notes message, 0 without notes)."""
    if len(request) > limit:
        return (
            f"the current request alone is {len(request):,} chars, over the {limit:,} limit: "
            "shorten it or save it as a file the model can read"
        )
    if pinned or notes:
        users = sum(key.startswith(USER_PIN_PREFIX) for key in pinned)
        results = len(pinned) - users
        held = ", ".join(
            part
            for part in (
                f"{results} pinned result(s)" if results else "",
                f"{users} pinned message(s)" if users else "",
                f"the model's notes ({notes:,} chars)" if notes else "",
            )
            if part
        )
        advice = "unpin some to free room" if pinned else "the notes stay until the model removes them"
        return (
            f"what remains (the current request, {held} and the newest "
            f"messages) cannot be shortened below {limit:,} chars: {advice}"
        )
    return f"what remains (the current request and the newest messages) cannot be shortened below {limit:,} chars"
