"""Engines: who manages the context. "client" is the seed's pipeline (core/compaction/); "server-clear"
and "server-compact" ask the Messages API to clear or compact on its side (`context_management`).

edits.py builds what a request carries for a server engine; blocks.py keeps the signed compaction
blocks intact; steps.py turns what the API reports it did into `CompactionStep` events; policies.py
and compare.py replay a session under every engine (`ctxtui inspect FILE --compare`).
"""

from __future__ import annotations

ENGINES: tuple[str, ...] = ("client", "server-clear", "server-compact")
REPLAY_ENGINES: tuple[str, ...] = (
    "none",
    "client",
    "client-cache-aware",
    "masking",
    "server-clear",
    "server-compact",
)
"""`ctxtui replay`'s engines (replay.py), named here so that the command line needs no heavy import."""
