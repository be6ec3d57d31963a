"""Cutting a person's text into sentences is linear: a run of `?` or `!` inside a sentence cost the
constraint extractor quadratic time (`[.!?]+\\Z` searched from every position of the run: a
60,000-character prompt took seconds). Proven by construction, not by a clock: every pattern the
extractor uses is checked for the shapes that make a search scan the same run again and again, and
the cut stays the one the rule describes on ordinary text (the old regex cut is the oracle there).
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import core.facts.extract as extract
from core.facts.extract import constraints, sentences

_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
}
_SINGLE = (sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.CATEGORY)
_SAMPLE = [chr(code) for code in range(0x3000)]  # ASCII, Latin, punctuation, the Unicode spaces


def _matches(node: tuple[Any, Any], char: str, flags: int) -> bool:
    """Whether the one-character node (LITERAL, IN, ...) of a parsed pattern matches `char`."""
    op, value = node
    fold = (lambda text: text.lower()) if flags & re.IGNORECASE else (lambda text: text)
    if op is sre.LITERAL:
        return fold(char) == fold(chr(value))
    if op is sre.NOT_LITERAL:
        return fold(char) != fold(chr(value))
    if op is sre.ANY:
        return bool(flags & re.DOTALL) or char != "\n"
    if op is sre.CATEGORY:
        return re.fullmatch(_CATEGORIES[value], char) is not None
    if op is sre.RANGE:
        return value[0] <= ord(char) <= value[1]
    assert op is sre.IN, op
    negate = bool(value) and value[0][0] is sre.NEGATE
    found = any(_matches(item, char, flags) for item in (value[1:] if negate else value))
    return found != negate


def _disjoint(first: tuple[Any, Any], second: tuple[Any, Any], flags: int) -> bool:
    return not any(_matches(first, char, flags) and _matches(second, char, flags) for char in _SAMPLE)


def rescanning_repeats(pattern: re.Pattern[str]) -> list[str]:
    """The unbounded repeats of `pattern` that a search may scan again from each start in a run.

    A repeat is safe when the pattern is anchored at the start of the text, when nothing follows it
    (a greedy repeat at the end cannot fail), or when a single character the repeat cannot match
    stands before it in the same sequence (then no two tries' runs overlap). A repeat of anything
    but one character (a nested quantifier) is never safe.
    """
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    anchored = bool(parsed.data) and parsed.data[0] == (sre.AT, sre.AT_BEGINNING_STRING)
    problems: list[str] = []

    def walk(sequence: list[tuple[Any, Any]], at_end: bool) -> None:
        for index, (op, value) in enumerate(sequence):
            last = at_end and index == len(sequence) - 1
            if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                _, high, body = value
                body = list(body)
                if high != sre.MAXREPEAT:
                    walk(body, False)
                    continue
                if len(body) != 1 or body[0][0] not in _SINGLE:
                    problems.append(f"nested quantifier at item {index}")
                    continue
                before = [item for item in sequence[:index] if item[0] in _SINGLE]
                if not (anchored or last or any(_disjoint(item, body[0], pattern.flags) for item in before)):
                    problems.append(f"unbounded repeat at item {index} may rescan its run")
            elif op is sre.SUBPATTERN:
                walk(list(value[-1]), last)
            elif op is sre.ATOMIC_GROUP:
                walk(list(value), last)
            elif op is sre.BRANCH:
                for branch in value[1]:
                    walk(list(branch), last)
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                walk(list(value[1]), True)

    walk(list(parsed.data), True)
    return problems


def test_no_pattern_of_the_extractor_rescans_a_run() -> None:
    patterns = {name: value for name, value in vars(extract).items() if isinstance(value, re.Pattern)}
    assert patterns  # the checker has something to check
    assert {name: rescanning_repeats(pattern) for name, pattern in patterns.items()
            if rescanning_repeats(pattern)} == {}


def test_the_checker_flags_the_shapes_that_rescan() -> None:
    assert rescanning_repeats(re.compile(r"[.!?]+\Z"))  # the old closing-punctuation strip
    assert rescanning_repeats(re.compile(r"(a+)+b"))
    assert rescanning_repeats(re.compile(r"x*y"))
    assert not rescanning_repeats(re.compile(r"\Ax*y"))
    assert not rescanning_repeats(re.compile(r"do\s+not"))
    assert not rescanning_repeats(re.compile(r"(?<=[.!?])\s+"))


def test_a_long_run_of_question_marks_inside_a_sentence_is_cut_as_the_rule_says() -> None:
    sentence = f"You must keep {'?' * 30_000}this{'!' * 30_000}as it is"
    text = f"{sentence}??? Thanks."
    assert list(sentences(text)) == [sentence, "Thanks"]
    assert constraints(text) == [sentence]


_OLD_END = re.compile(r"(?<=[.!?])\s+")
_OLD_MARKER = re.compile(r"\A(?:[-*•>]+|\d+[.)])\s+")
_OLD_CLOSING = re.compile(r"[.!?]+\Z")


def old_sentences(text: str) -> list[str]:
    """The cut as it was before (quadratic on long runs, right on ordinary text): the oracle."""
    found = []
    for line in text.split("\n"):
        for piece in _OLD_END.split(line):
            sentence = _OLD_CLOSING.sub("", _OLD_MARKER.sub("", piece.strip())).strip()
            if sentence:
                found.append(sentence)
    return found


ordinary = st.lists(st.sampled_from([
    "must", "never", "Do", "not", "only", "avoid", "don't", "the", "tests", "v1.2", "src/", "a",
    " ", "  ", "\n",
    ".", "!", "?", "...", "?!", "- ", "* ", "• ", "> ", "1. ", "2) ", "\t", "\u00a0", "\u2028",
]), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=ordinary)
def test_the_cut_is_the_same_as_before_on_ordinary_text(text: str) -> None:
    assert list(sentences(text)) == old_sentences(text)
