"""parse_marker reads the contract's marker formats in linear work.

- it agrees with the formats' regular expressions (the DESIGN.md contract, kept here as the
  reference) on generated texts built from the formats' own pieces;
- its work on long texts full of near-misses grows linearly. Work is counted, not timed: the text
  is a `str` that counts the characters each of its methods may examine (a scan, a comparison, a
  slice). A parser that says a text *is* a marker must have read all of it, so the count is at
  least the text's length; twice the text may cost about twice as much. (The regexes it replaces
  backtracked quadratically: 2.3 s on 200 kB; see bench/bench_markers.py.)
"""

from __future__ import annotations

import json
import re
from typing import Any, SupportsIndex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.markers import (
    RECALL_LINE,
    Marker,
    parse_marker,
    persisted_output,
    placeholder,
    snip_marker,
    summary_message,
)

# Since the recall features a summary message names them in one line before its transcript's path
# (an addition: the contract's regex still matches, reading the line as the end of the summary).
SUMMARY_RECALL = re.compile(r"\A\[(?P<title>Compacted|Reactive compact)\]\n\nCurrent user request:\n(?P<request>.*)"
                            r"\n\nConversation summary \(reference only\):\n(?P<summary>.*)\n\n"
                            + re.escape(RECALL_LINE) + r"\n\nFull transcript: (?P<path>[^\n]+)\Z", re.DOTALL)
REFERENCE = {
    "persisted": re.compile(r"\A<persisted-output>\nFull output: (?P<path>[^\n]+)\nPreview:\n(?P<preview>.*)"
                            r"\n</persisted-output>\Z", re.DOTALL),
    "placeholder": re.compile(r"\A\[Earlier tool result saved at (?P<path>[^\n\]]+)\]\Z"),
    "snip": re.compile(r"\A\[(?P<count>\d+) messages archived at (?P<path>[^\n\]]+)\]\Z"),
    "summary": re.compile(r"\A\[(?P<title>Compacted|Reactive compact)\]\n\nCurrent user request:\n(?P<request>.*)"
                          r"\n\nConversation summary \(reference only\):\n(?P<summary>.*)\n\nFull transcript: "
                          r"(?P<path>[^\n]+)\Z", re.DOTALL),
}


def reference(text: str) -> Marker | None:
    """What the contract's regexes make of `text` (in the order parse_marker tries them)."""
    if match := REFERENCE["placeholder"].match(text):
        return Marker("placeholder", match["path"])
    if match := REFERENCE["persisted"].match(text):
        return Marker("persisted", match["path"], preview=match["preview"])
    if match := REFERENCE["snip"].match(text):
        return Marker("snip", match["path"], count=int(match["count"]))
    if match := SUMMARY_RECALL.match(text) or REFERENCE["summary"].match(text):
        summary: Any = match["summary"]
        try:
            decoded = json.loads(summary)
            summary = decoded if isinstance(decoded, str) else summary
        except ValueError:
            pass
        kind = "compacted" if match["title"] == "Compacted" else "reactive"
        return Marker(kind, match["path"], request=match["request"], summary=summary)  # type: ignore[arg-type]
    return None


# Texts made of the formats' own pieces, so that near-misses and overlaps are common.
PIECES = ["\n", "\n\n", "[", "]", "<persisted-output>", "</persisted-output>", "\nFull output: ", "Preview:\n",
          "\n</persisted-output>", "[Compacted]\n\n", "[Reactive compact]\n\n", "Current user request:\n",
          "\n\nConversation summary (reference only):\n", "\n\nFull transcript: ", "Full transcript: ", '"s"',
          "a.txt", "x", " ", "12", " messages archived at ", "[Earlier tool result saved at ", RECALL_LINE,
          "\n\n" + RECALL_LINE]
