"""The exact marker strings compaction leaves in the history, and how to recognise them again."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.jsonlines import parse_json

if TYPE_CHECKING:
    from core.values.markers import MarkerKind

PERSISTED_OPEN = "<persisted-output>"
PERSISTED_CLOSE = "</persisted-output>"
CURRENT_REQUEST_HEADING = "Current user request:\n"
SUMMARY_HEADING = "Conversation summary (reference only):\n"


def persisted_output(path: str, preview: str) -> str:
    return f"{PERSISTED_OPEN}\nFull output: {path}\nPreview:\n{preview}\n{PERSISTED_CLOSE}"


def placeholder(path: str) -> str:
    return f"[Earlier tool result saved at {path}]"


def snip_marker(count: int, path: str) -> str:
    return f"[{count} messages archived at {path}]"


def omission_marker(omitted: int, where: str) -> str:
    """The line between head and tail of a summarizer input that was cut in the middle."""
    return f"[... {omitted:,} chars of the conversation omitted here; {where} ...]"


OMISSION_RE = re.compile(
    r"\n\[\.\.\. (?P<omitted>[\d,]+) chars of the conversation omitted here; (?P<where>[^\n]*) \.\.\.\]\n"
)


RECALL_LINE = (
    "Removed results and messages are searchable with search_context; your notes (the note tool) "
    "survive every compaction."
)
"""The line a summary message adds before its transcript's path, naming both recall features (an
addition to the contract's format: a text without it, written before, still parses)."""


def summary_message(title: str, request: str, summary: str, path: str) -> str:
    """The body of a [Compacted] or [Reactive compact] message."""
    return (
        f"[{title}]\n\n{CURRENT_REQUEST_HEADING}{request}\n\n"
        f"{SUMMARY_HEADING}{json.dumps(summary, ensure_ascii=False)}\n\n{RECALL_LINE}"
        f"\n\nFull transcript: {path}"
    )


RESTORED_HEADING = "[Restored from the archive: {path}]"
UNANSWERED_MARK = (
    "[An earlier request that got no answer: the turn ended before a reply. The current request follows.]"
)
KEPT_HEADING = "[Kept by you, from earlier in this conversation]"
NOTES_HEADING = "[Your notes (the note tool): kept verbatim through every compaction]"


def restored_message(path: str, text: str) -> str:
    """A restored result that has no marker left to put it back in place, appended as a user message."""
    return f"{RESTORED_HEADING.format(path=path)}\n{text}"


def unanswered(request: str) -> str:
    """A request whose turn ended before a reply, marked so the model does not take it for the current one."""
    return f"{UNANSWERED_MARK}\n{request}"


def is_note(text: str) -> bool:
    """Text ctxtui put into a user message that is not the person's request: a restored result, an
    unanswered request, a kept constraint or the model's notes."""
    return text.startswith((RESTORED_HEADING.split("{")[0], UNANSWERED_MARK, KEPT_HEADING, NOTES_HEADING))


def notes_message(notes: Sequence[str]) -> str:
    """The one message that holds the model's notes after a compaction (core/compaction/notes.py):
    the heading, then each note verbatim after its number ("1. "), one after the other."""
    return "\n".join([NOTES_HEADING, *(f"{number}. {text}" for number, text in enumerate(notes, 1))])


def is_notes_message(text: Any) -> bool:
    """`text` is the text of a notes message, known by its heading (one the person typed is taken for
    an old notes message: it is not their request, and a snip may archive it)."""
    return isinstance(text, str) and (text == NOTES_HEADING or text.startswith(NOTES_HEADING + "\n"))


def request_marker(request: str) -> str:
    """What prepare looks for to know the current request is still visible in a summary."""
    return f"{CURRENT_REQUEST_HEADING}{request}\n\n{SUMMARY_HEADING.rstrip(chr(10))}"


