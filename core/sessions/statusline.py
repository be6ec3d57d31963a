"""`ctxtui statusline`: one line for Claude Code's status bar, from its status-line JSON and transcript.

Claude Code runs the `statusLine` command after each assistant message (at most every 300 ms) with
a JSON object on stdin: `session_id`, `transcript_path`, `model` {`id`, `display_name`}, `workspace`
{`current_dir`, `project_dir`}, `cwd`, `cost` {`total_cost_usd`, ...} and, in newer versions,
`context_window` {`context_window_size`, `current_usage`, `used_percentage`}. Every field may be
missing. The line shows the context used of the model's real window (the last main-chain assistant
message's usage: input + cache reads + cache writes), the prompt cache (warm with the time left of
its TTL since the last call, 5 minutes unless 1-hour writes were seen; or cold), and the last
compaction (a `compact_boundary` record's `compactMetadata`: trigger and tokens before; after: the
context of the first call past it).

The transcript is read incrementally: the figures and the byte offset read so far are kept in
`<workdir>/.ctxtui/statusline/<hash of the path>.json`, keyed by the transcript's path, size and
mtime, so a call reads only what was appended since the last one (nothing when the file is as it
was). A first sight of a huge file reads its last `FIRST_READ_BYTES` only. Whatever the input (bad
JSON, no transcript, a binary file), the command prints one short line and exits 0: a status line
must never break its host. Every text from the input passes `core.text.visible` and is flattened
to one line, so no terminal control reaches the output.

Imports are kept to the standard library's light modules (start-up is most of the cost).
"""

from __future__ import annotations

import json
import os
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from core.text import one_line, visible

CACHE_VERSION = 1
CACHE_FOLDER = Path(".ctxtui") / "statusline"
FIRST_READ_BYTES = 16 * 1024 * 1024  # a first sight of a bigger transcript reads its tail only
STEP_READ_BYTES = 16 * 1024 * 1024  # more appended than this since the last call: the tail only
MAX_LINE_BYTES = 4 * 1024 * 1024  # longer lines (a huge tool result) carry no usage worth parsing
MAX_STDIN_BYTES = 1024 * 1024
DEFAULT_COLUMNS = 120
TTL_5M = 300
TTL_1H = 3600
_WANTED = (b'"usage"', b"compact_boundary", b"isCompactSummary")


def _figures() -> dict[str, Any]:
    """The running figures of a transcript, as the cache stores them."""
    return {
        "tokens": None,  # context of the last main-chain call: input + cache read + cache write
        "model": None,
        "last_call": None,  # epoch seconds of the last call's record
        "ttl_1h": False,  # a 1-hour cache write was seen
        "compactions": 0,
        "compact_at": None,
        "compact_trigger": None,
        "compact_pre": None,  # compactMetadata.preTokens
        "compact_post": None,  # the context of the first call after the boundary
        "partial": False,  # the start of a huge file was never read
    }


# --- reading the transcript ---------------------------------------------------------------------


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def apply_record(figures: dict[str, Any], record: Any) -> None:
    """Fold one transcript record into the running figures."""
    if not isinstance(record, dict) or record.get("isSidechain"):
        return  # a sub-agent's calls have a context of their own
    kind = record.get("type")
    if kind == "system" and record.get("subtype") == "compact_boundary":
        meta = record.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        figures["compactions"] += 1
        figures["compact_at"] = _timestamp(record.get("timestamp"))
        trigger = meta.get("trigger")
        figures["compact_trigger"] = trigger if isinstance(trigger, str) else None
        figures["compact_pre"] = _number(meta.get("preTokens")) or None
        figures["compact_post"] = None
        return
    if kind != "assistant":
        return
    message = record.get("message")
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return
    tokens = (
        _number(usage.get("input_tokens"))
        + _number(usage.get("cache_read_input_tokens"))
        + _number(usage.get("cache_creation_input_tokens"))
    )
    if tokens == 0:
        return  # a synthetic message (an API error written as a reply) made no call
    figures["tokens"] = tokens
    model = message.get("model") if isinstance(message, dict) else None
    if isinstance(model, str) and model and not model.startswith("<"):
        figures["model"] = model
    figures["last_call"] = _timestamp(record.get("timestamp")) or figures["last_call"]
    creation = usage.get("cache_creation")
    if isinstance(creation, dict) and _number(creation.get("ephemeral_1h_input_tokens")):
        figures["ttl_1h"] = True
    if figures["compactions"] and figures["compact_post"] is None:
        figures["compact_post"] = tokens


