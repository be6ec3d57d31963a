"""The recall index: an SQLite FTS5 index of everything the archive wrote, under `.ctxtui/recall.sqlite`.

It follows the archive's writes: the archive hands over each batch it wrote (core/archive.py,
`Archive.watch`) in the writing thread, once the manifest vouches for it, with the text as written.
There the index only queues the batch (an append: bench/bench_recall.py measures it against the
write); its own thread indexes what is queued, in one transaction, once the archive's writes pause
(`QUIET_SECONDS`: a compaction writes in a burst, then the model is called) or at once when a search
waits. Nothing is read again and the history is never walked. Indexing in the writing thread itself
was measured at one to three times the write's own time: too much to add to every compaction.

The index is a cache of what the manifests vouch for: when it is missing, damaged (not a database,
a schema or tokenizer of another version, an SQLite error), deleted while open, or behind the
manifests (a failed batch, another process's writes), it is brought back from them, reading only the
files they vouch for, each checked against its recorded SHA-256. A file planted in the archive is never
indexed, and a hit is read back from its file only when the manifest still vouches for those very
bytes (else it is dropped and forgotten): a snippet always comes from the file as ctxtui wrote it. A
failure is counted (`failures`, `problem`) and never fails or loses an archive write.

Every use of the database happens on the index's one thread, so a search sees every batch archived
before it. The text rows are contentless (the files hold the text): a hit's line and snippet are read
from the file.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from core.archive import Archive, ArchiveError, Written
from core.private import NO_FOLLOW, PRIVATE_FILE_MODE, open_private_dir
from core.recall.extract import Chunk, line_chunk, result_chunks, transcript_chunks
from core.recall.hits import Hit, SearchResult, best_line, snippet
from core.recall.query import Query, parse
from core.text import error_line

TOKENIZER = "trigram"
"""The FTS5 tokenizer: trigram, picked by measurement (bench/bench_recall.py --tokenizer both: the
archives of 99 SWE-agent trajectories replayed under `client` and `masking`, each engine's regret set
queried with the identifier, path or error line the agent used later).

