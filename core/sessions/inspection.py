"""`ctxtui inspect FILE`: read any history file ctxtui knows, and report what is in it.

Readable files: a ctxtui session `.jsonl` (records), a transcript `.jsonl` (one message per line),
a `.json` list of messages, a `.json` request body (`messages`, `system`, `tools`), and a Claude
Code session `.jsonl` (core/sessions/claude_code.py). The report gives the totals (messages, chars as
`estimate_chars`, tiktoken tokens), the characters by category (values that add up exactly to the
total), and a dry run of the compaction pipeline under the given settings: which steps would fire,
before -> after. The dry run never writes into the file's workdir and never calls a model.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.compaction import CompactionSettings
from core.events import CompactionStep, LedgerEntry
from core.history import estimate_chars
from core.history.messages import current_request
from core.markers import parse_marker
from core.sessions.claude_code import looks_like_claude_code, read_claude_code, read_records
from core.sessions.log import SessionLog, valid_message

Message = dict[str, Any]
FileKind = Literal["session", "transcript", "messages", "request", "claude-code"]

CATEGORIES = ("user", "assistant", "tool_use", "tool_result", "markers", "overhead")


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
    ledger: list[LedgerEntry] = field(default_factory=list)  # a ctxtui session's ledger (from its log)
    cuts: list[int] = field(default_factory=list)  # Claude Code: where each compaction boundary cut `archived`



# --- reading --------------------------------------------------------------------------------------


def load_file(path: Path) -> Inspected:
    """Read `path` as whatever history file it is; InspectError (one line) when it is none of them."""
    if not path.is_file():
        raise InspectError(f"{path}: no such file")
    try:
        if path.suffix == ".json":
            return _load_json(path)
        return _load_jsonl(path)
    except UnicodeDecodeError as error:
        raise InspectError(f"{path}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise InspectError(f"{path}: cannot be read: {error.strerror or error}") from None


def _load_json(path: Path) -> Inspected:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise InspectError(f"{path}: not valid JSON: {error}") from None
    if isinstance(data, list):
        return Inspected(path, "messages", _checked(path, data), workdir=path.parent)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        tools = data.get("tools")
        return Inspected(path, "request", _checked(path, data["messages"]), system=data.get("system"),
                         tools=tools if isinstance(tools, list) else None, workdir=path.parent)
    raise InspectError(f"{path}: expected a list of messages or a request body with \"messages\"")


def _checked(path: Path, messages: list[Any]) -> list[Message]:
    for index, message in enumerate(messages):
        if not valid_message(message):
            raise InspectError(f"{path}: message {index} is not a Messages API message (role user/assistant, content)")
    return list(messages)


def _first_record(path: Path) -> Any:
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip():
                try:
                    return json.loads(line)
                except ValueError:
                    continue
    return None


def _load_jsonl(path: Path) -> Inspected:
    first = _first_record(path)
    if first is None:
        raise InspectError(f"{path}: empty, or no line of it is JSON")
    if isinstance(first, dict) and first.get("type") in ("meta", "message", "splice", "replace", "pins", "compaction", "event"):
        replay = SessionLog.replay(path)
        workdir = replay.meta.get("workdir")
        root = Path(workdir) if isinstance(workdir, str) else path.parent.parent.parent
        return Inspected(path, "session", replay.messages, workdir=root, skipped=replay.skipped, ledger=replay.ledger)
    if looks_like_claude_code(first) or _any_claude_code(path):
        session = read_claude_code(path)
        notes = []
        if session.boundaries:
            notes.append(f"{len(session.archived)} messages before the last of {session.boundaries} compaction "
                         "boundaries are shown as archived")
        if session.sidechain_records:
            notes.append(f"{session.sidechain_records} side-chain records left out")
        return Inspected(path, "claude-code", session.messages, archived=session.archived, summary=session.summary,
                         workdir=Path(session.cwd) if session.cwd else None, skipped=session.skipped, notes=notes,
                         cuts=session.cuts)
    records, skipped = read_records(path)
    messages: list[Message] = [record for record in records if valid_message(record)]
    skipped += len(records) - len(messages)
    if not messages:
        raise InspectError(f"{path}: not a ctxtui session or transcript, nor a Claude Code session")
    workdir = path.parent.parent if path.parent.name == ".transcripts" else path.parent
    return Inspected(path, "transcript", messages, workdir=workdir, skipped=skipped)


def _any_claude_code(path: Path, lines: int = 50) -> bool:
    """Claude Code files may start with a record that carries no message (a snapshot, a summary)."""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle):
            if number >= lines:
                break
            try:
                if looks_like_claude_code(json.loads(line)):
                    return True
            except ValueError:
                continue
    return False


# --- the breakdown --------------------------------------------------------------------------------


def _string_chars(text: str) -> int:
    """The characters of a string's content as json.dumps writes it (escapes counted, quotes not)."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def _json_chars(value: Any) -> int:
    return len(json.dumps(value, default=str, ensure_ascii=False))


