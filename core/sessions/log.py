"""Sessions: the history and its events appended to a JSONL file as they happen.

Each line is one record: {"type": "meta" | "message" | "splice" | "replace" | "pins" | "notes" |
"compaction" | "event", ...}.
Replaying the records gives back the history, so `--resume` continues after a quit or a crash. A
"message" appends one message; a "splice" carries only what a change of the history changed (for
each splice its place, how many messages it removed and the messages it added), so a compaction
costs the log what it changed, not the whole history; a "replace" is a snapshot of the whole
history: at the start of a session that resumes one, when everything was replaced, and once the
splices since the last snapshot outweigh one (a damaged splice then costs at most that stretch).
A "compaction" record (its steps and files) says that the change right after it is a compaction,
so a replay can offer undo for it again: the history before that change and after it are the two
states undo needs (a later "undo" change takes the newest one back off). A "notes" record holds all
the model's notes after a change (the note tool); the last one is the notes a resume brings back. An
"event" record of kind
"LedgerChanged" is a change of the ledger (core/facts/ledger.py): replaying them gives it back.
Records are queued synchronously (callable from `finally` blocks) and written by a background task
in a worker thread. Settings and environment (the API key above all) are never recorded.

Crash safety: a record is one line, and the log remembers the size of the file after its last
complete write. A write that fails part way (a full disk) is cut back to that size at once, so no
broken line stays in the file; the lines it held stay queued for the next attempt, and `unsaved`
says what they are. Loading validates every record (messages must be API-shaped) and repairs the
tool pairing, so a bad or missing line costs that line, never the session: a record of any kind that
is not of its shape (a snapshot of junk, a splice adding junk, a torn ledger change) is skipped and
counted in `Replay.skipped`, and the rest replays. Files are 0600 in a
0700 directory inside the workdir, reached without following links (core/private.py).

Nothing is written until the session has a history record (a message, a splice or a snapshot): a
start that never got a request leaves no file behind, so `ctxtui sessions` lists no empty rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from core.compaction.steering import Compaction
from core.facts.ledger import Ledger, replay_change
from core.history import estimate_chars, pairing_problems
from core.history.intake import repair_history, valid_text
from core.history.messages import persons_words, repair_pairing, text_of
from core.jsonlines import BadLine, read_records
from core.private import open_private_dir, open_private_file
from core.text import error_line
from core.values.records import LedgerEntry
from core.values.splice import Splice

SESSIONS_DIR = "sessions"
SESSION_PREFIX = "session_"
SESSION_SUFFIX = ".jsonl"
HISTORY_RECORDS = frozenset({"message", "splice", "replace"})  # the records that make a session worth a file

Message = dict[str, Any]

# Content block types a Messages API history may hold, by role (what ctxtui writes, what the API returns).
USER_BLOCK_TYPES = frozenset(
    {"text", "image", "document", "tool_result", "search_result", "container_upload"}
)
ASSISTANT_BLOCK_TYPES = frozenset(
    {
        "text",
        "tool_use",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "compaction",  # a server compaction's signed block (core/history/blocks.py), kept verbatim
    }
)
KNOWN_BLOCK_TYPES = USER_BLOCK_TYPES | ASSISTANT_BLOCK_TYPES
_REQUIRED_KEYS: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "tool_use": (("id", str), ("name", str), ("input", dict)),
    "tool_result": (("tool_use_id", str),),
    "thinking": (("thinking", str),),
}


def valid_block(block: Any) -> bool:
    """A content block of a known type with the keys that type needs."""
    if not isinstance(block, dict) or block.get("type") not in KNOWN_BLOCK_TYPES:
        return False
    required = _REQUIRED_KEYS.get(block["type"], ())
    if not all(isinstance(block.get(key), kind) for key, kind in required):
        return False
    if block["type"] == "compaction":  # a summary, or null when the server's compaction failed
        return block.get("content") is None or (isinstance(block["content"], str) and bool(block["content"]))
    if block["type"] == "tool_result":
        content = block.get("content", "")
        return isinstance(content, str) or (
            isinstance(content, list) and all(valid_block(item) for item in content)
        )
    return True


def valid_message(message: Any) -> bool:
    """An API-shaped message: role user or assistant, content a string or a non-empty list of valid blocks."""
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return False
    content = message.get("content")
    if isinstance(content, str):
        return True
    allowed = USER_BLOCK_TYPES if message["role"] == "user" else ASSISTANT_BLOCK_TYPES
    return (
        isinstance(content, list)
        and bool(content)
        and all(valid_block(block) and block["type"] in allowed for block in content)
    )


def message_shaped(value: Any) -> bool:
    """A message the live history may have held, even one of a shape the API would refuse (a block type
    this version does not know): it keeps its place in a replay, so later splices still fit, and is
    dropped at the end. Anything else in a message's place (a number, a string, a `system` role) is junk."""
    return isinstance(value, dict) and value.get("role") in ("user", "assistant")


