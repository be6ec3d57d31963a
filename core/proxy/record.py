"""The proxy's recordings: one JSONL file per `/v1/messages`, `/v1/chat/completions` or `/v1/responses`
exchange under `<workdir>/.ctxtui/proxy/`.

A file holds two records, written as the exchange happens: `proxy_request` when the request has
been forwarded (the body as the client sent it, parsed; the user agent and an allow-list of headers)
and `proxy_response` when it has ended (status, the reply as the client got it, usage, timings,
how it ended). Files are 0600 in 0700 folders, `.ctxtui/` keeps itself out of git with a
`.gitignore` of `*`, and no credential reaches the disk: headers are recorded from an allow-list,
and every line passes the exchange's `Redactor` (core/proxy/redact.py) before it is written: the
request's credential values and anything shaped like a key (should a body or an error message echo
them). Writes are synchronous: callers run them in a thread.
"""

from __future__ import annotations

import json
import os
import secrets as random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.private import OutsideWorkdirError, open_private_dir, open_private_file
from core.proxy.redact import Redactor

RECORD_VERSION = 1
REQUEST = "proxy_request"
RESPONSE = "proxy_response"
PROXY_FOLDER = Path(".ctxtui") / "proxy"


def new_exchange_id(now: float | None = None) -> str:
    """A file-name-safe id that sorts by time: `20261121-101502-123-a1b2c3`."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{int(now * 1000) % 1000:03d}-{random.token_hex(3)}"


class RecordError(OSError):
    """A record could not be written; the message is one line."""


class Recorder:
    """Writes the records of the exchanges into `<workdir>/.ctxtui/proxy/`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir).resolve()
        self.folder = self.workdir / PROXY_FOLDER
        self.written = 0

    def prepare(self) -> None:
        """Create the folder (0700, `.ctxtui/.gitignore`), refusing one that is a symlink or lies elsewhere."""
        os.close(self._open_folder())

    def _open_folder(self) -> int:
        """The folder, walked from the workdir without following a link (core/private.py); the caller closes it."""
        try:
            return open_private_dir(self.folder, self.workdir)
        except OutsideWorkdirError as error:
            raise RecordError(f"{error}: not recording there") from None
        except OSError as error:
            raise RecordError(f"cannot create {self.folder}: {error.strerror or error}") from None

    def path_of(self, exchange_id: str) -> Path:
        return self.folder / f"{exchange_id}.jsonl"

    def write(self, exchange_id: str, record: dict[str, Any], redactor: Redactor, *, first: bool) -> Path:
        """Add one record line to the exchange's file (`first`: create it, 0600, never over another)."""
        line = redactor.text(json.dumps(record, ensure_ascii=False, default=str)) + "\n"
        path = self.path_of(exchange_id)
        flags = os.O_WRONLY | (os.O_CREAT | os.O_EXCL if first else os.O_APPEND)
        folder = self._open_folder()
        try:
            fd = open_private_file(folder, path.name, flags)
            try:
                data = line.encode("utf-8", "surrogatepass")
                while data:
                    data = data[os.write(fd, data) :]
            finally:
                os.close(fd)
        except OSError as error:
            raise RecordError(f"cannot write {path}: {error.strerror or error}") from None
        finally:
            os.close(folder)
        if first:
            self.written += 1
        return path


# --- reading -------------------------------------------------------------------------------------


@dataclass
class RecordedExchange:
    """One exchange read back: its request record and, once it ended, its response record."""

    id: str
    request: dict[str, Any]
    response: dict[str, Any] | None = None

    @property
    def body(self) -> dict[str, Any]:
        body = self.request.get("body")
        return body if isinstance(body, dict) else {}

    @property
    def view(self) -> dict[str, Any]:
        """The body in the Messages API's shape: as recorded for `/v1/messages`, converted for OpenAI's
        `/v1/chat/completions` and `/v1/responses` (core/proxy/openai.py)."""
        from core.proxy.openai import request_view, wire_of

        wire = wire_of(str(self.request.get("method", "POST")), str(self.request.get("path", "")))
        return request_view(self.body, wire) if wire in ("chat", "responses") else self.body


@dataclass
class ProxyFile:
    exchanges: list[RecordedExchange] = field(default_factory=list)
    skipped: int = 0


def is_proxy_record(record: Any) -> bool:
    return isinstance(record, dict) and record.get("type") in (REQUEST, RESPONSE)


def read_proxy_file(records: Iterable[Any]) -> ProxyFile:
    """Pair the request and response records of a recording (several exchanges may be concatenated)."""
    result = ProxyFile()
    by_id: dict[str, RecordedExchange] = {}
    for record in records:
        if not is_proxy_record(record) or not isinstance(record.get("id"), str):
            result.skipped += 1
            continue
        if record["type"] == REQUEST:
            exchange = RecordedExchange(record["id"], record)
            by_id[exchange.id] = exchange
            result.exchanges.append(exchange)
        elif record["id"] in by_id:
            by_id[record["id"]].response = record
        else:
            result.skipped += 1
    return result