_PLACEHOLDER_RE = re.compile(r"\A\[Earlier tool result saved at (?P<path>[^\n\]]+)\]\Z")
_SNIP_RE = re.compile(r"\A\[(?P<count>\d+) messages archived at (?P<path>[^\n\]]+)\]\Z")
# The two patterns above backtrack at most once over one run of characters (linear). The
# persisted-output block and the summaries hold free text and are parsed by `_persisted` and
# `_summary` with a constant number of scans: regexes with two `.*` parts backtracked
# quadratically on a long text full of near-misses.
_PERSISTED_HEAD = f"{PERSISTED_OPEN}\nFull output: "
_PERSISTED_TAIL = f"\n{PERSISTED_CLOSE}"
_PREVIEW_HEADING = "\nPreview:\n"
_SUMMARY_TITLES: dict[str, MarkerKind] = {
    "[Compacted]\n\n": "compacted",
    "[Reactive compact]\n\n": "reactive",
}
_SUMMARY_SPLIT = f"\n\n{SUMMARY_HEADING}"
_TRANSCRIPT_LINE = "\n\nFull transcript: "
_RECALL_TAIL = f"\n\n{RECALL_LINE}"


@dataclass(frozen=True)
class Marker:
    """A marker found in a message or block.

    kind: "persisted" (persisted-output), "placeholder", "snip", "compacted", "reactive".
    `path` is the workdir-relative path the marker claims; it is not trusted until the Archive
    resolves it.
    """

    kind: MarkerKind
    path: str
    count: int | None = None
    request: str | None = None
    summary: str | None = None
    preview: str | None = None


def parse_marker(text: Any) -> Marker | None:
    """The marker `text` is exactly, or None (in time linear in the text's length)."""
    if not isinstance(text, str) or not text.startswith(("[", "<")):
        return None
    if match := _PLACEHOLDER_RE.match(text):
        return Marker("placeholder", match["path"])
    if text.startswith(_PERSISTED_HEAD):
        return _persisted(text)
    if match := _SNIP_RE.match(text):
        return Marker("snip", match["path"], count=int(match["count"]))
    return _summary(text)


def _persisted(text: str) -> Marker | None:
    """`<persisted-output>\\nFull output: PATH\\nPreview:\\nPREVIEW\\n</persisted-output>`: PATH is the
    first line after the heading, PREVIEW everything between its heading and the closing tag."""
    start = len(_PERSISTED_HEAD)
    end_of_path = text.find("\n", start)
    if end_of_path <= start or not text.startswith(_PREVIEW_HEADING, end_of_path):
        return None
    preview_start = end_of_path + len(_PREVIEW_HEADING)
    preview_end = len(text) - len(_PERSISTED_TAIL)
    if preview_end < preview_start or not text.endswith(_PERSISTED_TAIL):
        return None
    return Marker("persisted", text[start:end_of_path], preview=text[preview_start:preview_end])


def _summary(text: str) -> Marker | None:
    """`[Compacted]` or `[Reactive compact]`, the request, the summary and the transcript's path.

    As the format's regex read it: the path is the text after the last "Full transcript" line (it
    holds no newline), and the request runs to the last summary heading before that line. A summary
    written since the recall features is followed by RECALL_LINE, which is not part of it.
    """
    title = next((title for title in _SUMMARY_TITLES if text.startswith(title)), None)
    if title is None or not text.startswith(CURRENT_REQUEST_HEADING, len(title)):
        return None
    kind = _SUMMARY_TITLES[title]
    body_start = len(title) + len(CURRENT_REQUEST_HEADING)
    line = text.rfind(_TRANSCRIPT_LINE, body_start)
    path = text[line + len(_TRANSCRIPT_LINE) :] if line >= 0 else ""
    if not path or "\n" in path:
        return None
    split = text.rfind(_SUMMARY_SPLIT, body_start, line)
    if split < 0:
        return None
    summary = text[split + len(_SUMMARY_SPLIT) : line]
    if summary.endswith(_RECALL_TAIL):  # written since the recall features (a JSON string never ends so)
        summary = summary[: -len(_RECALL_TAIL)]
    decoded = parse_json(summary)  # core/jsonlines.py: never raises, bounded in depth
    summary = decoded if isinstance(decoded, str) else summary
    return Marker(kind, path, request=text[body_start:split], summary=summary)


def archived_path(text: Any) -> str | None:
    """The path a persisted-output block or placeholder claims (untrusted), or None if `text` is neither."""
    marker = parse_marker(text)
    return marker.path if marker is not None and marker.kind in ("persisted", "placeholder") else None


def kept_note(text: str) -> str:
    """The short pinned note that puts a fact (a constraint) back in the context (`agent.keep_fact`)."""
    return f"{KEPT_HEADING}\n{text}"
