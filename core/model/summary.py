"""The offline model's summaries: extractive, made only of text found in the conversation.

`extractive_summary(conversation_text, focus)` reads the JSON of a message list, which compaction may
have cut to a head and a tail; then the complete objects that survive are recovered one by one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from core.history.messages import INTERRUPTED
from core.markers import OMISSION_RE, archived_path, parse_marker
from core.text import one_line

__all__ = ["SUMMARY_CHAR_LIMIT", "content_text", "extractive_summary"]

_OBJECT_START_RE = re.compile(r'\{"')
_FILE_TOOLS = {"read_file": "read", "write_file": "write", "edit_file": "edit"}

SUMMARY_CHAR_LIMIT = 4_000


def content_text(content: Any) -> str:
    """The text of a message content or tool-result content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


@dataclass
class _Digest:
    """What the summary is built from, collected in conversation order."""

    messages: int = 0
    user: int = 0
    assistant: int = 0
    tool_calls: int = 0
    requests: list[str] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    results: list[tuple[str | None, str, bool]] = field(default_factory=list)
    uses: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    earlier_summary: str | None = None
    archives: list[str] = field(default_factory=list)

    def add_request(self, text: str) -> None:
        request = one_line(text, 200)
        if not request:
            return
        if request in self.requests:
            self.requests.remove(request)
        self.requests.append(request)

    def add_archive(self, path: str) -> None:
        path = path.strip()
        if path and path not in self.archives:
            self.archives.append(path)

    def add_user_text(self, text: str) -> None:
        stripped = text.strip()
        if not stripped:
            return
        marker = parse_marker(stripped)
        if marker is not None and marker.kind in ("compacted", "reactive"):
            if marker.request is not None:
                self.add_request(marker.request)
            self.earlier_summary = marker.summary
            self.add_archive(marker.path)
            return
        if marker is not None:  # a snip marker, a placeholder, a persisted-output block
            if marker.kind == "snip":
                self.add_archive(marker.path)
            return
        if stripped.startswith(INTERRUPTED):
            return
        self.add_request(stripped)

    def add_tool_input(self, name: str | None, tool_input: dict[str, Any]) -> None:
        path = tool_input.get("path")
        if isinstance(path, str) and path.strip():
            operation = _FILE_TOOLS.get(name or "", "used")
            operations = self.files.setdefault(path.strip(), [])
            if operation not in operations:
                operations.append(operation)
        command = tool_input.get("command")
        if isinstance(command, str) and command.strip() and name in (None, "bash"):
            line = one_line(command, 160)
            if line in self.commands:
                self.commands.remove(line)
            self.commands.append(line)

    def add_block(self, block: dict[str, Any], role: str | None) -> None:
        kind = block.get("type")
        if kind == "text" and role == "user" and isinstance(block.get("text"), str):
            self.add_user_text(block["text"])
        elif kind == "tool_use":
            self.tool_calls += 1
            name = block.get("name") if isinstance(block.get("name"), str) else None
            raw_input = block.get("input")
            tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
            if isinstance(block.get("id"), str):
                self.uses[block["id"]] = (name or "tool", tool_input)
            self.add_tool_input(name, tool_input)
        elif kind == "tool_result":
            use_id = block.get("tool_use_id")
            self.results.append(
                (
                    use_id if isinstance(use_id, str) else None,
                    content_text(block.get("content")),
                    bool(block.get("is_error")),
                )
            )

    def add_message(self, message: dict[str, Any]) -> None:
        role = message.get("role")
        self.messages += 1
        if role == "user":
            self.user += 1
        elif role == "assistant":
            self.assistant += 1
        content = message.get("content")
        if isinstance(content, str):
            if role == "user":
                self.add_user_text(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    self.add_block(block, role if isinstance(role, str) else None)

    def add_object(self, item: dict[str, Any]) -> None:
        """A dict recovered from cut JSON: a message, a block, or a bare tool input."""
        if "role" in item:
            self.add_message(item)
        elif "type" in item:
            self.add_block(item, None)
        else:
            self.add_tool_input(None, item)


def _recover_objects(text: str) -> list[dict[str, Any]]:
    """The outermost complete JSON objects found in `text`, left to right.

    Inside a JSON string every quote is escaped, so `{"` only starts a real object. Where an object is
    cut (its decode fails), the objects nested inside it are tried instead.
    """
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    covered = 0
    for match in _OBJECT_START_RE.finditer(text):
        start = match.start()
        if start < covered:
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
            covered = end
    return found


def _fit(items: list[str], budget: int, *, keep_first: bool, max_items: int = 12) -> tuple[list[str], int]:
    """Up to `max_items` items that fit in `budget` chars, preferring the newest (and the first, if asked).

    Returns the chosen items in their original order and how many were left out.
    """
    cost = [len(item) + 3 for item in items]
    order = list(range(len(items) - 1, -1, -1))
    if keep_first and items:
        order = [0, *order[:-1]]
    chosen: set[int] = set()
    used = 0
    for index in order:
        if used + cost[index] > budget or len(chosen) >= max_items:
            break
        chosen.add(index)
        used += cost[index]
    return [items[i] for i in sorted(chosen)], len(items) - len(chosen)


def _section(title: str, items: list[str], budget: int, *, keep_first: bool = False) -> list[str]:
    if not items:
        return [f"{title}", "- (none)"]
    kept, left_out = _fit(items, budget, keep_first=keep_first)
    lines = [title, *(f"- {item}" for item in kept)]
    if left_out:
        lines.append(f"- ({left_out} more not shown)")
    return lines


def _describe_digest_result(digest: _Digest, use_id: str | None, output: str, is_error: bool) -> str:
    name, tool_input = digest.uses.get(use_id or "", ("tool", {}))
    target = tool_input.get("path") or tool_input.get("command") or tool_input.get("pattern") or ""
    label = f"{name} {one_line(str(target), 60)}".strip()
    archived = archived_path(output)
    if archived is not None:
        return f"{label}: output archived at {archived}"
    status = " (error)" if is_error else ""
    return f"{label}{status}: {one_line(output, 200) or '(empty)'}"


def extractive_summary(conversation_text: str, focus: str | None) -> str:
    """A summary made only of text found in `conversation_text` (the JSON of a message list).

    The JSON may be cut in the middle (head + tail of a long history); then the complete objects
    that survive are recovered one by one. The result stays under SUMMARY_CHAR_LIMIT chars.
    """
    digest = _Digest()
    complete = True
    try:
        parsed: Any = json.loads(conversation_text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        parsed = [parsed]
    if isinstance(parsed, list):
        for item in parsed:
            if isinstance(item, dict):
                digest.add_object(item)
    else:
        complete = False
        for item in _recover_objects(conversation_text):
            digest.add_object(item)

    lines: list[str] = []
    if focus and focus.strip():
        lines.append(f"Focus: {one_line(focus, 240)}")
    lines += _section("User requests:", digest.requests, 1_100, keep_first=True)
    files = [f"{path} ({', '.join(ops)})" for path, ops in digest.files.items()]
    lines += _section("Files touched:", [one_line(item, 140) for item in files], 650)
    lines += _section("Commands run:", digest.commands, 600)
    last = [_describe_digest_result(digest, *result) for result in digest.results[-3:]]
    lines += _section("Last results:", last, 720)
    if digest.earlier_summary:
        lines.append(f"Earlier summary (excerpt): {one_line(digest.earlier_summary, 300)}")
    if digest.archives:
        kept, _ = _fit([one_line(path, 120) for path in digest.archives], 260, keep_first=False)
        lines.append("Archived transcripts: " + ", ".join(kept))
    counts = (
        f"Messages: {digest.messages} ({digest.user} user, {digest.assistant} assistant); "
        f"tool calls: {digest.tool_calls}; tool results: {len(digest.results)}."
    )
    if not complete:
        counts += " The conversation text was cut, so counts cover only the parts that survived."
        if omission := OMISSION_RE.search(conversation_text):
            counts += f" ({omission['omitted']} chars omitted; {one_line(omission['where'], 200)}.)"
        if digest.messages == 0 and digest.tool_calls == 0 and not digest.results:
            excerpt = one_line(conversation_text, 300)
            if excerpt:
                lines.append(f"Raw excerpt: {excerpt}")
    lines.append(counts)

    summary = "\n".join(lines)
    if len(summary) > SUMMARY_CHAR_LIMIT:
        cut = summary[: SUMMARY_CHAR_LIMIT - 20]
        summary = cut[: cut.rfind("\n")] + "\n[summary cut]" if "\n" in cut else cut
    return summary