def snapshot_shaped(value: Any) -> bool:
    """A "replace" record's messages as the live log writes them: a list of message-shaped items, none
    of them junk, and (unless empty) at least one the API would accept: a live history always holds a
    sendable message, so a snapshot of nothing sendable is damage, which must not cost the session."""
    if not isinstance(value, list) or not all(message_shaped(item) for item in value):
        return False
    return not value or any(valid_message(item) for item in value)


def _compaction_shaped(entry: dict[str, Any]) -> bool:
    """A "compaction" record as `SessionLog.compaction` writes it (its reason, steps and files)."""
    return isinstance(entry.get("reason"), str) and all(
        isinstance(entry.get(key), list) and all(isinstance(item, str) for item in entry[key])
        for key in ("steps", "files")
    )


def _notes_shaped(notes: Any) -> TypeGuard[list[str]]:
    """A "notes" record's notes as `SessionLog.notes` writes them: a list of texts, none empty."""
    return isinstance(notes, list) and all(isinstance(text, str) and text for text in notes)


def _meta_shaped(entry: dict[str, Any]) -> bool:
    """A "meta" record whose fields readers use have their types (`created` is checked where it is shown)."""
    return all(entry.get(key) is None or isinstance(entry[key], str) for key in ("model", "workdir"))


def session_id(path: Path) -> str:
    """The id `ctxtui sessions` shows and `--resume ID` takes: the file name without prefix and suffix."""
    name = path.name
    if name.startswith(SESSION_PREFIX):
        name = name[len(SESSION_PREFIX) :]
    return name[: -len(SESSION_SUFFIX)] if name.endswith(SESSION_SUFFIX) else name


def _write_chunk(fd: int, data: memoryview) -> int:
    """One os.write (a seam where tests inject short writes and full disks)."""
    return os.write(fd, data)


@dataclass
class Replay:
    """What a session file replays to: the history, its meta record and how many records were bad."""

    messages: list[Message] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    records: int = 0
    skipped: int = 0  # lines that were cut, not JSON, or not of a valid shape
    pins: list[str] = field(
        default_factory=list
    )  # the last "pins" record: pinned tool_use ids and user: keys
    compactions: list[Compaction] = field(
        default_factory=list
    )  # undo records, oldest first (replay(undo_depth=))
    first_request: str = ""  # the first words of the person the file recorded (not a summary or marker)
    ledger: list[LedgerEntry] = field(default_factory=list)  # what the steps and drops took out, oldest first
    notes: list[str] = field(default_factory=list)  # the last "notes" record: the model's notes (note tool)

    @property
    def valid(self) -> bool:
        """A non-empty history the API would accept (what `--resume` needs)."""
        return bool(self.messages) and not pairing_problems(self.messages)


