"""A deterministic model that needs no network and no API key.

`OfflineModel` reads the last message of the history and answers by fixed rules, so the whole agent
loop (tool batches, compaction, the TUI) can run and be tested without a real model:

1. The last message carries tool results -> a short factual text report on each result.
2. The last message is a compaction marker -> a text saying the context was compacted and what the
   current request was (no tool call, so a compacted request is never re-run in a loop).
3. Otherwise the last user text is a command: ``read PATH...``, ``run CMD`` / ``$ CMD``,
   ``glob PATTERN``, ``write PATH`` + newline + text, ``compact [FOCUS]``, ``help``; anything else
   gets a text reply pointing at ``help`` and ANTHROPIC_API_KEY.

`extractive_summary` (used by `OfflineModel.summarize`) builds a summary only from text found in the
conversation JSON, which may have been cut in the middle.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shlex
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from core.model.base import ModelEvent, ModelResponse, PromptTooLongError, TextChunk
from core.text import one_line

__all__ = ["OfflineModel", "extractive_summary"]

HELP_TEXT = (
    "This is the offline model (no API key): it understands a few commands and runs the real tools.\n"
    "\n"
    "- `read PATH [PATH ...]` - read one or more files (one read_file call per path)\n"
    "- `run CMD` or `$ CMD` - run a shell command with bash\n"
    "- `glob PATTERN` - list files matching a glob pattern\n"
    "- `write PATH` followed by a newline and the text - write that text to PATH\n"
    "- `compact` or `compact FOCUS` - compact the context now (optionally focusing the summary)\n"
    "- `help` - this list\n"
    "\n"
    "To chat with a real model, set ANTHROPIC_API_KEY (and optionally ANTHROPIC_MODEL) and restart."
)

_SNIP_RE = re.compile(r"\A\[(?P<count>\d+) messages archived at (?P<path>[^\n\]]+)\]")
_COMPACT_PREFIXES = ("[Compacted]", "[Reactive compact]")
_REQUEST_RE = re.compile(
    r"Current user request:\n(?P<request>.*?)(?:\n\nConversation summary \(reference only\):|\Z)",
    re.DOTALL,
)
_SUMMARY_BODY_RE = re.compile(
    r"Conversation summary \(reference only\):\n(?P<summary>.*?)(?:\n\nFull transcript: |\Z)", re.DOTALL
)
_TRANSCRIPT_RE = re.compile(r"Full transcript: (?P<path>[^\n]+)")
_PERSISTED_PREFIX = "<persisted-output>"
_PLACEHOLDER_PREFIX = "[Earlier tool result saved at"
_FULL_OUTPUT_RE = re.compile(r"Full output: (?P<path>[^\n]+)")
_PLACEHOLDER_RE = re.compile(r"\[Earlier tool result saved at (?P<path>[^\n\]]+)\]")
_EXIT_LINE_RE = re.compile(
    r"^\s*[\[(]?\s*(?:exit(?:[ _]?code|[ _]status)?|return[ _]code|returncode)\s*[:=]?\s*-?\d+\s*[\])]?\s*$",
    re.IGNORECASE,
)
_NO_MATCH_RE = re.compile(r"^\(?\s*no (?:files|matches|match)\b", re.IGNORECASE)
_OBJECT_START_RE = re.compile(r'\{"')
_HEAD_RE = re.compile(r"(?P<keyword>\S+)(?P<rest>.*)", re.DOTALL)

_FILE_TOOLS = {"read_file": "read", "write_file": "write", "edit_file": "edit"}

SUMMARY_CHAR_LIMIT = 4_000


# --------------------------------------------------------------------------------------------
# small text helpers


def _text_of(content: Any) -> str:
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


def _join_words(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _is_compaction_marker(text: str) -> bool:
    return text.startswith(_COMPACT_PREFIXES) or _SNIP_RE.match(text) is not None


def _archived_path(text: str) -> str | None:
    """The path a persisted-output block or placeholder points at, or None if `text` is neither."""
    if text.startswith(_PERSISTED_PREFIX):
        match = _FULL_OUTPUT_RE.search(text)
        return match["path"].strip() if match else "(unknown path)"
    if text.startswith(_PLACEHOLDER_PREFIX):
        match = _PLACEHOLDER_RE.match(text)
        return match["path"].strip() if match else "(unknown path)"
    return None


def _tool_names(tools: Iterable[Any]) -> set[str]:
    return {tool["name"] for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)}


def _tool_uses(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """tool_use id -> tool_use block, over every assistant message."""
    found: dict[str, dict[str, Any]] = {}
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and isinstance(block.get("id"), str)
            ):
                found[block["id"]] = block
    return found


def _last_plain_request(messages: list[dict[str, Any]]) -> str | None:
    """The newest user text that is neither a marker nor a tool-result message."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") == "tool_result" for block in content
        ):
            continue
        text = _text_of(content).strip()
        if not text:
            continue
        if text.startswith(_COMPACT_PREFIXES):
            match = _REQUEST_RE.search(text)
            if match and match["request"].strip():
                return match["request"].strip()
            continue
        if _SNIP_RE.match(text):
            continue
        return text
    return None


