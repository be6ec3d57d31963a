"""The JSON size of a history, exactly as `json.dumps(messages, default=str, ensure_ascii=False)` writes it.

`estimate_chars` is the figure the gauge shows and the limit is compared with (a contract). A history
is measured message by message: `message_chars` is one message's JSON, and a list adds its brackets
and one ", " between items (`list_chars`). `dumps` writes one value as that JSON with one C encoder
per thread: `json.dumps` with arguments builds a new encoder on every call, a third of the time for
a typical message, and a long history is measured tens of thousands of times per snip.
"""

from __future__ import annotations

import json
import json.encoder
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

Encode = Callable[[Any, int], Any]

LIST_BRACKETS = 2  # "[" and "]" (or "{" and "}")
SEPARATOR = 2  # ", " between items, as json.dumps writes them

_MAKE_ENCODER: Callable[..., Encode] | None = getattr(json.encoder, "c_make_encoder", None)
_ENCODE_STRING: Callable[[str], str] = json.encoder.encode_basestring  # what ensure_ascii=False uses
_local = threading.local()


def _new_encoder() -> Encode | None:
    """The encoder `JSONEncoder(default=str, ensure_ascii=False).iterencode(..., _one_shot=True)` makes."""
    if _MAKE_ENCODER is None:
        return None
    markers: dict[int, Any] = {}  # check_circular=True: the table of containers being encoded
    return _MAKE_ENCODER(markers, str, _ENCODE_STRING, None, ": ", ", ", False, False, True)


def dumps(value: Any) -> str:
    """`json.dumps(value, default=str, ensure_ascii=False)`, with one encoder per thread."""
    try:
        encode: Encode | None = _local.encode
    except AttributeError:
        encode = _local.encode = _new_encoder()
    if encode is None:
        return json.dumps(value, default=str, ensure_ascii=False)
    try:
        return "".join(encode(value, 0))
    except Exception:
        # A failed call may leave entries in the encoder's table of containers: start a new one,
        # and let json.dumps give the result or raise its own error.
        _local.encode = _new_encoder()
        return json.dumps(value, default=str, ensure_ascii=False)


def request_chars(request: str) -> int:
    """The size of a request, the one figure every view gives for it: the chars its user message takes
    in the context (its JSON, as `estimate_chars` counts it and the message tree labels it)."""
    return message_chars({"role": "user", "content": request})


def request_oversize(request: str, limit: int) -> int | None:
    """`request_chars(request)` when the request alone is over `limit`, which no compaction step can
    shrink; None when it fits."""
    size = request_chars(request)
    return size if size > limit else None


def message_chars(message: Any) -> int:
    """Length of one message serialised exactly as `estimate_chars` serialises it inside a list."""
    return len(dumps(message))


def list_chars(sizes: Sequence[int] | Iterator[int], count: int) -> int:
    """The JSON length of a list whose items serialise to `sizes`."""
    total = sum(sizes)
    return LIST_BRACKETS + total + SEPARATOR * max(count - 1, 0)


def estimate_chars(messages: Sequence[Any]) -> int:
    """Exactly `len(json.dumps(messages, default=str, ensure_ascii=False))`.

    A `core.history.store.History` answers from its per-message tally (time proportional to its changes);
    any other list has no record of what changed and is measured message by message.
    """
    known = getattr(messages, "chars", None)  # a History keeps its own figure
    if isinstance(known, int):
        return known
    return list_chars(map(message_chars, messages), len(messages))
