"""Every fact's text, found in a message in one pass: Aho-Corasick automata (pyahocorasick).

A new message is searched for every fact the conversation ever held, so the cost of a search must
not grow with the number of facts: an automaton finds all of them in one pass over the text. Facts
arrive a few per turn, and an automaton cannot take new words once built, so they are kept in
levels (Bentley-Saxe): level i holds at most `BASE * 2**i` texts, new texts go to the lowest level
that can take them together with the levels below it, which are merged into it. Adding costs
O(log n) per text amortised, a search one pass per level.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ahocorasick

from core.facts.extract import FactKey

BASE = 16


class _Level:
    def __init__(self, words: dict[str, list[FactKey]]) -> None:
        self.words = words
        self.automaton: Any = ahocorasick.Automaton()
        for text, keys in words.items():
            self.automaton.add_word(text, tuple(keys))
        self.automaton.make_automaton()


class Patterns:
    """A growing set of texts (each standing for one or more facts) searched for together."""

    def __init__(self) -> None:
        self._levels: list[_Level | None] = []

    def add(self, items: Iterable[tuple[str, FactKey]]) -> None:
        """Add texts (a fact's JSON-escaped text and its key)."""
        carry: dict[str, list[FactKey]] = {}
        for text, key in items:
            carry.setdefault(text, []).append(key)
        if not carry:
            return
        level = 0
        while True:
            if level == len(self._levels):
                self._levels.append(None)
            current = self._levels[level]
            if current is not None:
                for text, keys in current.words.items():
                    carry.setdefault(text, []).extend(keys)
                self._levels[level] = None
            elif len(carry) <= BASE << level:
                self._levels[level] = _Level(carry)
                return
            level += 1

    def find(self, text: str) -> set[FactKey]:
        """The keys of every added text that occurs in `text`."""
        found: set[FactKey] = set()
        for level in self._levels:
            if level is not None:
                for _, keys in level.automaton.iter(text):
                    found.update(keys)
        return found