# --------------------------------------------------------------------------------------------
# rule 1: report on tool results


def _describe_read(path: str, output: str) -> str:
    lines = output.splitlines()
    first = next((line for line in lines if line.strip()), "")
    where = f"read_file `{path}`" if path else "read_file"
    size = f"{len(output):,} chars, {len(lines):,} lines"
    if not output:
        return f"{where}: empty"
    first_line = one_line(first, 100)
    quoted = f"`{first_line}`" if "`" not in first_line else f"«{first_line}»"
    return f"{where}: {size}; first line: {quoted}"


def _describe_bash(command: str, output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    exit_lines = [line.strip() for line in lines if _EXIT_LINE_RE.match(line)]
    others = [line for line in lines if not _EXIT_LINE_RE.match(line)]
    parts = [f"bash `{one_line(command, 80)}`" if command else "bash"]
    if exit_lines:
        parts.append(exit_lines[-1])
    if others:
        parts.append(f'last line: "{one_line(others[-1], 120)}"')
    elif not exit_lines:
        parts.append("no output")
    return parts[0] + ": " + "; ".join(parts[1:])


def _describe_glob(pattern: str, output: str) -> str:
    matches = [
        line
        for line in output.splitlines()
        if line.strip() and not line.lstrip().startswith(("[", "(")) and not _NO_MATCH_RE.match(line.strip())
    ]
    count = len(matches)
    noun = "match" if count == 1 else "matches"
    return f"glob `{pattern}`: {count} {noun}" if pattern else f"glob: {count} {noun}"


def _describe_result(block: dict[str, Any], uses: dict[str, dict[str, Any]]) -> str:
    use_id = block.get("tool_use_id")
    use = uses.get(use_id) if isinstance(use_id, str) else None
    name = str(use.get("name")) if use else "unknown tool"
    raw_input = use.get("input") if use else None
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    output = _text_of(block.get("content"))
    path = str(tool_input.get("path", ""))
    command = str(tool_input.get("command", ""))
    pattern = str(tool_input.get("pattern", ""))
    target = {"read_file": path, "write_file": path, "edit_file": path, "bash": command, "glob": pattern}.get(
        name, ""
    )
    label = f"{name} `{one_line(target, 80)}`" if target else name

    archived = _archived_path(output)
    if archived is not None:
        return f"{label}: the output was archived at `{archived}`"
    if block.get("is_error"):
        return f'{label} failed: "{one_line(output, 200) or "no message"}"'
    if name == "read_file":
        return _describe_read(path, output)
    if name == "bash":
        return _describe_bash(command, output)
    if name == "glob":
        return _describe_glob(pattern, output)
    first = next((line for line in output.splitlines() if line.strip()), "")
    return f'{label}: "{one_line(first, 160)}"' if first else f"{label}: done (no output)"


def _report_results(messages: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    uses = _tool_uses(messages)
    lines = [f"- {_describe_result(block, uses)}" for block in results]
    noun = "tool result" if len(results) == 1 else "tool results"
    return f"{len(results)} {noun}:\n" + "\n".join(lines)


# --------------------------------------------------------------------------------------------
# rule 2: the context was just compacted


def _report_compaction(messages: list[dict[str, Any]], marker: str) -> str:
    snip = _SNIP_RE.match(marker)
    if snip:
        request = _last_plain_request(messages[:-1])
        head = (
            f"{snip['count']} earlier messages were archived at `{snip['path']}` to keep the context small."
        )
    else:
        match = _REQUEST_RE.search(marker)
        request = match["request"].strip() if match and match["request"].strip() else None
        transcript = _TRANSCRIPT_RE.search(marker)
        where = f" (full transcript: `{transcript['path'].strip()}`)" if transcript else ""
        head = f"The context was compacted into a summary{where}."
    said = f' The current request was: "{one_line(request, 300)}".' if request else ""
    return f"{head}{said} I won't re-run it automatically; send the next command (or `help`) to continue."


# --------------------------------------------------------------------------------------------
# rule 3: commands


@dataclass
class _Plan:
    text: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _split_paths(rest: str) -> list[str]:
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    unique: list[str] = []
    for word in words:
        if word and word not in unique:
            unique.append(word)
    return unique


def _command_plan(text: str, available: set[str]) -> _Plan:
    head = _HEAD_RE.match(text)
    keyword, rest = (head["keyword"], head["rest"].strip()) if head else ("", "")
    keyword_lower = keyword.lower()

    def missing(tool: str) -> _Plan:
        return _Plan(
            f"The `{tool}` tool is not available in this session, so I can't do "
            f'"{one_line(text, 80)}". Type `help` for what the offline model can do.'
        )

    if text.startswith("$"):
        command = text[1:].strip()
        if not command:
            return _Plan("Usage: `$ CMD` or `run CMD` runs CMD with bash.")
        if "bash" not in available:
            return missing("bash")
        return _Plan(f"Running `{one_line(command, 80)}`.", [("bash", {"command": command})])

    if keyword_lower == "help" and not rest:
        return _Plan(HELP_TEXT)

    if keyword_lower == "read":
        paths = _split_paths(rest)
        if not paths:
            return _Plan("Usage: `read PATH [PATH ...]` reads one or more files.")
        if "read_file" not in available:
            return missing("read_file")
        label = _join_words([f"`{path}`" for path in paths])
        return _Plan(f"Reading {label}.", [("read_file", {"path": path}) for path in paths])

    if keyword_lower == "run":
        if not rest:
            return _Plan("Usage: `run CMD` (or `$ CMD`) runs CMD with bash.")
        if "bash" not in available:
            return missing("bash")
        return _Plan(f"Running `{one_line(rest, 80)}`.", [("bash", {"command": rest})])

    if keyword_lower == "glob":
        pattern = rest.splitlines()[0].strip() if rest else ""
        if not pattern:
            return _Plan("Usage: `glob PATTERN` lists the files matching PATTERN (e.g. `glob **/*.py`).")
        if "glob" not in available:
            return missing("glob")
        return _Plan(f"Looking for files matching `{pattern}`.", [("glob", {"pattern": pattern})])

    if keyword_lower == "write":
        first_line, newline, content = text.partition("\n")
        path = first_line[len(keyword) :].strip()
        if not path or not newline:
            return _Plan("Usage: `write PATH`, then the text to write on the following lines.")
        if "write_file" not in available:
            return missing("write_file")
        return _Plan(
            f"Writing {len(content):,} chars to `{path}`.",
            [("write_file", {"path": path, "content": content})],
        )

    if keyword_lower == "compact":
        if "compact" not in available:
            return missing("compact")
        if rest:
            return _Plan(
                f"Compacting the context, focusing on: {one_line(rest, 120)}.",
                [("compact", {"focus": rest})],
            )
        return _Plan("Compacting the context.", [("compact", {})])

    excerpt = one_line(text, 80)
    asked = f' You asked: "{excerpt}".' if excerpt else ""
    return _Plan(
        "This is the offline model (no API key), so I can't answer free-form requests."
        f"{asked} Type `help` for the commands I understand (read, run, glob, write, compact), "
        "or set ANTHROPIC_API_KEY to use a real model."
    )


# --------------------------------------------------------------------------------------------
# the model


class OfflineModel:
    """A deterministic, no-network implementation of the `Model` protocol."""

    name = "offline"
    label = "offline model (no API key)"
    offline = True

    def __init__(
        self,
        *,
        chunk_delay: float = 0.0,
        chunk_size: int = 12,
        prompt_char_limit: int | None = None,
        label: str = "offline model (no API key)",
    ) -> None:
        """`prompt_char_limit`: when set, a history whose JSON is longer raises PromptTooLongError
        (lets tests exercise reactive compaction without a real API)."""
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        if chunk_delay < 0:
            raise ValueError("chunk_delay must not be negative")
        self.chunk_delay = chunk_delay
        self.chunk_size = chunk_size
        self.prompt_char_limit = prompt_char_limit
        self.label = label  # why it is offline: no key, or --offline (core.agent.make_model says which)

    def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        """The complete reply to `messages` (what `stream` ends with), computed synchronously."""
        serialised = json.dumps(messages, default=str, ensure_ascii=False, sort_keys=True)
        if self.prompt_char_limit is not None and len(serialised) > self.prompt_char_limit:
            raise PromptTooLongError(
                f"prompt is too long: {len(serialised):,} chars > {self.prompt_char_limit:,} (offline limit)"
            )
        plan = self._plan(messages, tools)
        digest = hashlib.sha256(serialised.encode("utf-8")).hexdigest()[:8]
        content: list[dict[str, Any]] = [{"type": "text", "text": plan.text}]
        for index, (tool, tool_input) in enumerate(plan.calls):
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_off_{len(messages):04d}_{index}_{digest}",
                    "name": tool,
                    "input": tool_input,
                }
            )
        calls_json = json.dumps(content[1:], ensure_ascii=False) if plan.calls else ""
        usage = {
            "input_tokens": len(serialised) // 4,
            "output_tokens": len(plan.text) // 4 + len(calls_json) // 4,
        }
        return ModelResponse(
            content=content, stop_reason="tool_use" if plan.calls else "end_turn", usage=usage
        )

    async def stream(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> AsyncIterator[ModelEvent]:
        """Yield the reply's text in `chunk_size` pieces, then the complete ModelResponse."""
        response = self.respond(messages, tools)
        text = response.content[0]["text"]
        for start in range(0, len(text), self.chunk_size):
            await asyncio.sleep(self.chunk_delay)
            yield TextChunk(text[start : start + self.chunk_size])
        await asyncio.sleep(0)
        yield response

    async def summarize(self, conversation_text: str, focus: str | None) -> str:
        """An extractive summary of the conversation JSON (possibly cut); see `extractive_summary`."""
        await asyncio.sleep(0)
        return extractive_summary(conversation_text, focus)

    async def aclose(self) -> None:
        """Nothing to release."""

    def _plan(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> _Plan:
        if not messages:
            return _Plan("The conversation is empty. Type `help` for the commands I understand.")
        last = messages[-1]
        if not isinstance(last, dict) or last.get("role") != "user":
            return _Plan("Waiting for your next request (type `help` for the commands I understand).")
        content = last.get("content")
        if isinstance(content, list):
            results = [
                block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"
            ]
            if results:
                return _Plan(_report_results(messages, results))
        text = _text_of(content).strip()
        if _is_compaction_marker(text):
            return _Plan(_report_compaction(messages, text))
        return _command_plan(text, _tool_names(tools))


# --------------------------------------------------------------------------------------------
# extractive summary


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
        if stripped.startswith(_COMPACT_PREFIXES):
            request = _REQUEST_RE.search(stripped)
            if request:
                self.add_request(request["request"])
            body = _SUMMARY_BODY_RE.search(stripped)
            if body:
                summary = body["summary"].strip()
                try:
                    decoded = json.loads(summary)
                except ValueError:
                    decoded = summary
                self.earlier_summary = decoded if isinstance(decoded, str) else summary
            transcript = _TRANSCRIPT_RE.search(stripped)
            if transcript:
                self.add_archive(transcript["path"])
            return
        snip = _SNIP_RE.match(stripped)
        if snip:
            self.add_archive(snip["path"])
            return
        if stripped.startswith(("[interrupted]", _PERSISTED_PREFIX, _PLACEHOLDER_PREFIX)):
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
                    _text_of(block.get("content")),
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
    archived = _archived_path(output)
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
