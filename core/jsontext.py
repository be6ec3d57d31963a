"""One message as JSON text, exactly as `json.dumps(message, default=str, ensure_ascii=False)` writes it.

The history is measured (`core.history.message_chars`) and written to transcripts message by
message, tens of thousands of times per snip of a long history. `json.dumps` with arguments builds a
new `JSONEncoder` and a new C encoder on every call, which is a third of the time for a typical
message; this module builds the C encoder (the one `JSONEncoder.iterencode` builds, with the same
arguments) once per thread and calls it directly. When the interpreter has no C encoder, or a call
fails, `json.dumps` itself answers (so errors are the ones json.dumps raises).
"""

from __future__ import annotations

import json
import json.encoder
import threading
from collections.abc import Callable
from typing import Any

Encode = Callable[[Any, int], Any]

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