pieces = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
texts = st.one_of(
    pieces,
    st.builds(lambda a, b: persisted_output(a, b), pieces, pieces),
    st.builds(lambda a, b, c, d: summary_message("Compacted", a, b, c) + d, pieces, pieces, pieces,
              st.sampled_from(["", "\n", "x"])),
    st.builds(lambda a, b: summary_message("Reactive compact", a, b, "p") if b else a, pieces, pieces),
    st.builds(lambda a: placeholder(a), pieces),
    st.builds(lambda n, a: snip_marker(n, a), st.integers(0, 999), pieces),
)


@settings(max_examples=600, deadline=None)
@given(text=texts)
def test_parse_marker_agrees_with_the_contract_formats(text: str) -> None:
    assert parse_marker(text) == reference(text)


def test_a_summary_written_before_the_recall_line_reads_as_one_written_since() -> None:
    old = ('[Compacted]\n\nCurrent user request:\nfix it\n\nConversation summary (reference only):\n"done: a"'
           "\n\nFull transcript: .transcripts/t.jsonl")
    new = summary_message("Compacted", "fix it", "done: a", ".transcripts/t.jsonl")
    assert new == old.replace("\n\nFull transcript", f"\n\n{RECALL_LINE}\n\nFull transcript")
    assert parse_marker(old) == parse_marker(new) == Marker(
        "compacted", ".transcripts/t.jsonl", request="fix it", summary="done: a"
    )
    assert "search_context" in RECALL_LINE and "note" in RECALL_LINE


class Scanned(str):
    """A str that counts the characters its methods may examine (the cost model of the test)."""

    cost = 0

    def _span(self, start: SupportsIndex | None, end: SupportsIndex | None) -> int:
        return len(range(*slice(start, end).indices(len(self))))

    def find(self, sub: str, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> int:
        Scanned.cost += self._span(start, end)
        return str.find(self, sub, start, end)

    def rfind(self, sub: str, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> int:
        Scanned.cost += self._span(start, end)
        return str.rfind(self, sub, start, end)

    def index(self, sub: str, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> int:
        Scanned.cost += self._span(start, end)
        return str.index(self, sub, start, end)

    def startswith(self, prefix: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> bool:
        Scanned.cost += sum(map(len, prefix)) if isinstance(prefix, tuple) else len(prefix)
        return str.startswith(self, prefix, start, end)

    def endswith(self, suffix: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> bool:
        Scanned.cost += sum(map(len, suffix)) if isinstance(suffix, tuple) else len(suffix)
        return str.endswith(self, suffix, start, end)

    def __getitem__(self, key: Any) -> str:
        part = str.__getitem__(self, key)
        Scanned.cost += len(part)
        return part

    def __contains__(self, key: object) -> bool:
        Scanned.cost += len(self)
        return str.__contains__(self, key)


HEADING = "\n\nConversation summary (reference only):\n"
LONG_MARKERS = {
    # a request full of summary headings and transcript lines: each a near-miss for the format
    "summary": lambda n: summary_message("Compacted", (HEADING + "\n\nFull transcript: \n") * n, "s", "t.jsonl"),
    "reactive": lambda n: summary_message("Reactive compact", "[" * n + HEADING * n, '"s"' * n, "t.jsonl"),
    # a preview full of closing tags and preview headings
    "persisted": lambda n: persisted_output("a.txt", ("\n</persisted-output>x\nPreview:\n") * n),
}


@pytest.mark.parametrize("make", LONG_MARKERS.values(), ids=LONG_MARKERS.keys())
def test_parse_marker_reads_a_long_marker_in_linear_work(make: Any) -> None:
    costs = []
    for n in (2_000, 4_000):
        text = make(n)
        Scanned.cost = 0
        found = parse_marker(Scanned(text))
        assert found == reference(text) and found is not None
        costs.append((len(text), Scanned.cost))
    (small_length, small), (_, large) = costs
    assert small_length <= small <= 4 * small_length  # read whole, a few times at most
    assert large <= 2.2 * small, costs
