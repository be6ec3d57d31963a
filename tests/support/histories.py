"""Histories for compaction tests: message builders, a recording summarizer, and checks of what the
archive holds (the paths and markers of the DESIGN.md contract, written from the contract)."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

from core.archive import Archive
from core.compaction import CompactionSettings, Compactor
from core.markers import RECALL_LINE

Message = dict[str, Any]


TOOL_RESULTS = ".task_outputs/tool-results"
TRANSCRIPTS = ".transcripts"

PERSISTED_RE = re.compile(
    r"\A<persisted-output>\nFull output: (?P<path>[^\n]+)\nPreview:\n(?P<preview>.*)\n</persisted-output>\Z",
    re.DOTALL,
)
PLACEHOLDER_RE = re.compile(r"\A\[Earlier tool result saved at (?P<path>[^\n\]]+)\]\Z")
SNIP_RE = re.compile(r"\A\[(?P<count>\d+) messages archived at (?P<path>[^\n\]]+)\]\Z")
TRANSCRIPT_PATH_RE = re.compile(r"\A\.transcripts/transcript_[^/]+\.jsonl\Z")
TOOL_RESULT_PATH_RE = re.compile(r"\A\.task_outputs/tool-results/[^/]+\.txt\Z")


# --- builders ----------------------------------------------------------------------------------


def user(content: Any) -> Message:
    return {"role": "user", "content": content}


def assistant(content: Any) -> Message:
    return {"role": "assistant", "content": content}


def tool_use(tool_id: str, path: str = "notes.txt") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": path}}


def tool_result(tool_id: str, content: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def big_text(size: int, tag: str) -> str:
    """`size` characters of numbered lines (with some CJK and an emoji), distinct per tag."""
    line_no = 0
    parts: list[str] = []
    total = 0
    while total < size:
        line = f"{tag} line {line_no:06d} 读取 ✓ 🙂 some text\n"
        parts.append(line)
        total += len(line)
        line_no += 1
    return "".join(parts)[:size]


def chars(messages: list[Message]) -> int:
    """The contract's definition of the size of a history."""
    return len(json.dumps(messages, default=str, ensure_ascii=False))


class Recorder:
    """A fake summarizer that remembers what it was given."""

    def __init__(self, summary: str = 'Goal: compare files. Decided "A". 已读取 3 个文件.') -> None:
        self.summary = summary
        self.calls: list[tuple[str, str | None]] = []

    async def __call__(self, conversation_text: str, focus: str | None) -> str:
        self.calls.append((conversation_text, focus))
        return self.summary


async def failing_summarizer(conversation_text: str, focus: str | None) -> str:
    raise RuntimeError("model unavailable (503)")


def make_compactor(
    workdir: Path, settings: CompactionSettings | None = None, summarize: Any = None
) -> tuple[Compactor, list[Any], Recorder | Any]:
    events: list[Any] = []
    summarizer = summarize if summarize is not None else Recorder()
    compactor = Compactor(
        Archive(workdir),
        summarize=summarizer,
        settings=settings or CompactionSettings(),
        on_event=events.append,
    )
    return compactor, events, summarizer


# --- readers and checks ------------------------------------------------------------------------


def check_relative_posix(path: str) -> None:
    assert "\\" not in path, path
    pure = PurePosixPath(path)
    assert not pure.is_absolute(), path
    assert ".." not in pure.parts, path


def read_exact(workdir: Path, path: str) -> str:
    """The file's text with no newline translation."""
    check_relative_posix(path)
    target = workdir / path
    assert target.is_file(), f"{path} does not exist"
    assert workdir.resolve() in target.resolve().parents
    return target.read_bytes().decode("utf-8")


def load_transcript(workdir: Path, path: str) -> list[Any]:
    """One JSON message per line; split on \\n only (JSON strings may hold U+2028 and friends)."""
    assert TRANSCRIPT_PATH_RE.match(path), path
    text = read_exact(workdir, path)
    assert text.endswith("\n") or text == ""
    return [json.loads(line) for line in text.split("\n")[:-1]]


def persisted(content: Any) -> re.Match[str]:
    assert isinstance(content, str), content
    match = PERSISTED_RE.match(content)
    assert match, content[:300]
    assert TOOL_RESULT_PATH_RE.match(match["path"]), match["path"]
    return match


def placeholder_path(content: Any) -> str:
    assert isinstance(content, str), content
    match = PLACEHOLDER_RE.match(content)
    assert match, content[:300]
    assert TOOL_RESULT_PATH_RE.match(match["path"]), match["path"]
    return match["path"]


def summary_prefix(title: str, request: str, summary: str) -> str:
    return (
        f"[{title}]\n\nCurrent user request:\n{request}\n\n"
        f"Conversation summary (reference only):\n{json.dumps(summary, ensure_ascii=False)}\n\n"
        f"{RECALL_LINE}\n\nFull transcript: "
    )


def marker_paths(messages: list[Message]) -> list[str]:
    """Every archive path that any marker in `messages` names."""
    found: list[str] = []

    def scan(text: Any) -> None:
        if not isinstance(text, str):
            return
        for regex in (PERSISTED_RE, PLACEHOLDER_RE, SNIP_RE):
            match = regex.match(text)
            if match:
                found.append(match["path"])
        if text.startswith(("[Compacted]", "[Reactive compact]")) and "\n\nFull transcript: " in text:
            found.append(text.rsplit("\n\nFull transcript: ", 1)[1])

    for message in messages:
        content = message.get("content")
        scan(content)
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    scan(block.get("content"))
                    scan(block.get("text"))
    return found


def entries(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def same_file(one: str | Path, two: Path) -> bool:
    return Path(one).resolve() == two.resolve()


def steps(events: list[Any]) -> list[str]:
    return [event.step for event in events]


def one_line_error(error: BaseException) -> None:
    text = str(error)
    assert text.strip(), f"{type(error).__name__} has an empty message"
    assert "\n" not in text, text