def read_lines(figures: dict[str, Any], data: bytes) -> int:
    """Fold the complete lines of `data` in; returns how many bytes they took (a partial last line is left)."""
    end = data.rfind(b"\n") + 1
    for line in data[:end].split(b"\n"):
        if len(line) > MAX_LINE_BYTES or not any(word in line for word in _WANTED):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        apply_record(figures, record)
    return end


def read_transcript(path: Path, cache: dict[str, Any] | None) -> dict[str, Any]:
    """The transcript's figures, read from where `cache` left off (or from the start, or its tail)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        import stat

        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        size, mtime = info.st_size, info.st_mtime_ns
        same_file = (
            cache is not None
            and cache.get("version") == CACHE_VERSION
            and cache.get("path") == str(path)
            and cache.get("inode") == info.st_ino
            and isinstance(cache.get("offset"), int)
            and 0 <= cache["offset"] <= size
        )
        if same_file and cache is not None and cache.get("size") == size and cache.get("mtime") == mtime:
            return cache
        figures = dict(cache["figures"]) if same_file and cache is not None else _figures()
        offset = cache["offset"] if same_file and cache is not None else 0
        limit = STEP_READ_BYTES if same_file else FIRST_READ_BYTES
        jumped = size - offset > limit
        if jumped:
            offset = size - limit
            figures["partial"] = True
        os.lseek(fd, offset, os.SEEK_SET)
        data = _read_all(fd, size - offset)
        if jumped:
            skip = data.find(b"\n") + 1  # a line cut by the tail's start
            data, offset = data[skip:], offset + skip
        used = read_lines(figures, data)
        return {
            "version": CACHE_VERSION,
            "path": str(path),
            "inode": info.st_ino,
            "size": size if offset + used == size else offset + used,
            "mtime": mtime if offset + used == size else None,
            "offset": offset + used,
            "figures": figures,
            "windows": cache.get("windows", {}) if same_file and cache is not None else {},
        }
    finally:
        os.close(fd)


def _read_all(fd: int, count: int) -> bytes:
    chunks: list[bytes] = []
    while count > 0:
        chunk = os.read(fd, min(count, 1 << 22))
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


# --- the cache ----------------------------------------------------------------------------------


def _cache_name(transcript: Path) -> str:
    """A file name per transcript (the cache holds the full path and is checked against it: a clash
    of checksums costs a re-read, never a wrong figure). zlib: hashlib costs more to import than the read."""
    raw = str(transcript).encode("utf-8", "surrogateescape")
    stem = "".join(char if char.isalnum() or char in "-_" else "_" for char in transcript.stem[:64])
    return f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}-{stem}.json"


def load_cache(workdir: Path | None, transcript: Path) -> dict[str, Any] | None:
    if workdir is None:
        return None
    try:
        fd = os.open(
            workdir / CACHE_FOLDER / _cache_name(transcript), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        )
        with os.fdopen(fd, "rb") as handle:
            cached = json.loads(handle.read(1 << 20))
    except (OSError, ValueError):
        return None
    return cached if isinstance(cached, dict) and isinstance(cached.get("figures"), dict) else None


def save_cache(workdir: Path | None, transcript: Path, cache: dict[str, Any]) -> None:
    """Write the cache atomically inside `workdir`'s `.ctxtui/` (never through a link); errors are ignored."""
    if workdir is None:
        return
    from core.private import open_private_dir, open_private_file

    name = _cache_name(transcript)
    temporary = f".{name}.{os.getpid()}.tmp"
    try:
        folder = open_private_dir(workdir / CACHE_FOLDER, workdir)
    except (OSError, ValueError):
        return
    try:
        fd = open_private_file(folder, temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, json.dumps(cache).encode())
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        pass
    finally:
        os.close(folder)


