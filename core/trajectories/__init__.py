"""Real agents' trajectories as ctxtui histories: recognised by content, never by name.

`read_trajectory(path)` returns a `Trajectory` (model.py) for a file of a kind some reader below
knows, None for a file none of them recognises, and raises `TrajectoryError` (one line) for a
recognised file it cannot read. Each reader module has `looks_like(data) -> bool` and
`read(path, data) -> Trajectory`, where `data` is the file's JSON value, or for a JSON Lines file the
list of its records (a line that is not JSON is a `core.jsonlines.BadLine` in that list).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core import jsonlines
from core.history.intake import valid_messages, valid_text
from core.jsonlines import BadLine
from core.trajectories import atif, codex, openhands, swe_agent
from core.trajectories.model import Trajectory, TrajectoryError

GZIP_MAGIC = b"\x1f\x8b"
MAX_INFLATED = 1 << 30  # bytes a gzipped trajectory may inflate to (the largest real ones are ~10 MB)

READERS = (atif, codex, swe_agent, openhands)
"""The readers, tried in this order (the first whose `looks_like` accepts the data reads it): the ones
that recognise a file by a field only their format has (ATIF's `schema_version`, Codex's `type` +
`payload` records) first; SWE-agent's chat `role`s and OpenHands' event `source`s never meet."""

__all__ = ["READERS", "Trajectory", "TrajectoryError", "parse_file", "read_trajectory", "recognise"]


def parse_file(path: Path) -> Any:
    """The file's JSON value, or the list of its JSON Lines records; None when it is neither.

    Only a regular file is read; nesting is bounded (core/jsonlines.py). Raises OSError when it
    cannot be read and UnicodeDecodeError when it is not UTF-8.
    """
    with jsonlines.open_regular(path, follow_symlinks=True) as handle:
        raw = handle.read()
    if raw[:2] == GZIP_MAGIC:
        raw = inflate(raw, path)
    text = raw.decode("utf-8")
    value = jsonlines.parse_json(text)
    if not isinstance(value, BadLine):
        return value
    if "\n" not in text.strip():
        return None
    records = [jsonlines.parse_json(line) for line in text.splitlines() if line.strip()]
    if all(isinstance(record, BadLine) for record in records):
        return None
    return records


def inflate(raw: bytes, path: Path, limit: int | None = None) -> bytes:
    """A gzip file's content, stopped while inflating past `limit` bytes (default MAX_INFLATED;
    OSError: damaged or too large)."""
    import zlib

    limit = MAX_INFLATED if limit is None else limit
    inflater = zlib.decompressobj(wbits=31)
    try:
        data = inflater.decompress(raw, limit)
    except zlib.error as error:
        raise OSError(f"not a readable gzip file ({error})") from None
    if inflater.unconsumed_tail:
        raise OSError(f"inflates to more than {limit:,} bytes")
    if not inflater.eof:
        raise OSError("a gzip file cut short")
    return data


def recognise(data: Any) -> Any:
    """The reader module that knows `data`, or None."""
    for reader in READERS:
        if reader.looks_like(data):
            return reader
    return None


def read_trajectory(path: Path, data: Any = None) -> Trajectory | None:
    """The trajectory in the file at `path` (`data`: its parsed content, when already read)."""
    if data is None:
        try:
            data = parse_file(path)
        except UnicodeDecodeError as error:
            raise TrajectoryError(f"{path}: not UTF-8 text ({error.reason})") from None
        except OSError as error:
            raise TrajectoryError(f"{path}: cannot be read: {error.strerror or error}") from None
    reader = recognise(data)
    if reader is None:
        return None
    trajectory: Trajectory = reader.read(path, data)
    # JSON may escape a lone surrogate: what enters a history is valid UTF-8 (core/history/intake.py)
    trajectory.messages = valid_messages(trajectory.messages)
    if trajectory.system is not None:
        trajectory.system = valid_text(trajectory.system)
    return trajectory
