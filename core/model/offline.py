"""A deterministic model that needs no network and no API key.

`OfflineModel` reads the last message of the history and answers by fixed rules, so the whole agent
loop (tool batches, compaction, the TUI) can run and be tested without a real model:

1. The last message carries tool results -> a short factual text report on each result.
2. The last message is a compaction marker -> a text saying the context was compacted and what the
   current request was (no tool call, so a compacted request is never re-run in a loop).
3. Otherwise the last user text is a command: ``read PATH...``, ``run CMD`` / ``$ CMD``,
   ``glob PATTERN``, ``write PATH`` + newline + text, ``compact [FOCUS]``, ``help``; anything else
   gets a text reply pointing at ``help`` and ANTHROPIC_API_KEY.

Its summaries come from `core.model.summary.extractive_summary`.
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

from core.history.intake import reply_content
from core.markers import Marker, archived_path, parse_marker
from core.model.base import ModelEvent, ModelResponse, PromptTooLongError, SummaryEvent, TextChunk
from core.model.summary import content_text, extractive_summary
from core.text import one_line, plural

__all__ = ["OfflineModel"]

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

_EXIT_LINE_RE = re.compile(
    r"^\s*[\[(]?\s*(?:exit(?:[ _]?code|[ _]status)?|return[ _]code|returncode)\s*[:=]?\s*-?\d+\s*[\])]?\s*$",
    re.IGNORECASE,
)
_NO_MATCH_RE = re.compile(r"^\(?\s*no (?:files|matches|match)\b", re.IGNORECASE)
_HEAD_RE = re.compile(r"(?P<keyword>\S+)(?P<rest>.*)", re.DOTALL)


# --------------------------------------------------------------------------------------------
# small text helpers


def _join_words(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


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
        text = content_text(content).strip()
        if not text:
            continue
        marker = parse_marker(text)
        if marker is not None and marker.request is not None:
            if marker.request.strip():
                return marker.request.strip()
            continue
        if marker is not None and marker.kind == "snip":
            continue
        return text
    return None


# --------------------------------------------------------------------------------------------
# rule 1: report on tool results


def _describe_read(path: str, output: str) -> str:
    lines = output.splitlines()
    first = next((line for line in lines if line.strip()), "")
    where = f"read_file `{path}`" if path else "read_file"
    size = f"{plural(len(output), 'char')}, {plural(len(lines), 'line')}"
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
    output = content_text(block.get("content"))
    path = str(tool_input.get("path", ""))
    command = str(tool_input.get("command", ""))
    pattern = str(tool_input.get("pattern", ""))
    target = {"read_file": path, "write_file": path, "edit_file": path, "bash": command, "glob": pattern}.get(
        name, ""
    )
    label = f"{name} `{one_line(target, 80)}`" if target else name

    archived = archived_path(output)
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


def _report_compaction(messages: list[dict[str, Any]], marker: Marker) -> str:
    if marker.kind == "snip":
        request = _last_plain_request(messages[:-1])
        head = f"{marker.count} earlier messages were archived at `{marker.path}` to keep the context small."
    else:
        request = marker.request.strip() if marker.request and marker.request.strip() else None
        head = f"The context was compacted into a summary (full transcript: `{marker.path}`)."
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
        digest = hashlib.sha256(serialised.encode("utf-8", "surrogatepass")).hexdigest()[:8]
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
        content = reply_content(content, messages)  # as a real reply: valid UTF-8, ids the API accepts
        calls_json = json.dumps(content[1:], ensure_ascii=False) if plan.calls else ""
        usage: dict[str, int | None] = {
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

    async def summary_events(self, conversation_text: str, focus: str | None) -> AsyncIterator[SummaryEvent]:
        """`summarize`, as the one event of a call that never retries."""
        yield await self.summarize(conversation_text, focus)

    async def aclose(self) -> None:
        """Nothing to release."""

    async def count_tokens(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> int | None:
        """None: offline there is no exact count, only the tiktoken estimate (which says so)."""
        return None

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
        text = content_text(content).strip()
        marker = parse_marker(text)
        if marker is not None and marker.kind in ("snip", "compacted", "reactive"):
            return _Plan(_report_compaction(messages, marker))
        return _command_plan(text, _tool_names(tools))