class SessionLog:
    """An append-only JSONL log of one session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queue: list[tuple[bytes, str]] = []  # (line, record type)
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self._good_size: int | None = None  # the file's size after the last complete write
        self._started = False  # a history record was queued: from then on the file is written
        self._edits = 0  # bytes of splice records since the last snapshot
        self.error: str | None = None

    @classmethod
    def create(cls, state_dir: Path, meta: dict[str, Any]) -> SessionLog:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        name = f"{SESSION_PREFIX}{stamp}-{os.getpid()}-{secrets.token_hex(3)}{SESSION_SUFFIX}"
        log = cls(state_dir / SESSIONS_DIR / name)
        log.record({"type": "meta", "created": time.time(), **meta})
        return log

    # --- writing ----------------------------------------------------------------------------------

    def record(self, entry: dict[str, Any]) -> None:
        """Queue one record; never blocks, never raises."""
        self._queue_line(_encode_line(entry), str(entry.get("type")))

    def _queue_line(self, line: bytes, kind: str) -> None:
        if self._closed:
            return
        self._queue.append((line, kind))
        self._started = self._started or kind in HISTORY_RECORDS
        if self._started:  # until then the records wait in memory: a session without history leaves no file
            self._wake.set()
            self._ensure_writer()

    @property
    def unsaved(self) -> str | None:
        """What is queued but not on disk, in words ("3 changes of the history and 1 other record (2,048
        bytes)"), or None when everything is saved."""
        if not self._started or not self._queue:
            return None
        history = sum(kind in HISTORY_RECORDS for _, kind in self._queue)
        parts = [
            _count(history, "change", " of the history"),
            _count(len(self._queue) - history, "other record"),
        ]
        size = sum(len(line) for line, _ in self._queue)
        return f"{' and '.join(part for part in parts if part)} ({size:,} bytes)"

    def failure(self) -> str | None:
        """Why the log is not complete on disk and what is missing from it (one line), or None when it is."""
        if self.error is None:
            return None
        unsaved = self.unsaved
        return self.error + (f"; not saved: {unsaved}" if unsaved else "")

    def message(self, message: dict[str, Any]) -> None:
        self.record({"type": "message", "message": message})

    def pins(self, ids: Iterable[str]) -> None:
        """Record the pinned tool_use ids (the last record wins on replay; older readers skip it)."""
        self.record({"type": "pins", "ids": sorted(ids)})

    def notes(self, notes: Iterable[str]) -> None:
        """Record the model's notes, all of them, in order (the last record wins on replay)."""
        self.record({"type": "notes", "notes": list(notes)})

    def compaction(self, reason: str, steps: Sequence[str], files: Sequence[str]) -> None:
        """Say that the next change (of this `reason`) is a compaction that undo can reverse."""
        self.record({"type": "compaction", "reason": reason, "steps": list(steps), "files": list(files)})

    def replace(self, messages: Sequence[Message], reason: str) -> None:
        """A snapshot: the whole history (replay starts over from it)."""
        self.record({"type": "replace", "reason": reason, "messages": list(messages)})
        self._edits = 0

    def change(self, changes: Sequence[Splice], messages: Sequence[Message], reason: str) -> None:
        """The history became `messages` by applying `changes` in order: record only what changed.

        Written as a "splice" record (with the length after, which replay checks), unless the first
        change replaces the whole history, or the splice records since the last snapshot would
        then outweigh a snapshot of `messages` (its characters): a snapshot is written instead.
        """
        if not changes:
            return
        length = len(messages)
        previous = length - sum(len(change.added) - change.removed for change in changes)
        first = changes[0]
        if any(change.removed < 0 for change in changes) or (first.start == 0 and first.removed == previous):
            self.replace(messages, reason)
            return
        line = _encode_line(
            {
                "type": "splice",
                "reason": reason,
                "length": length,
                "changes": [
                    {"start": change.start, "removed": change.removed, "added": list(change.added)}
                    for change in changes
                ],
            }
        )
        if self._edits + len(line) > estimate_chars(messages):
            self.replace(messages, reason)
            return
        self._edits += len(line)
        self._queue_line(line, "splice")

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
                await asyncio.to_thread(self._append_sync, b"".join(line for line, _ in lines))
                self.error = None
            except OSError as error:
                # Keep the lines: they are written by the next flush once the disk allows it.
                self._queue[:0] = lines
                self.error = f"cannot write session log {self.path}: {error_line(error)}"
                return
            self._wake.clear()

    def _append_sync(self, data: bytes) -> None:
        """Append whole lines; a failed attempt leaves the file as it was after the last good one.

        The sessions directory is walked (and made) from the workdir each time without following a
        link, so a `.ctxtui` or `sessions` swapped for a symlink is refused, never written through.
        """
        folder = self.path.parent
        dir_fd = open_private_dir(folder, folder.parent.parent)
        try:
            fd = open_private_file(dir_fd, self.path.name, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        finally:
            os.close(dir_fd)
        try:
            size = os.fstat(fd).st_size
            if self._good_size is None:
                self._good_size = _end_of_last_line(fd, size)
            if size != self._good_size:
                os.ftruncate(fd, self._good_size)  # drop the fragment of an earlier failed write
            try:
                view = memoryview(data)
                while view:
                    written = _write_chunk(fd, view)
                    if written <= 0:
                        raise OSError(f"short write ({len(data) - len(view)} of {len(data)} bytes)")
                    view = view[written:]
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(
                        fd, self._good_size
                    )  # no cut record stays in the file, even if no retry comes
                raise
            self._good_size += len(data)
        finally:
            os.close(fd)

    async def flush(self) -> None:
        """Write everything queued so far (nothing while the session has no history record)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._writer)
        if self._queue and self._started:
            await self._write_loop()

    def close_soon(self) -> None:
        """Close from synchronous code: what is queued is still written, nothing after it."""
        self._closed = True
        if self._started:
            self._ensure_writer()

    async def close(self) -> None:
        await self.flush()
        self._closed = True

    # --- reading ----------------------------------------------------------------------------------

    @staticmethod
    def load(path: Path) -> list[dict[str, Any]]:
        """Replay a session file into its history (validated, pairing repaired; never raises on content)."""
        return SessionLog.replay(path).messages

    @staticmethod
    def replay(path: Path, undo_depth: int = 0, *, follow_symlinks: bool = False) -> Replay:
        """Replay a session file: bad lines and records of the wrong shape are counted and skipped.

        Only a regular file is read (OSError otherwise; a symlink only with `follow_symlinks`), a
        line at a time with a bounded length (core/jsonlines.py). The history comes back fit to
        send: text valid UTF-8 and tool ids the API accepts (`core.history.intake.repair_history`),
        whatever wrote the file.

        With `undo_depth`, the newest that many compactions come back as undo records (in
        `Replay.compactions`): each one the history before its change and after it.
        """
        replay = Replay()
        # The history as the live one had it, messages of a bad shape included (so that the places
        # splices name stay right); they are dropped at the end.
        messages: list[Any] = []
        broken = False  # a splice did not fit: later splices wait for the next snapshot
        pending: dict[str, Any] | None = None  # a compaction record: the change right after it is one
        undo: list[Compaction] = []
        ledger = Ledger()
        for entry in read_records(path, follow_symlinks=follow_symlinks):
            replay.records += 1
            if isinstance(entry, BadLine):
                replay.skipped += 1  # a line cut short by a crash, not JSON, too long or too deep
                pending = None
                continue
            kind = entry.get("type") if isinstance(entry, dict) else None
            marked, pending = pending, None
            before = (
                tuple(messages)
                if undo_depth
                and marked is not None
                and kind in ("splice", "replace")
                and entry.get("reason") == marked.get("reason")
                else None
            )
            if kind == "message":
                message = entry.get("message")
                if not message_shaped(message):  # not a message at all: it never held a place in the history
                    replay.skipped += 1
                    continue
                messages.append(message)
                replay.skipped += not valid_message(message)
                _note_request(replay, messages[-1:])
            elif kind == "splice":
                added = None if broken else _apply_splices(messages, entry)
                broken = added is None
                replay.skipped += broken or not all(valid_message(message) for message in added or ())
                if not broken:
                    _note_request(replay, added or ())
                    _follow_undo(undo, entry, marked, before, messages, undo_depth)
            elif kind == "replace":
                snapshot = entry.get("messages")
                if not snapshot_shaped(snapshot):
                    # Never the live log's (its snapshots are lists of messages, one sendable at least): the
                    # history before it stays, and a later splice applies if it fits that history.
                    replay.skipped += 1
                    continue
                messages = list(snapshot)
                replay.skipped += not all(valid_message(message) for message in messages)
                broken = False
                _note_request(replay, messages)
                _follow_undo(undo, entry, marked, before, messages, undo_depth)
            elif kind == "compaction" and _compaction_shaped(entry):
                pending = entry
            elif kind == "pins" and isinstance(entry.get("ids"), list):
                replay.pins = [str(item) for item in entry["ids"] if isinstance(item, str)]
            elif kind == "notes" and _notes_shaped(entry.get("notes")):
                replay.notes = [valid_text(text) for text in entry["notes"]]
            elif kind == "meta" and not replay.meta and _meta_shaped(entry):
                replay.meta = entry
            elif kind == "event" and entry.get("kind") == "LedgerChanged":
                replay.skipped += not replay_change(ledger, entry.get("event"))
            elif kind != "event":
                replay.skipped += 1
        messages = [message for message in messages if valid_message(message)]
        replay.messages = repair_pairing(repair_history(messages))  # sessions written before the repair
        replay.compactions = _usable_undo(undo)
        replay.ledger = ledger.entries
        return replay


def _note_request(replay: Replay, added: Sequence[Any]) -> None:
    """Remember the first message of the person's own words the file records, in the order it recorded
    them: a later summary or snip marker at the head of the history does not replace it."""
    if replay.first_request:
        return
    for message in added:
        if valid_message(message) and persons_words(message) and (text := text_of(message).strip()):
            replay.first_request = text
            return


def _count(number: int, noun: str, tail: str = "") -> str:
    return "" if not number else f"{number:,} {noun}" + ("" if number == 1 else "s") + tail


def _follow_undo(
    undo: list[Compaction],
    entry: dict[str, Any],
    marked: dict[str, Any] | None,
    before: tuple[Any, ...] | None,
    messages: list[Any],
    depth: int,
) -> None:
    """Keep the undo records a replayed change makes or takes back (the newest `depth` of them)."""
    if not depth:
        return
    if before is not None and marked is not None:
        steps, files = marked.get("steps"), marked.get("files")
        if isinstance(steps, list) and isinstance(files, list):
            undo.append(
                Compaction(
                    tuple(str(step) for step in steps),
                    before,
                    tuple(messages),
                    tuple(str(name) for name in files),
                )
            )
            del undo[: max(0, len(undo) - depth)]
    elif entry.get("reason") == "undo" and undo:
        undo.pop()


def _usable_undo(undo: list[Compaction]) -> list[Compaction]:
    """The newest undo records whose both states are API-valid histories (a damaged one, and every
    record older than it, is left out: undo goes back newest first, through each in turn)."""
    usable: list[Compaction] = []
    for record in reversed(undo):
        states = (tuple(repair_history(record.before)), tuple(repair_history(record.after)))
        record = dataclasses.replace(record, before=states[0], after=states[1])
        if not all(
            all(valid_message(message) for message in state) and not pairing_problems(state)
            for state in states
        ):
            break
        usable.append(record)
    return usable[::-1]


def _apply_splices(messages: list[Any], entry: dict[str, Any]) -> list[Any] | None:
    """Apply a splice record to `messages` in place; returns the messages it added.

    None (and `messages` untouched) when the record does not fit: a change outside the history,
    a field of the wrong type, an added item that is no message, or a length after that is not the
    recorded one.
    """
    changes = entry.get("changes")
    if not isinstance(changes, list):
        return None
    length = len(messages)
    planned: list[tuple[int, int, list[Any]]] = []
    for change in changes:
        if not isinstance(change, dict):
            return None
        start, removed, added = change.get("start"), change.get("removed"), change.get("added")
        if not _is_count(start) or not _is_count(removed) or not isinstance(added, list):
            return None
        if not all(message_shaped(message) for message in added):
            return None  # junk where messages belong: not a change the live history made
        if start + removed > length:
            return None
        planned.append((start, removed, added))
        length += len(added) - removed
    if entry.get("length") != length:
        return None
    for start, removed, added in planned:
        messages[start : start + removed] = added
    return [message for _, _, added in planned for message in added]


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _encode_line(entry: dict[str, Any]) -> bytes:
    """One record as one UTF-8 line; text that cannot be UTF-8 (lone surrogates) is kept as JSON escapes."""
    text = json.dumps(entry, default=str, ensure_ascii=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(entry, default=str, ensure_ascii=True) + "\n").encode("ascii")


def _end_of_last_line(fd: int, size: int) -> int:
    """The offset just after the last newline of an open file of `size` bytes (0 for an empty one)."""
    position = size
    while position > 0:
        start = max(0, position - 65_536)
        chunk = os.pread(fd, position - start, start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        position = start
    return 0