Whole names are found as well either way: recall@3 97.8% / 96.3% (client / masking) with trigram,
98.2% / 96.1% with unicode61, queries under 1 ms at the median and 2 ms at the 95th percentile with
both. A part of a name is where they differ: asked for a path's file name or the middle half of an
identifier (`foo_bar` of `test_foo_bar`, `parse` of `_parsed_args`), trigram finds the right file in
the top 3 for 95.0% / 91.0%, unicode61 for 17.5% / 15.2%, because unicode61 matches whole tokens only
(and splits identifiers at `_`, `.` and `/`). The price: an index about five times larger (3.1x the
archive's bytes on client against 0.6x) and about three times the indexing work, done on the index's
own thread. A model remembers names in part, and truncated error lines end mid-word: trigram."""

SCHEMA_VERSION = 1
DB_NAME = "recall.sqlite"
STATE_DIR = ".ctxtui"
MAX_FILE_BYTES = 64 * 1024 * 1024  # a vouched file larger than this is not indexed
MAX_LIMIT = 20
_CACHE_BYTES = 32 * 1024 * 1024  # texts of files read back for snippets, kept by their stat
LATER_DISCOUNT = 1.0
"""Ranking: a file's bm25 is divided by 1 + LATER_DISCOUNT x its place in the order files were archived
(0 for the first, 1 for the last), so where a name first appeared ranks above its later echoes at equal
relevance (bench/bench_recall.py: recall@3 95.7% / 94.1% on the client / masking regret sets by bm25
alone, 97.8% / 96.3% with it; ordering by archive order alone scored higher on this measure, 98.1% /
97.6%, but ignores how well a file matches)."""
QUIET_SECONDS = 0.05  # the archive's writes pause this long before the index works on them
_OVERFETCH = 3  # rows asked for per hit wanted: a dropped file leaves room for the next

T = TypeVar("T")


@dataclass
class IndexStats:
    """What the index has done, in seconds: handing batches over in the archive's writing thread
    (`taken`, its wall time; `taken_cpu`, that thread's CPU time), indexing them in its own (`indexed`, the thread's CPU time), and bringing
    the index in line with the manifests (`synced`, CPU time)."""

    taken: float = 0.0
    taken_cpu: float = 0.0
    indexed: float = 0.0
    synced: float = 0.0
    batches: int = 0
    files: int = 0
    rebuilds: int = 0
    searches: int = 0


@dataclass
class _Db:
    connection: sqlite3.Connection
    identity: tuple[int, int]  # (device, inode) of the file it opened
    known: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (file id, sha256)
    synced: tuple[int, int] | None = None  # the manifests' sizes when last brought in line with them


class RecallIndex:
    """The search index over one archive; `search` ranks the archived files that hold a query."""

    def __init__(self, archive: Archive, path: Path | None = None, tokenizer: str = TOKENIZER) -> None:
        self.archive = archive
        self.path = path or archive.workdir / STATE_DIR / DB_NAME
        self.tokenizer = tokenizer
        self.failures = 0
        """Index updates that failed (each followed by bringing the index back from the manifests)."""
        self.problem: str | None = None
        """The last failure, in one line."""
        self.stats = IndexStats()
        self._db: _Db | None = None
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        self._texts: dict[str, tuple[tuple[int, int, int], str]] = {}
        self._text_bytes = 0
        self._pending: collections.deque[list[Written]] = collections.deque()
        self._poked = False
        self._last_take = 0.0
        self._wanted = threading.Event()  # a search or a flush waits: index now, not when writes pause
        self._start()
        archive.watch(self._take)

    # --- the archive's side: hand a batch over ------------------------------------------------------

    def _take(self, written: list[Written]) -> None:
        """Queue a batch the archive just wrote (in its writing thread: an append, and a wake-up for the
        index's thread when it is not already due to run)."""
        started, cpu = time.perf_counter(), time.thread_time()
        self._pending.append(written)
        self._last_take = time.monotonic()
        if not self._poked:
            self._poked = True
            with contextlib.suppress(RuntimeError):  # closed: the next index brings it in from the manifest
                self._submit(self._drain_when_quiet)
        self.stats.taken += time.perf_counter() - started
        self.stats.taken_cpu += time.thread_time() - cpu

    # --- asking -------------------------------------------------------------------------------------

    async def search(self, query: str, limit: int = 5) -> SearchResult:
        """The archived files that hold `query` (plain text), best first, at most `limit` (1..20)."""
        self._wanted.set()
        return await asyncio.wrap_future(self._submit(self._search, query, limit))

    def search_now(self, query: str, limit: int = 5) -> SearchResult:
        """`search`, waiting in this thread (the command line, a benchmark; never the event loop)."""
        self._wanted.set()
        return self._submit(self._search, query, limit).result()

    def flush(self) -> None:
        """Wait until every batch handed over so far is indexed."""
        self._wanted.set()
        self._submit(self._drain).result()

    def close(self) -> None:
        """Finish the queued work and close the database (batches written later are brought in from the
        manifests by the next index opened on this archive)."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            self._wanted.set()
            executor.submit(self._drain)
            executor.submit(self._close_db)
            executor.shutdown(wait=True)

    def _start(self) -> None:
        """The index's thread, started now rather than in the archive's first write."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxtui-recall")
        self._executor.submit(lambda: None)

    def _submit(self, work: Callable[..., T], *args: object) -> Future[T]:
        with self._lock:
            if self._closed or self._executor is None:
                raise RuntimeError("the recall index is closed")
            return self._executor.submit(work, *args)

    # --- the index's thread -------------------------------------------------------------------------

    def _drain_when_quiet(self) -> None:
        """`_drain` once the archive has written nothing for `QUIET_SECONDS` (a compaction writes in a
        burst, then the model is called: the index works then, not beside the writes), or at once when
        a search or a flush waits."""
        while not self._wanted.is_set():
            left = self._last_take + QUIET_SECONDS - time.monotonic()
            if left <= 0:
                break
            self._wanted.wait(left)
        self._drain()

    def _drain(self) -> None:
        """Index every batch handed over so far, in one transaction."""
        self._poked = False
        self._wanted.clear()
        if not self._pending:
            return
        started = time.thread_time()
        batches = []
        while self._pending:
            batches.append(self._pending.popleft())
        try:
            db = self._open(create=True, sync=False)  # a search brings in what the batches missed
            assert db is not None
            with _transaction(db.connection):
                for written in batches:
                    for item in written:
                        if db.known.get(item.path, (0, ""))[1] == item.sha256:
                            continue  # the same bytes again (a result saved twice)
                        if item.kind == "transcript" and item.lines is not None:
                            chunks: Iterable[Chunk] = transcript_chunks(item.lines)
                        elif item.text is not None:
                            chunks = result_chunks(item.text)
                        else:
                            continue
                        self._insert(db, item.path, item.kind, item.sha256, chunks)
            self.stats.batches += len(batches)
        except (sqlite3.Error, OSError) as error:
            self._failed(error)  # the batches are in the manifests: bringing the index back takes them in
        finally:
            self.stats.indexed += time.thread_time() - started

    def _search(self, text: str, limit: int) -> SearchResult:
        self._drain()
        limit = max(1, min(MAX_LIMIT, limit))
        query = parse(text, self.tokenizer)
        self.stats.searches += 1
        if query.problem is not None:
            return SearchResult(query)
        for attempt in (1, 2):
            try:
                db = self._open(create=False)
                if db is None:
                    return SearchResult(query, files=0)
                return self._ranked(db, query, limit)
            except sqlite3.Error as error:
                if _is_query_error(error):  # not the file's fault: nothing to rebuild
                    return SearchResult(
                        query, notes=(f"the query could not be run: {error_line(error, 200)}",)
                    )
                self._failed(error)
                if attempt == 2:
                    return SearchResult(
                        query, notes=(f"the index could not be read: {error_line(error, 200)}",)
                    )
            except OSError as error:
                self._failed_quietly(error)
                return SearchResult(
                    query, notes=(f"the index could not be opened: {error_line(error, 200)}",)
                )
        raise AssertionError("unreachable")

    def _ranked(self, db: _Db, query: Query, limit: int) -> SearchResult:
        notes: tuple[str, ...] = ()
        hits = self._hits(db, query, query.match(), limit)
        if not hits and len(query.terms) > 1:
            hits = self._hits(db, query, query.match(any_term=True), limit)
            if hits:
                notes = ("no archived text holds every word: these hits hold some of them",)
        return SearchResult(query, tuple(hits), notes, files=len(db.known))

    def _hits(self, db: _Db, query: Query, match: str, limit: int) -> list[Hit]:
        """The best `limit` files for `match`, each read back from its vouched file; a file gone or
        changed since is dropped and forgotten, and the next ones are asked for."""
        hits: list[Hit] = []
        seen: set[str] = set()
        for _round in range(3):
            rows = db.connection.execute(
                "WITH s AS MATERIALIZED (SELECT rowid, bm25(texts) AS score FROM texts WHERE texts MATCH ?) "
                "SELECT f.path, f.kind, f.sha256, c.line, c.lines, c.kind, "
                "min(s.score) / (1.0 + ? * (f.id - 1.0) / (SELECT max(id) FROM files)) AS ranked FROM s "
                "JOIN chunks AS c ON c.id = s.rowid JOIN files AS f ON f.id = c.file GROUP BY c.file "
                "ORDER BY ranked, f.id LIMIT ?",
                (match, LATER_DISCOUNT, limit * _OVERFETCH),
            ).fetchall()
            gone = []
            for path, file_kind, sha256, line, lines, kind, score in rows:
                if path in seen:
                    continue
                seen.add(path)
                text = self._vouched_text(path, sha256)
                if text is None:
                    gone.append(path)  # gone, or changed since it was indexed: never shown
                    continue
                number, shown = self._match_line(text, file_kind, line, lines, query.terms)
                hits.append(Hit(path, number, shown, round(-score, 3), kind))
                if len(hits) == limit:
                    break
            if gone:
                self._forget(db, gone)
                if self._db is not db:  # made again from the manifests at the next search
                    break
            if len(hits) == limit or not gone or len(rows) < limit * _OVERFETCH:
                break
        return hits

    def _forget(self, db: _Db, paths: list[str]) -> None:
        """Leave out files that are gone or changed (a prune removed them): their chunks go, their text
        rows stay behind unreachable (a contentless index cannot delete them), and once those are as many
        as the live ones the index is made again."""
        connection = db.connection
        with _transaction(connection):
            for path in paths:
                entry = db.known.pop(path, None)
                if entry is not None:
                    connection.execute("DELETE FROM chunks WHERE file = ?", (entry[0],))
                    connection.execute("DELETE FROM files WHERE id = ?", (entry[0],))
        (live,) = connection.execute("SELECT count(*) FROM chunks").fetchone()
        (rows,) = connection.execute("SELECT count(*) FROM texts_docsize").fetchone()
        if rows > 2 * live + 1_000:
            self._close_db()
            self._remove_files()
            self.stats.rebuilds += 1

    def _match_line(
        self, text: str, file_kind: str, line: int, lines: int, terms: tuple[str, ...]
    ) -> tuple[int, str]:
        """The hit's line in the file and its snippet, from the chunk's text as the file holds it now."""
        file_lines = text.split("\n")
        if file_kind == "transcript":
            chunk = line_chunk(line, file_lines[line - 1]) if line <= len(file_lines) else None
            inner = best_line(chunk.text, terms)[1] if chunk is not None else ""
            return line, snippet(inner, terms)
        piece = "\n".join(file_lines[line - 1 : line - 1 + lines])
        offset, inner = best_line(piece, terms)
        return line + offset, snippet(inner, terms)

    def _vouched_text(self, path: str, sha256: str) -> str | None:
        """The file's text when the manifest vouches for its bytes now and they are the ones indexed."""
        absolute = self.archive.workdir / path
        try:
            info = os.stat(absolute, follow_symlinks=False)
        except OSError:
            return None
        key = (info.st_size, info.st_mtime_ns, info.st_ino)
        cached = self._texts.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            data = self.archive.vouched_bytes(path, MAX_FILE_BYTES)
        except ArchiveError:
            return None
        if hashlib.sha256(data).hexdigest() != sha256:
            return None
        text = _decoded(data)
        if len(data) <= _CACHE_BYTES // 4:
            while self._texts and self._text_bytes + len(data) > _CACHE_BYTES:
                old_key, _ = self._texts.pop(next(iter(self._texts)))
                self._text_bytes -= old_key[0]
            self._texts[path] = (key, text)
            self._text_bytes += len(data)
        return text

    # --- the database ------------------------------------------------------------------------------

    def _open(self, *, create: bool, sync: bool = True) -> _Db | None:
        """The database, opened (made when missing or unusable) and, with `sync`, in line with the
        manifests; None when there is none and nothing to index (`create` False)."""
        db = self._db
        if db is not None and _identity(self.path) != db.identity:  # deleted or replaced while open
            self._close_db()
            db = None
        if db is None:
            if not create and not self.path.exists() and not self.archive.vouched():
                return None
            db = self._db = self._connect()
        if sync and db.synced != (sizes := self.archive.manifest_sizes()):
            self._sync(db, sizes)
        return db

    def _connect(self) -> _Db:
        """Open the database file (private, never through a link); one that cannot be used as this
        version's index is made again, empty."""
        for attempt in (1, 2):
            try:
                folder = open_private_dir(self.path.parent, self.archive.workdir)
                try:
                    os.close(
                        os.open(
                            self.path.name,
                            os.O_RDWR | os.O_CREAT | NO_FOLLOW,
                            PRIVATE_FILE_MODE,
                            dir_fd=folder,
                        )
                    )
                finally:
                    os.close(folder)
                identity = _identity(self.path)
                uri = f"file:{urllib.parse.quote(str(self.path))}?nofollow=1"
                connection = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
                try:
                    connection.execute("PRAGMA busy_timeout = 2000")
                    connection.execute("PRAGMA synchronous = OFF")  # a cache: a torn file is made again
                    if not self._schema_is_current(connection):
                        self._create(connection)
                    known = {
                        path: (file_id, sha)
                        for file_id, path, sha in connection.execute("SELECT id, path, sha256 FROM files")
                    }
                except sqlite3.Error:
                    connection.close()
                    raise
                assert identity is not None
                return _Db(connection, identity, known)
            except sqlite3.Error as error:
                if attempt == 2:
                    raise
                self._failed_quietly(error)
                self._remove_files()
        raise AssertionError("unreachable")

    def _schema_is_current(self, connection: sqlite3.Connection) -> bool:
        try:
            row = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:  # no such table: a new file
            return False
        return row is not None and row[0] == self._schema()

    def _schema(self) -> str:
        return f"{SCHEMA_VERSION}:{self.tokenizer}"

    def _create(self, connection: sqlite3.Connection) -> None:
        """This version's tables, empty (whatever the file held before is dropped)."""
        with _transaction(connection):
            for table in ("texts", "chunks", "files", "meta"):
                connection.execute(f"DROP TABLE IF EXISTS {table}")
            connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            connection.execute(
                "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, "
                "kind TEXT NOT NULL, sha256 TEXT NOT NULL)"
            )
            connection.execute(
                "CREATE TABLE chunks (id INTEGER PRIMARY KEY, file INTEGER NOT NULL, "
                "line INTEGER NOT NULL, lines INTEGER NOT NULL, kind TEXT NOT NULL)"
            )
            connection.execute(
                f"CREATE VIRTUAL TABLE texts USING fts5(body, tokenize='{self.tokenizer}', content='')"
            )
            connection.execute("INSERT INTO meta VALUES ('schema', ?)", (self._schema(),))
        with contextlib.suppress(sqlite3.Error):
            connection.execute("PRAGMA journal_mode = WAL")

    def _insert(self, db: _Db, path: str, kind: str, sha256: str, chunks: Iterable[Chunk]) -> None:
        """One file and its chunks (in the caller's transaction); a path indexed with other bytes is
        forgotten first (its text rows stay behind, unreachable: no chunk leads to them)."""
        connection = db.connection
        old = db.known.get(path)
        if old is not None:
            connection.execute("DELETE FROM chunks WHERE file = ?", (old[0],))
            connection.execute("DELETE FROM files WHERE id = ?", (old[0],))
        file_id = connection.execute(
            "INSERT INTO files (path, kind, sha256) VALUES (?, ?, ?)", (path, kind, sha256)
        ).lastrowid
        assert file_id is not None
        for chunk in chunks:
            row = connection.execute(
                "INSERT INTO chunks (file, line, lines, kind) VALUES (?, ?, ?, ?)",
                (file_id, chunk.line, chunk.lines, chunk.kind),
            ).lastrowid
            connection.execute("INSERT INTO texts (rowid, body) VALUES (?, ?)", (row, chunk.text))
        db.known[path] = (file_id, sha256)
        self.stats.files += 1

    def _sync(self, db: _Db, sizes: tuple[int, int]) -> None:
        """Index every file the manifests vouch for that the index does not hold, read from disk and
        checked against its recorded SHA-256 (a missing or changed file is left out)."""
        started = time.thread_time()
        try:
            missing = [
                item for item in self.archive.vouched() if db.known.get(item.path, (0, ""))[1] != item.sha256
            ]
            missing.sort(
                key=lambda item: _written_at(self.archive.workdir / item.path)
            )  # the archive's order
            with _transaction(db.connection):
                for item in missing:
                    try:
                        data = self.archive.vouched_bytes(item.path, MAX_FILE_BYTES)
                    except ArchiveError:
                        continue  # gone, changed, or too large: nothing the manifest vouches for
                    if hashlib.sha256(data).hexdigest() != item.sha256:
                        continue  # the file holds the bytes of another of its name's entries
                    text = _decoded(data)
                    chunks = (
                        transcript_chunks(text.split("\n"))
                        if item.kind == "transcript"
                        else result_chunks(text)
                    )
                    self._insert(db, item.path, item.kind, item.sha256, chunks)
            db.synced = sizes
        finally:
            self.stats.synced += time.thread_time() - started

    def _failed(self, error: BaseException) -> None:
        """Count a failure and start again from the manifests (the next use makes the index anew)."""
        self._failed_quietly(error)
        self._close_db()
        self._remove_files()
        self.stats.rebuilds += 1

    def _failed_quietly(self, error: BaseException) -> None:
        self.failures += 1
        self.problem = f"recall index: {error_line(error, 300)}"

    def _close_db(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.connection.close()

    def _remove_files(self) -> None:
        """Delete the database and its journals (inside the private folder only, never through a link)."""
        try:
            folder = open_private_dir(self.path.parent, self.archive.workdir)
        except (OSError, ValueError):
            return
        try:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{self.path.name}{suffix}", dir_fd=folder)
        finally:
            os.close(folder)


@contextlib.contextmanager
def _transaction(connection: sqlite3.Connection):  # type: ignore[no-untyped-def]
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _is_query_error(error: sqlite3.Error) -> bool:
    """FTS5 refused the MATCH expression itself (it never should: every word is quoted)."""
    message = str(error)
    return isinstance(error, sqlite3.OperationalError) and (
        "fts5: syntax error" in message or "unterminated" in message
    )


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _written_at(path: Path) -> int:
    try:
        return os.stat(path, follow_symlinks=False).st_mtime_ns
    except OSError:
        return 0


def _decoded(data: bytes) -> str:
    """A vouched file's text: the archive writes text with lone surrogates kept (surrogatepass)."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")
