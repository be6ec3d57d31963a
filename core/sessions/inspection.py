"""`ctxtui inspect FILE`: read any history file ctxtui knows, and report what is in it.

Readable files: a ctxtui session `.jsonl` (records), a transcript `.jsonl` (one message per line),
a `.json` list of messages, a `.json` request body (`messages`, `system`, `tools`), a Claude
Code session `.jsonl` (core/sessions/claude_code.py), and a `ctxtui proxy` recording `.jsonl`
(core/proxy/record.py: the latest request's messages are the history, its system and tools counted). The report gives the totals (messages, chars as
`estimate_chars`, tiktoken tokens), the characters by category (values that add up exactly to the
total), and a dry run of the compaction pipeline under the given settings: which steps would fire,
before -> after; for a session file also its cache economics (core/sessions/economics.py: hit rate,
cost, misses by cause). The dry run never writes into the file's workdir and never calls a model.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from core import jsonlines
from core.client_markers import block_marker, client_marker, find_client_markers
from core.compaction import CompactionSettings
from core.events import CompactionStep
from core.history import estimate_chars
from core.history.categories import CATEGORIES
from core.history.messages import current_request
from core.jsonlines import BadLine, open_regular, parse_json
from core.markers import parse_marker
from core.proxy.record import is_proxy_record, read_proxy_file
from core.sessions.claude_code import looks_like_claude_code, read_claude_code, read_records
from core.sessions.economics import economics, economics_text, read_samples
from core.sessions.log import SessionLog, valid_message
from core.text import one_line, plural
from core.values.records import LedgerEntry

Message = dict[str, Any]
FileKind = Literal[
    "session",
    "transcript",
    "messages",
    "request",
    "claude-code",
    "proxy",
    "swe-agent",
    "atif",
    "codex",
    "openhands",
]
GZIP_MAGIC = b"\x1f\x8b"
TRAJECTORY_KINDS = ("swe-agent", "atif", "codex", "openhands")  # another agent's run (core/trajectories/)


class InspectError(ValueError):
    """The file cannot be inspected: one line saying why."""


@dataclass
class Inspected:
    """A history read from a file, with what surrounds it."""

    path: Path
    kind: FileKind
    messages: list[Message]
    system: Any = None  # a request body's system prompt (str or blocks)
    tools: list[Any] | None = None  # a request body's tool definitions
    archived: list[Message] = field(default_factory=list)  # before the last compaction (Claude Code)
    summary: str | None = None
    workdir: Path | None = None  # where archive paths in markers resolve
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    proxy: dict[str, Any] | None = None  # a proxy recording: the latest exchange's figures
    ledger: list[LedgerEntry] = field(default_factory=list)  # a ctxtui session's ledger (from its log)
    cuts: list[int] = field(
        default_factory=list
    )  # Claude Code: where each compaction boundary cut `archived`
    model: str | None = None  # the model the file names (a trajectory)
    times: list[float | None] = field(default_factory=list)  # a trajectory: when each model call was made
    exchanges: list[Any] = field(default_factory=list)  # a proxy recording: its conversation's exchanges
    conversation: str | None = None  # a proxy recording folder: the id of the conversation read
    model_notes: list[str] = field(default_factory=list)  # a ctxtui session's notes (the note tool)


# --- reading --------------------------------------------------------------------------------------


def load_file(path: Path, conversation: str | None = None) -> Inspected:
    """Read `path` as whatever history file it is; InspectError (one line) when it is none of them.

    A folder is read as a `ctxtui proxy` recording folder: the exchanges of one conversation
    (`conversation`: its id, an exchange's id or its number; the newest by default) as one history.

    Only a regular file is read (a FIFO or a device is refused, core/jsonlines.py), lines and
    nesting are bounded, and a bad line costs that line only.
    """
    if not path.exists():
        raise InspectError(f"{path}: no such file")
    if path.is_dir():
        return _load_proxy_folder(path, conversation)
    if not path.is_file():
        raise InspectError(f"{path}: not a regular file")
    try:
        if _starts_with(path, GZIP_MAGIC):
            found = _load_trajectory(path)
            if found is None:
                raise InspectError(f"{path}: a gzip file that holds no trajectory ctxtui knows")
            return found
        if path.suffix == ".json":
            return _load_json(path)
        if path.suffix != ".jsonl" and _one_json_value(path):
            return _load_json(path)  # recognised by content: a `.traj`, or a file with no suffix
        return _load_jsonl(path)
    except UnicodeDecodeError as error:
        raise InspectError(f"{path}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise InspectError(f"{path}: cannot be read: {error.strerror or error}") from None


def _starts_with(path: Path, magic: bytes) -> bool:
    with open_regular(path, follow_symlinks=True) as handle:
        return handle.read(len(magic)) == magic


def _one_json_value(path: Path) -> bool:
    """The whole file is one JSON value (not JSON Lines): it starts with `{` or `[` and parses whole."""
    with open_regular(path, follow_symlinks=True) as handle:
        raw = handle.read()
    text = raw.lstrip()
    if text[:1] not in (b"{", b"["):
        return False
    return not isinstance(parse_json(text.decode("utf-8", errors="replace")), BadLine)


def _load_trajectory(path: Path, data: Any = None) -> Inspected | None:
    """Another agent's trajectory (core/trajectories/), recognised by content; None: not one."""
    from core.trajectories import TrajectoryError, read_trajectory

    try:
        trajectory = read_trajectory(path, data)
    except TrajectoryError as error:
        raise InspectError(str(error)) from None
    if trajectory is None:
        return None
    notes = [
        f"{trajectory.format} trajectory: {plural(trajectory.calls, 'model call')}"
        + (f" by {trajectory.model}" if trajectory.model else ""),
        *trajectory.notes,
    ]
    kind: FileKind = trajectory.format  # type: ignore[assignment]
    return Inspected(
        path,
        kind,
        trajectory.messages,
        system=trajectory.system,
        tools=trajectory.tools or None,
        workdir=path.parent,
        skipped=trajectory.skipped,
        notes=notes,
        model=trajectory.model,
        times=list(trajectory.times),
    )


def _load_json(path: Path) -> Inspected:
    with open_regular(path, follow_symlinks=True) as handle:
        data = parse_json(handle.read().decode("utf-8"))
    if isinstance(data, BadLine):
        raise InspectError(f"{path}: not valid JSON: {data.reason}")
    found = _load_trajectory(path, data)
    if found is not None:
        return found
    if isinstance(data, list):
        return Inspected(path, "messages", _checked(path, data), workdir=path.parent)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        tools = data.get("tools")
        return Inspected(
            path,
            "request",
            _checked(path, data["messages"]),
            system=data.get("system"),
            tools=tools if isinstance(tools, list) else None,
            workdir=path.parent,
        )
    raise InspectError(f'{path}: expected a list of messages or a request body with "messages"')


def _checked(path: Path, messages: list[Any]) -> list[Message]:
    for index, message in enumerate(messages):
        if not valid_message(message):
            raise InspectError(
                f"{path}: message {index} is not a Messages API message (role user/assistant, content)"
            )
    return list(messages)


def _first_record(path: Path) -> Any:
    for record in jsonlines.read_records(path, follow_symlinks=True):
        if not isinstance(record, BadLine):
            return record
    return None


def _load_jsonl(path: Path) -> Inspected:
    first = _first_record(path)
    if first is None:
        raise InspectError(f"{path}: empty, or no line of it is JSON")
    if isinstance(first, dict) and first.get("type") in (
        "meta",
        "message",
        "splice",
        "replace",
        "pins",
        "notes",
        "compaction",
        "event",
    ):
        replay = SessionLog.replay(path, follow_symlinks=True)
        workdir = replay.meta.get("workdir")
        root = Path(workdir) if isinstance(workdir, str) else path.parent.parent.parent
        return Inspected(
            path,
            "session",
            replay.messages,
            workdir=root,
            skipped=replay.skipped,
            ledger=replay.ledger,
            model_notes=replay.notes,
        )
    if is_proxy_record(first):
        return _load_proxy(path)
    if looks_like_claude_code(first) or _any_claude_code(path):
        session = read_claude_code(path)
        notes = []
        if session.boundaries:
            notes.append(
                f"{plural(len(session.archived), 'message')} before the last of "
                f"{plural(session.boundaries, 'compaction boundary', 'compaction boundaries')} are shown as archived"
            )
        if session.sidechain_records:
            notes.append(f"{session.sidechain_records} side-chain records left out")
        return Inspected(
            path,
            "claude-code",
            session.messages,
            archived=session.archived,
            summary=session.summary,
            workdir=Path(session.cwd) if session.cwd else None,
            skipped=session.skipped,
            notes=notes,
            cuts=session.cuts,
        )
    records, skipped = read_records(path)
    messages: list[Message] = [record for record in records if valid_message(record)]
    skipped += len(records) - len(messages)
    if not messages:
        found = _load_trajectory(path, [*records]) if records else None
        if found is not None:
            return found
        raise InspectError(f"{path}: not a ctxtui session or transcript, nor a Claude Code session")
    workdir = path.parent.parent if path.parent.name == ".transcripts" else path.parent
    return Inspected(path, "transcript", messages, workdir=workdir, skipped=skipped)


def _load_proxy(path: Path) -> Inspected:
    """A `ctxtui proxy` recording: the latest request with a JSON body is the history."""
    records, skipped = read_records(path)
    recording = read_proxy_file(records)
    return _proxy_history(path, recording.exchanges, skipped + recording.skipped)


def _load_proxy_folder(path: Path, wanted: str | None) -> Inspected:
    """A recording folder: the chosen conversation's exchanges joined into one history."""
    from core.sessions.proxy_folder import choose, describe, read_folder

    try:
        found = read_folder(path)
    except OSError as error:
        raise InspectError(f"{path}: cannot be read: {error.strerror or error}") from None
    conversation = choose(found, wanted)
    if conversation is None:
        if wanted is None:
            raise InspectError(f"{path}: a folder without a proxy recording that has messages")
        raise InspectError(
            f"{path}: no conversation {wanted!r}; it holds: " + "; ".join(describe(found)[:10])
        )
    inspected = _proxy_history(path, conversation.exchanges, found.skipped)
    inspected.conversation = conversation.id
    inspected.notes.insert(
        0,
        f"proxy recording folder: {plural(len(found.conversations), 'conversation')} in "
        f"{plural(found.files, 'file')}; conversation {conversation.number} ({conversation.id}) is shown",
    )
    return inspected


def _proxy_history(path: Path, recorded: list[Any], skipped: int) -> Inspected:
    """The exchanges of a recording: the latest request with messages is the history."""
    exchanges = [
        exchange for exchange in recorded if isinstance(exchange.view.get("messages"), list)
    ]  # `view`: an OpenAI-format request converted to the Messages API's shape
    if not exchanges:
        raise InspectError(f"{path}: a proxy recording without a request that has messages")
    latest = exchanges[-1]
    body = latest.view
    messages = [message for message in body["messages"] if valid_message(message)]
    dropped = len(body["messages"]) - len(messages)
    notes = [f"proxy recording: {len(recorded)} exchange(s); the latest request is shown"]
    if dropped:
        notes.append(f"{dropped} message(s) of the request are not of a valid shape and are left out")
    response = latest.response or {}
    recorded_reply = response.get("reply")
    reply: dict[str, Any] = recorded_reply if isinstance(recorded_reply, dict) else {}
    proxy = {
        "exchanges": len(recorded),
        "id": latest.id,
        "model": body.get("model"),
        "user_agent": latest.request.get("user_agent"),
        "stream": body.get("stream") is True,
        "status": response.get("status"),
        "outcome": response.get("outcome", "no reply recorded"),
        "stop_reason": reply.get("stop_reason"),
        "usage": response.get("usage"),
        "cost": response.get("cost"),
        "timings": response.get("timings"),
        "error": response.get("error"),
        "params": sorted(key for key in body if key not in ("messages", "system", "tools")),
    }
    tools = body.get("tools")
    return Inspected(
        path,
        "proxy",
        messages,
        system=body.get("system"),
        tools=tools if isinstance(tools, list) else None,
        workdir=path if path.is_dir() else path.parent,
        skipped=skipped + dropped,
        notes=notes,
        proxy=proxy,
        exchanges=list(recorded),
    )


def _any_claude_code(path: Path, lines: int = 50) -> bool:
    """Claude Code files may start with a record that carries no message (a snapshot, a summary)."""
    return any(
        looks_like_claude_code(record)
        for record in islice(jsonlines.read_records(path, follow_symlinks=True), lines)
    )


# --- the breakdown --------------------------------------------------------------------------------


def _string_chars(text: str) -> int:
    """The characters of a string's content as json.dumps writes it (escapes counted, quotes not)."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def _json_chars(value: Any) -> int:
    return len(json.dumps(value, default=str, ensure_ascii=False))


class _Markers:
    """Which texts count as markers: those whose path resolves in the archive under the workdir.

    A text that merely looks like a marker (a tool printed it, a file holds it) names no archived
    file: it is plain text in the category of the block that holds it. Another client's markers
    (core/client_markers.py: Claude Code's summaries and cleared results) are recognised by their shape.
    """

    def __init__(self, workdir: Path | None) -> None:
        from core.archive import Archive

        self._archive = Archive(workdir) if workdir is not None else None
        self._resolved: dict[str, bool] = {}

    def category(self, text: str, default: str) -> str:
        if client_marker(text, in_tool_result=default == "tool_result") is not None:
            return "markers"
        marker = parse_marker(text) if self._archive is not None else None
        if marker is None or self._archive is None:
            return default
        if marker.path not in self._resolved:
            self._resolved[marker.path] = self._archive.resolve(marker.path) is not None
        return "markers" if self._resolved[marker.path] else default


def _add_block(counts: dict[str, int], block: dict[str, Any], role_category: str, markers: _Markers) -> None:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        counts[markers.category(block["text"], role_category)] += _string_chars(block["text"])
    elif kind in ("thinking", "redacted_thinking"):
        for key in ("thinking", "signature", "data"):
            if isinstance(block.get(key), str):
                counts["thinking"] += _string_chars(block[key])
    elif kind == "tool_use":
        if isinstance(block.get("name"), str):
            counts["tool_use"] += _string_chars(block["name"])
        if "input" in block:
            counts["tool_use"] += _json_chars(block["input"])
    elif kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            counts[markers.category(content, "tool_result")] += _string_chars(content)
        elif isinstance(content, list):
            for inner in content:
                if isinstance(inner, dict):
                    _add_block(counts, inner, "tool_result", markers)
    elif kind == "compaction" and block_marker(block) is not None and isinstance(block.get("content"), str):
        counts["markers"] += _string_chars(block["content"])  # the API's server-side compaction summary
    elif kind == "image" and isinstance(block.get("source"), dict):
        data = block["source"].get("data")
        if isinstance(data, str):
            counts[role_category] += _string_chars(data)


def breakdown(messages: Sequence[Any], workdir: Path | None = None) -> dict[str, int]:
    """Characters by category; the values add up exactly to `estimate_chars(messages)`.

    Text a category owns is counted as it appears in the JSON (escapes included, quotes not);
    tool inputs as their JSON; everything else (keys, quotes, brackets, ids) is `overhead`. A
    marker counts as one only when its path resolves in the archive under `workdir` (none without
    a workdir); any other text that looks like one is counted where its block belongs.
    """
    markers = _Markers(workdir)
    counts: dict[str, int] = dict.fromkeys(CATEGORIES, 0)
    for message in messages:
        if not isinstance(message, dict):
            continue
        role_category = "assistant" if message.get("role") == "assistant" else "user"
        content = message.get("content")
        if isinstance(content, str):
            counts[markers.category(content, role_category)] += _string_chars(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    _add_block(counts, block, role_category, markers)
    counts["overhead"] = estimate_chars(messages) - sum(
        counts[name] for name in CATEGORIES if name != "overhead"
    )
    return counts


# --- the dry run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DryRun:
    """What the pipeline would do to the history before the next model call."""

    steps: list[CompactionStep]
    chars_before: int
    chars_after: int
    needs_model: bool = False  # compact_history would run: it needs the model, which a dry run never calls
    method: str = "dry_run"  # Compactor.dry_run: prepare's own decisions, nothing written
    error: str | None = None  # reported as null: a dry run refuses nothing


async def dry_run(
    messages: list[Message], active_request: str, settings: CompactionSettings, notes: Sequence[str] = ()
) -> DryRun:
    """The pipeline's decisions (`Compactor.dry_run`), with a temporary archive: nothing is written to
    the workdir, no model is called, and `messages` is not changed; `notes`: the model's notes, which
    a snip carries."""
    from core.archive import Archive
    from core.compaction import Compactor
    from core.compaction.notes import Notebook

    before = estimate_chars(messages)
    with tempfile.TemporaryDirectory(prefix="ctxtui-dry-run-") as scratch:
        compactor = Compactor(Archive(Path(scratch)), settings=settings, notebook=Notebook(tuple(notes)))
        planned = list(await compactor.dry_run(messages, active_request))
    after = planned[-1].chars_after if planned else before
    return DryRun(planned, before, after, needs_model=after > settings.context_char_limit)


# --- the report -----------------------------------------------------------------------------------


async def report(inspected: Inspected, settings: CompactionSettings) -> dict[str, Any]:
    """The whole report as one JSON-ready dict."""
    from core.history.tokens import TokenCounter

    messages = inspected.messages
    counts = breakdown(messages, inspected.workdir)
    message_chars = estimate_chars(messages)
    total = message_chars
    with_prompt = inspected.kind in ("request", "proxy")
    if with_prompt:
        counts["system"] = _json_chars(inspected.system) if inspected.system is not None else 0
        counts["tools"] = _json_chars(inspected.tools) if inspected.tools is not None else 0
        total += counts["system"] + counts["tools"]
    counter = TokenCounter()
    tokens = await counter.count_async(messages)
    if with_prompt:
        extra = [item for item in (inspected.system, inspected.tools) if item is not None]
        tokens += sum(counter.count_text(json.dumps(item, default=str, ensure_ascii=False)) for item in extra)
    run = await dry_run(messages, current_request(messages), settings, inspected.model_notes)
    cache = economics(read_samples(inspected.path)) if inspected.kind == "session" else None
    return {
        "file": str(inspected.path),
        "kind": inspected.kind,
        "messages": len(messages),
        "chars": total,
        "message_chars": message_chars,
        "tokens": tokens,
        "breakdown": counts,
        "archived_messages": len(inspected.archived),
        "archived_chars": estimate_chars(inspected.archived),
        "summary": inspected.summary,
        "skipped_records": inspected.skipped,
        "notes": inspected.notes,
        "model_notes": inspected.model_notes,
        "client_markers": [
            {"where": found.where, "kind": found.marker.kind, "client": found.marker.client}
            for found in find_client_markers(messages)
        ],
        "proxy": inspected.proxy,
        "limit": settings.context_char_limit,
        "settings": asdict(settings),
        "economics": cache,
        "dry_run": {
            "method": run.method,
            "chars_before": run.chars_before,
            "chars_after": run.chars_after,
            "needs_model": run.needs_model,
            "error": run.error,
            "steps": [
                {
                    "step": step.step,
                    "before": step.chars_before,
                    "after": step.chars_after,
                    "messages_affected": step.messages_affected,
                    "files": len(step.files_written),
                }
                for step in run.steps
            ],
        },
    }


def report_text(data: dict[str, Any]) -> str:
    """The report for a terminal (callers pass it through core.text.visible)."""
    lines = [
        f"{data['file']} ({data['kind']})",
        f"messages {data['messages']:,}   chars {data['chars']:,} (limit {data['limit']:,})   tokens {data['tokens']:,}",
    ]
    if data["archived_messages"]:
        lines.append(
            f"archived before the last compaction: {plural(data['archived_messages'], 'message')}, "
            f"{data['archived_chars']:,} chars"
        )
    lines.extend(data["notes"])
    if model_notes := data.get("model_notes"):
        size = sum(len(text) for text in model_notes)
        lines.append(f"the model's notes: {len(model_notes)} ({size:,} chars)")
        lines.extend(f"  {number}. {one_line(text, 100)}" for number, text in enumerate(model_notes, 1))
    if data["skipped_records"]:
        lines.append(f"{data['skipped_records']} records skipped (cut or not of a valid shape)")
    lines.extend(_proxy_lines(data.get("proxy")))
    markers = data.get("client_markers") or []
    if markers:
        lines.append(f"client markers: {len(markers)}")
        lines.extend(f"  {item['where']:<24} {item['client']} {item['kind']}" for item in markers[:20])
        if len(markers) > 20:
            lines.append(f"  ... and {len(markers) - 20} more")
    lines.append("")
    lines.append("breakdown")
    total = max(data["chars"], 1)
    for name, value in data["breakdown"].items():
        lines.append(f"  {name:<12} {value:>12,}  {100 * value / total:5.1f}%")
    lines.append("")
    run = data["dry_run"]
    lines.append(f"dry run ({run['method']}): {run['chars_before']:,} -> {run['chars_after']:,} chars")
    if not run["steps"] and not run["needs_model"]:
        lines.append("  no step would fire")
    for step in run["steps"]:
        lines.append(
            f"  {step['step']:<20} {step['before']:>10,} -> {step['after']:>10,}  "
            f"{step['messages_affected']} message(s), {step['files']} file(s)"
        )
    if run["needs_model"]:
        lines.append(
            f"  {'compact_history':<20} would run next: still above the limit (it needs the model; "
            "not called in a dry run)"
        )
    if data.get("economics") is not None:
        lines.append("")
        lines.extend(economics_text(data["economics"]))
    return "\n".join(lines) + "\n"


def _proxy_lines(proxy: dict[str, Any] | None) -> list[str]:
    """The latest exchange of a proxy recording, in a few lines."""
    if not proxy:
        return []
    usage = proxy.get("usage") if isinstance(proxy.get("usage"), dict) else {}
    lines = [
        f"call {proxy['id']}: {proxy.get('model')} · status {proxy.get('status')} · {proxy.get('outcome')}"
        f" · client {proxy.get('user_agent') or '-'}"
    ]
    if usage:
        lines.append(
            f"usage: input {usage.get('input_tokens', 0):,} · cache read {usage.get('cache_read_input_tokens') or 0:,}"
            f" · cache write {usage.get('cache_creation_input_tokens') or 0:,} · output {usage.get('output_tokens', 0):,}"
            + (f" · ${proxy['cost']:.4f}" if isinstance(proxy.get("cost"), int | float) else "")
        )
    if proxy.get("params"):
        lines.append("request fields: " + ", ".join(str(name) for name in proxy["params"]))
    return lines
