"""`Splice`: one change of a history, the unit a view, an index or a session log updates by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Splice:
    """One change of the history: `removed` messages at `start` were replaced by `added`."""

    start: int
    removed: int
    added: tuple[dict[str, Any], ...] = ()
