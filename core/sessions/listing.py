"""The sessions of a workdir: list them, find one by id, and pick the one `--resume` continues."""

from __future__ import annotations

import math
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.history.sizes import estimate_chars
from core.jsonlines import is_regular
from core.sessions.log import (
    SESSION_PREFIX,
    SESSION_SUFFIX,
    SESSIONS_DIR,
    Replay,
    SessionLog,
    session_id,
)


@dataclass(frozen=True)
class SessionInfo:
    """One session file as `ctxtui sessions` (and a session picker) shows it."""

    id: str
    path: Path
    started: float
    last_active: float
    messages: int
    chars: int
    first_request: str
    skipped: int = 0
    resumable: bool = False


LATEST_STAMP = (
    253_402_300_799  # 9999-12-31 23:59:59 UTC: the last second time.localtime and datetime can show
)


def plausible_stamp(value: Any, fallback: float) -> float:
    """`value` as seconds since the epoch when it is a finite number a clock can show, else `fallback`.

    A session file's `created` is untrusted: NaN, infinity or 1e300 would crash every view that
    formats it, and NaN would make JSON output invalid.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return fallback
    if isinstance(value, float) and not math.isfinite(value):
        return fallback
    return float(value) if 0 <= value <= LATEST_STAMP else fallback


def session_info(path: Path) -> SessionInfo | None:
    """What a session file holds; None when it cannot be read at all (or is not a regular file)."""
    try:
        status = path.lstat()
        replay = SessionLog.replay(path)
    except OSError:
        return None
    modified = plausible_stamp(status.st_mtime, 0.0)
    return SessionInfo(
        id=session_id(path),
        path=path,
        started=plausible_stamp(replay.meta.get("created"), modified),
        last_active=modified,
        messages=len(replay.messages),
        chars=estimate_chars(replay.messages),
        first_request=replay.first_request,
        skipped=replay.skipped,
        resumable=replay.valid,
    )


def _session_files_newest_first(state_dir: Path) -> list[Path]:
    folder = state_dir / SESSIONS_DIR
    if not folder.is_dir():
        return []
    stamped: list[tuple[float, str, Path]] = []
    for path in folder.glob(f"{SESSION_PREFIX}*{SESSION_SUFFIX}"):
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):  # a FIFO would hang the reader, a symlink may lead to /dev/zero
            stamped.append((info.st_mtime, path.name, path))
    return [path for _, _, path in sorted(stamped, reverse=True)]


def latest_session(state_dir: Path) -> Path | None:
    """The newest session that replays to a valid, non-empty history (what `--resume` takes).

    Files are tried newest first and replayed one by one, so the usual case reads one file.
    """
    found = latest_replay(state_dir)
    return found[1] if found is not None else None


def latest_replay(state_dir: Path, undo_depth: int = 0) -> tuple[Replay, Path] | None:
    """`latest_session` with the replay it made (with `undo_depth` undo records), so it is not replayed again."""
    for path in _session_files_newest_first(state_dir):
        try:
            replay = SessionLog.replay(path, undo_depth)
        except OSError:
            continue
        if replay.valid:
            return replay, path
    return None


def list_sessions(state_dir: Path) -> list[SessionInfo]:
    """The sessions under `state_dir`, newest (last active) first."""
    return [info for path in _session_files_newest_first(state_dir) if (info := session_info(path))]


def find_session(state_dir: Path, wanted: str) -> Path | None:
    """The session file with this id (or a unique id prefix, or a path to it); None if there is none."""
    candidate = Path(wanted)
    if candidate.suffix == SESSION_SUFFIX and candidate.is_file():
        return candidate
    folder = state_dir / SESSIONS_DIR
    if not folder.is_dir() or "/" in wanted or wanted in ("", ".", ".."):
        return None
    exact = folder / f"{SESSION_PREFIX}{wanted}{SESSION_SUFFIX}"
    if is_regular(exact):
        return exact
    matches = [
        path
        for path in folder.glob(f"{SESSION_PREFIX}*{SESSION_SUFFIX}")
        if session_id(path).startswith(wanted) and is_regular(path)
    ]
    return matches[0] if len(matches) == 1 else None


class ResumeError(ValueError):
    """`--resume` found nothing to continue (one line); a new session is never started silently instead."""


def resume_replay(state_dir: Path, wanted: str | None, undo_depth: int = 0) -> tuple[Replay, Path]:
    """The session `--resume` continues, replayed once: the one named, else the newest that replays to
    a valid history. ResumeError when there is none, or the one named has no history to continue."""
    folder = state_dir / SESSIONS_DIR
    if not wanted:
        found = latest_replay(state_dir, undo_depth)
        if found is None:
            raise ResumeError(
                f"--resume: no session in {folder} has a history to continue "
                "(see ctxtui sessions; start without --resume for a new one)"
            )
        return found
    path = find_session(state_dir, wanted)
    if path is None:
        raise ResumeError(f"--resume {wanted}: no such session in {folder} (see ctxtui sessions)")
    try:
        replay = SessionLog.replay(path, undo_depth, follow_symlinks=True)  # a path the user named
    except OSError as error:
        raise ResumeError(f"--resume {wanted}: cannot read {path}: {error.strerror or error}") from None
    if not replay.valid:
        unreadable = (
            f", {replay.skipped} of its {replay.records} records unreadable" if replay.skipped else ""
        )
        raise ResumeError(
            f"--resume {wanted}: session {session_id(path)} has no history to continue "
            f"(empty{unreadable}); see ctxtui sessions"
        )
    return replay, path
