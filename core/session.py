"""Sessions: the history and its events appended to a JSONL file as they happen.

Each line is one record: {"type": "meta" | "message" | "replace" | "event", ...}. Replaying the
records gives back the history, so `--resume` continues after a quit or a crash. Records are queued
synchronously (callable from `finally` blocks) and written by a background task with aiofiles.
Settings and environment (the API key above all) are never recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

import aiofiles
import aiofiles.os

from core.history import repair_pairing

SESSIONS_DIR = "sessions"


class SessionLog:
    """An append-only JSONL log of one session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queue: list[str] = []
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self.error: str | None = None

    @classmethod
    def create(cls, state_dir: Path, meta: dict[str, Any]) -> SessionLog:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        path = state_dir / SESSIONS_DIR / f"session_{stamp}-{os.getpid()}-{secrets.token_hex(3)}.jsonl"
        log = cls(path)
        log.record({"type": "meta", "created": time.time(), **meta})
        return log

    @staticmethod
    def latest(state_dir: Path) -> Path | None:
        folder = state_dir / SESSIONS_DIR
        if not folder.is_dir():
            return None
        files = sorted(folder.glob("session_*.jsonl"), key=lambda path: (path.stat().st_mtime, path.name))
        return files[-1] if files else None

    # --- writing ----------------------------------------------------------------------------------

    def record(self, entry: dict[str, Any]) -> None:
        """Queue one record; never blocks, never raises."""
        if self._closed:
            return
        self._queue.append(json.dumps(entry, default=str, ensure_ascii=False) + "\n")
        self._wake.set()
        self._ensure_writer()

    def message(self, message: dict[str, Any]) -> None:
        self.record({"type": "message", "message": message})

    def replace(self, messages: list[dict[str, Any]], reason: str) -> None:
        self.record({"type": "replace", "reason": reason, "messages": messages})

    def event(self, event: Any) -> None:
        if dataclasses.is_dataclass(event) and not isinstance(event, type):
            self.record({"type": "event", "kind": type(event).__name__, "event": dataclasses.asdict(event)})

    def _ensure_writer(self) -> None:
        if self._writer is not None and not self._writer.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._writer = loop.create_task(self._write_loop())

    async def _write_loop(self) -> None:
        while self._queue:
            lines, self._queue = self._queue, []
            try:
                await aiofiles.os.makedirs(self.path.parent, exist_ok=True)
                async with aiofiles.open(self.path, "a", encoding="utf-8", errors="surrogatepass") as handle:
                    await handle.write("".join(lines))
                self.error = None
            except OSError as error:
                # Keep the lines: they are written by the next flush once the disk allows it.
                self._queue[:0] = lines
                self.error = f"cannot write session log {self.path}: {' '.join(str(error).split())}"
                return
            self._wake.clear()

    async def flush(self) -> None:
        """Write everything queued so far."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._writer)
        if self._queue:
            await self._write_loop()

    def close_soon(self) -> None:
        """Close from synchronous code: what is queued is still written, nothing after it."""
        self._closed = True
        self._ensure_writer()

    async def close(self) -> None:
        await self.flush()
        self._closed = True

    # --- reading ----------------------------------------------------------------------------------

    @staticmethod
    def load(path: Path) -> list[dict[str, Any]]:
        """Replay a session file into its history (API-valid: unanswered tool calls are closed)."""
        messages: list[dict[str, Any]] = []
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a crash
                if not isinstance(entry, dict):
                    continue
                if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
                    messages.append(entry["message"])
                elif entry.get("type") == "replace" and isinstance(entry.get("messages"), list):
                    messages = list(entry["messages"])
        return repair_pairing(messages)