def _text_category(text: str, default: str) -> str:
    return "markers" if parse_marker(text) is not None else default


def _add_block(counts: dict[str, int], block: dict[str, Any], role_category: str) -> None:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        counts[_text_category(block["text"], role_category)] += _string_chars(block["text"])
    elif kind == "thinking" and isinstance(block.get("thinking"), str):
        counts["assistant"] += _string_chars(block["thinking"])
    elif kind == "tool_use":
        if isinstance(block.get("name"), str):
            counts["tool_use"] += _string_chars(block["name"])
        if "input" in block:
            counts["tool_use"] += _json_chars(block["input"])
    elif kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            counts[_text_category(content, "tool_result")] += _string_chars(content)
        elif isinstance(content, list):
            for inner in content:
                if isinstance(inner, dict):
                    _add_block(counts, inner, "tool_result")
    elif kind == "image" and isinstance(block.get("source"), dict):
        data = block["source"].get("data")
        if isinstance(data, str):
            counts[role_category] += _string_chars(data)


def breakdown(messages: Sequence[Any]) -> dict[str, int]:
    """Characters by category; the values add up exactly to `estimate_chars(messages)`.

    Text a category owns is counted as it appears in the JSON (escapes included, quotes not);
    tool inputs as their JSON; everything else (keys, quotes, brackets, ids) is `overhead`.
    """
    counts = dict.fromkeys(CATEGORIES, 0)
    for message in messages:
        if not isinstance(message, dict):
            continue
        role_category = "assistant" if message.get("role") == "assistant" else "user"
        content = message.get("content")
        if isinstance(content, str):
            counts[_text_category(content, role_category)] += _string_chars(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    _add_block(counts, block, role_category)
    counts["overhead"] = estimate_chars(messages) - sum(counts[name] for name in CATEGORIES if name != "overhead")
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


async def dry_run(messages: list[Message], active_request: str, settings: CompactionSettings) -> DryRun:
    """The pipeline's decisions (`Compactor.dry_run`), with a temporary archive: nothing is written to
    the workdir, no model is called, and `messages` is not changed."""
    from core.archive import Archive
    from core.compaction import Compactor

    before = estimate_chars(messages)
    with tempfile.TemporaryDirectory(prefix="ctxtui-dry-run-") as scratch:
        compactor = Compactor(Archive(Path(scratch)), settings=settings)
        planned = list(await compactor.dry_run(messages, active_request))
    after = planned[-1].chars_after if planned else before
    return DryRun(planned, before, after, needs_model=after > settings.context_char_limit)


# --- the report -----------------------------------------------------------------------------------


async def report(inspected: Inspected, settings: CompactionSettings) -> dict[str, Any]:
    """The whole report as one JSON-ready dict."""
    from core.history.tokens import TokenCounter

    messages = inspected.messages
    counts = breakdown(messages)
    message_chars = estimate_chars(messages)
    total = message_chars
    if inspected.kind == "request":
        counts["system"] = _json_chars(inspected.system) if inspected.system is not None else 0
        counts["tools"] = _json_chars(inspected.tools) if inspected.tools is not None else 0
        total += counts["system"] + counts["tools"]
    counter = TokenCounter()
    tokens = await counter.count_async(messages)
    if inspected.kind == "request":
        extra = [item for item in (inspected.system, inspected.tools) if item is not None]
        tokens += sum(counter.count_text(json.dumps(item, default=str, ensure_ascii=False)) for item in extra)
    run = await dry_run(messages, current_request(messages), settings)
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
        "limit": settings.context_char_limit,
        "settings": asdict(settings),
        "dry_run": {
            "method": run.method,
            "chars_before": run.chars_before,
            "chars_after": run.chars_after,
            "needs_model": run.needs_model,
            "error": run.error,
            "steps": [
                {"step": step.step, "before": step.chars_before, "after": step.chars_after,
                 "messages_affected": step.messages_affected, "files": len(step.files_written)}
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
        lines.append(f"archived before the last compaction: {data['archived_messages']:,} messages, "
                     f"{data['archived_chars']:,} chars")
    lines.extend(data["notes"])
    if data["skipped_records"]:
        lines.append(f"{data['skipped_records']} records skipped (cut or not of a valid shape)")
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
        lines.append(f"  {step['step']:<20} {step['before']:>10,} -> {step['after']:>10,}  "
                     f"{step['messages_affected']} message(s), {step['files']} file(s)")
    if run["needs_model"]:
        lines.append(f"  {'compact_history':<20} would run next: still above the limit (it needs the model; "
                     "not called in a dry run)")
    return "\n".join(lines) + "\n"