# --- the line -----------------------------------------------------------------------------------


def _short(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M".replace(".0M", "M")
    if tokens >= 1_000:
        return f"{round(tokens / 1_000)}k"
    return str(tokens)


def _ago(seconds: float) -> str:
    seconds = max(seconds, 0)
    if seconds < 60:
        return f"{int(seconds)}s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    return f"{int(seconds // 86400)}d ago"


def _text(value: Any, limit: int = 40) -> str:
    """Untrusted text made safe for one terminal line."""
    return one_line(visible(value), limit) if isinstance(value, str) else ""


def window_of(model_id: str | None, given: Any) -> int | None:
    """The model's real window: Claude Code's own figure, else ctxtui's table (`[1m]`: the 1M window)."""
    size = given.get("context_window_size") if isinstance(given, dict) else None
    if _number(size):
        return int(size or 0)
    if not model_id:
        return None
    if model_id.strip().lower().endswith("[1m]"):
        return 1_000_000
    from core.usage.prices import window_for

    return window_for(model_id).tokens


def _model_id(status: dict[str, Any], figures: dict[str, Any] | None) -> str | None:
    model = status.get("model")
    model_id = model.get("id") if isinstance(model, dict) else None
    if isinstance(model_id, str) and model_id:
        return model_id
    recorded = (figures or {}).get("model")
    return recorded if isinstance(recorded, str) and recorded else None


def compose(
    status: dict[str, Any], figures: dict[str, Any] | None, now: float, window: int | None = None
) -> list[str]:
    """The line's parts, most important first (`window`: the model's, when already known)."""
    given_model = status.get("model")
    model: dict[str, Any] = given_model if isinstance(given_model, dict) else {}
    model_id = _model_id(status, figures)
    name = _text(model.get("display_name")) or _text(model_id) or _text((figures or {}).get("model"))
    parts: list[str] = []
    tokens = (figures or {}).get("tokens")
    if tokens is None:
        given = status.get("context_window")
        usage = given.get("current_usage") if isinstance(given, dict) else None
        if isinstance(usage, dict):
            tokens = (
                _number(usage.get("input_tokens"))
                + _number(usage.get("cache_read_input_tokens"))
                + _number(usage.get("cache_creation_input_tokens"))
            ) or None
    window = window or window_of(model_id, status.get("context_window"))
    if tokens is not None and window:
        parts.append(f"ctx {_short(tokens)}/{_short(window)} {100 * tokens / window:.0f}%")
    elif tokens is not None:
        parts.append(f"ctx {_short(tokens)} (window unknown)")
    else:
        parts.append("ctx -")
    if figures is not None and figures.get("last_call") is not None:
        ttl = TTL_1H if figures.get("ttl_1h") else TTL_5M
        left = figures["last_call"] + ttl - now
        label = "1h" if ttl == TTL_1H else "5m"
        if 0 < left <= ttl:
            parts.append(f"cache warm {int(left // 60)}:{int(left % 60):02d} left ({label})")
        else:
            parts.append(f"cache cold ({label} TTL)")
    if figures is not None and figures.get("compactions"):
        count = figures["compactions"]
        trigger = _text(figures.get("compact_trigger"), 10)
        pre, post = figures.get("compact_pre"), figures.get("compact_post")
        taken = f" {_short(pre)}→{_short(post)}" if pre and post else (f" from {_short(pre)}" if pre else "")
        when = f" {_ago(now - figures['compact_at'])}" if figures.get("compact_at") else ""
        times = f" ({count}×)" if count > 1 else ""
        parts.append(f"compacted{when}{' ' + trigger if trigger else ''}{taken}{times}")
    elif figures is not None and not figures.get("partial"):
        parts.append("no compaction")
    cost = status.get("cost")
    usd = cost.get("total_cost_usd") if isinstance(cost, dict) else None
    if isinstance(usd, int | float) and not isinstance(usd, bool) and 0 <= usd < 1e9:
        parts.append(f"${usd:.2f}")
    if name:
        parts.insert(0, name)
    return parts


def _known_window(status: dict[str, Any], cache: dict[str, Any]) -> int | None:
    """The window without importing the table: Claude Code's figure, or the cache's for this model."""
    given = status.get("context_window")
    size = given.get("context_window_size") if isinstance(given, dict) else None
    if _number(size):
        return int(size or 0)
    windows = cache.get("windows")
    known = windows.get(_model_id(status, cache.get("figures"))) if isinstance(windows, dict) else None
    return known if _number(known) else None


def fit(parts: list[str], columns: int) -> str:
    """The parts joined while they fit in `columns`, the last cut with an ellipsis."""
    line = ""
    for part in parts:
        candidate = part if not line else f"{line} · {part}"
        if len(candidate) > columns:
            break
        line = candidate
    if not line and parts:
        line = parts[0]
    return one_line(line, max(columns, 1))


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return DEFAULT_COLUMNS
    return columns if 10 <= columns <= 1000 else DEFAULT_COLUMNS


def _workdir(status: dict[str, Any]) -> Path | None:
    """Where the cache lives: the workspace's project folder, its current one, the input's cwd, else ours."""
    given = status.get("workspace")
    workspace: dict[str, Any] = given if isinstance(given, dict) else {}
    for value in (workspace.get("project_dir"), workspace.get("current_dir"), status.get("cwd")):
        if isinstance(value, str) and value and os.path.isabs(value) and os.path.isdir(value):
            return Path(value)
    try:
        return Path.cwd()
    except OSError:
        return None


def statusline(raw: bytes, now: float | None = None) -> str:
    """The line for one status-line JSON input (never raises for any input)."""
    now = time.time() if now is None else now
    columns = _columns()
    try:
        status = json.loads(raw)
    except (ValueError, RecursionError):
        return fit(["ctxtui: status input is not JSON"], columns)
    if not isinstance(status, dict):
        return fit(["ctxtui: status input is not a JSON object"], columns)
    figures: dict[str, Any] | None = None
    note: str | None = None
    window: int | None = None
    transcript = status.get("transcript_path")
    if isinstance(transcript, str) and transcript and "\x00" not in transcript:
        path = Path(transcript)
        workdir = _workdir(status)
        cache = load_cache(workdir, path)
        try:
            fresh = read_transcript(path, cache)
        except OSError:
            note = "no transcript"
        else:
            figures = fresh["figures"]
            changed = fresh is not cache
            window = _known_window(status, fresh)
            if window is None and (model_id := _model_id(status, figures)):
                window = window_of(model_id, None)  # the table's import is paid once per model
                fresh = {**fresh, "windows": {**fresh.get("windows", {}), model_id: window}}
                changed = True
            if changed:
                save_cache(workdir, path, fresh)
    else:
        note = "no transcript"
    parts = compose(status, figures, now, window)
    if note:
        parts.append(note)
    return fit(parts, columns)


def main(argv: list[str] | None = None) -> int:
    """Read stdin, print one line, exit 0 whatever happened."""
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
        line = (
            fit(["ctxtui: status input too large"], _columns())
            if len(raw) > MAX_STDIN_BYTES
            else statusline(raw)
        )
    except Exception:  # a status line must never break its host
        line = "ctxtui: status unavailable"
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except OSError:
        pass
    return 0
