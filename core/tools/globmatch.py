"""Glob matching without regexes: one segment at a time, in time linear in pattern times name.

A segment (`*`, `?`, `[abc]`, `[!a-z]`, literals) is matched by the two-pointer wildcard algorithm,
which remembers only the last `*` and so can never backtrack exponentially. `**` is not a segment
matcher at all: the pattern is a small automaton over path components that the directory walk steps
through, entry by entry, so a directory is only entered while some state can still match below it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class _Class:
    """`[...]`: ranges of characters, possibly negated."""

    ranges: tuple[tuple[str, str], ...]
    negate: bool

    def matches(self, char: str) -> bool:
        inside = any(low <= char <= high for low, high in self.ranges)
        return inside != self.negate


@dataclass(frozen=True)
class _Sentinel:
    """`*` or `?` in a compiled segment (a literal character is a plain str)."""

    kind: str


STAR = _Sentinel("*")
ANY = _Sentinel("?")
Tokens = tuple[str | _Class | _Sentinel, ...]


def _parse_class(segment: str, start: int) -> tuple[_Class, int] | None:
    """The class opened by the "[" at `start` and the index after its "]", or None if unclosed."""
    i = start + 1
    negate = i < len(segment) and segment[i] in "!^"
    if negate:
        i += 1
    body_start = i
    if i < len(segment) and segment[i] == "]":
        i += 1  # a "]" right after the opening is a literal member
    while i < len(segment) and segment[i] != "]":
        i += 1
    if i >= len(segment):
        return None
    body = segment[body_start:i]
    ranges: list[tuple[str, str]] = []
    j = 0
    while j < len(body):
        if j + 2 < len(body) and body[j + 1] == "-":
            ranges.append((body[j], body[j + 2]))
            j += 3
        else:
            ranges.append((body[j], body[j]))
            j += 1
    return _Class(tuple(ranges), negate), i + 1


def compile_segment(segment: str) -> Tokens:
    """The tokens of one glob segment; consecutive `*` collapse into one."""
    tokens: list[str | _Class | _Sentinel] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            if not tokens or tokens[-1] is not STAR:
                tokens.append(STAR)
            i += 1
        elif char == "?":
            tokens.append(ANY)
            i += 1
        elif char == "[" and (parsed := _parse_class(segment, i)) is not None:
            tokens.append(parsed[0])
            i = parsed[1]
        else:
            tokens.append(char)
            i += 1
    return tuple(tokens)


def _one(token: str | _Class | _Sentinel, char: str) -> bool:
    if token is ANY:
        return True
    if isinstance(token, _Class):
        return token.matches(char)
    return token == char


def match_segment(tokens: Tokens, name: str) -> bool:
    """Whether `name` matches the compiled segment, in O(len(tokens) * len(name)) steps."""
    t = n = 0
    star_t = -1  # the token index after the last `*` seen, and where in `name` it started
    star_n = 0
    while n < len(name):
        if t < len(tokens) and tokens[t] is STAR:
            star_t, star_n = t + 1, n
            t += 1
        elif t < len(tokens) and _one(tokens[t], name[n]):
            t += 1
            n += 1
        elif star_t >= 0:  # let the last `*` take one more character and retry after it
            star_n += 1
            t, n = star_t, star_n
        else:
            return False
    while t < len(tokens) and tokens[t] is STAR:
        t += 1
    return t == len(tokens)


def has_magic(segment: str) -> bool:
    return any(char in segment for char in "*?[")


class GlobPattern:
    """A pattern of segments as an automaton over path components.

    A state is the index of the next segment to match. `**` matches zero or more components, except
    a trailing `**`, which matches one or more (so `src/**` lists what is below src, not src itself).
    """

    def __init__(self, segments: list[str]) -> None:
        self._parts: list[Tokens | None] = [
            None if segment == "**" else compile_segment(segment) for segment in segments
        ]
        self._literal = [segment if not has_magic(segment) else None for segment in segments]
        self._end = len(segments)

    def _closure(self, states: set[int]) -> frozenset[int]:
        todo = list(states)
        while todo:
            i = todo.pop()
            if i < self._end - 1 and self._parts[i] is None and i + 1 not in states:
                states.add(i + 1)
                todo.append(i + 1)
        return frozenset(states)

    def start(self) -> frozenset[int]:
        return self._closure({0})

    def step(self, states: frozenset[int], name: str) -> frozenset[int]:
        """The states after one more path component `name` (empty: nothing below can match)."""
        following: set[int] = set()
        for i in states:
            if i >= self._end:
                continue
            tokens = self._parts[i]
            if tokens is None:
                following.add(i)
                if i == self._end - 1:
                    following.add(self._end)
            elif (literal := self._literal[i]) is not None:
                if literal == name:
                    following.add(i + 1)
            elif match_segment(tokens, name):
                following.add(i + 1)
        return self._closure(following)

    def accepts(self, states: frozenset[int]) -> bool:
        return self._end in states

    def alive(self, states: frozenset[int]) -> bool:
        """Whether a directory in these states can hold further matches."""
        return any(i < self._end for i in states)
