"""The kinds of marker compaction leaves in the history (core/markers.py has their exact text)."""

from __future__ import annotations

from typing import Literal, get_args

MarkerKind = Literal["persisted", "placeholder", "snip", "compacted", "reactive"]
"""The markers compaction leaves in the history (see core/markers.py for their exact text)."""

MARKER_KINDS: tuple[MarkerKind, ...] = get_args(MarkerKind)
