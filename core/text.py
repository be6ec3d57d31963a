"""Text helpers every layer shares: one-line flattening, and untrusted text made safe to show.

Text from a model, a tool, a file or a session log is data. Shown in a terminal it must never act
as terminal control (an escape sequence can set the title or the clipboard, or move the cursor so
that one command is shown while another runs), and never hide characters (bidirectional overrides
reorder what is seen). `visible` replaces every such character with a visible escape.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_WHITESPACE = re.compile(r"\s+")

# C0 controls except tab and newline, DEL, C1 controls, and the Unicode format characters that
# reorder or hide text (bidi embeddings, overrides and isolates, zero-width marks, BOM).
_CONTROL_CHARS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\ufff9-\ufffb\U000e0000-\U000e007f"
)
_CONTROLS = re.compile(f"[{_CONTROL_CHARS}]")
_ESCAPED = re.compile(f"[{_CONTROL_CHARS}\ud800-\udfff]")  # and lone surrogates, as `visible` shows them
_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\x00": "\\0", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with every control or hiding character shown as a visible escape (`\\x1b`, `\\r`, `\\u202e`).

    Newlines and tabs stay. Lone surrogates (undecodable bytes kept by surrogateescape) are shown
    as `\\udcXX` so the result always encodes as UTF-8.
    """
    shown = _CONTROLS.sub(_escape, text)
    if any("\ud800" <= char <= "\udfff" for char in shown):
        shown = "".join(f"\\u{ord(char):04x}" if "\ud800" <= char <= "\udfff" else char for char in shown)
    return shown


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def valid_utf8(text: str) -> str:
    """`text` as valid UTF-8: a surrogate pair split over two characters is joined into the one it
    stands for, and any other lone surrogate becomes a visible escape (`\\xNN` for a byte that was not
    UTF-8, kept by surrogateescape; `\\udXXX` otherwise). Text without surrogates is returned as it is."""
    if _LONE_SURROGATE.search(text) is None:
        return text
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE_SURROGATE.sub(_escape_surrogate, joined)


def visible_parts(text: str) -> Iterator[tuple[str, bool]]:
    """`visible(text)` in order, as pieces: (text as it was, False) and (an escape `visible` made, True).

    A view can style the escapes apart, so a real ESC byte (shown `\\x1b`) never looks like the four
    characters `\\x1b` typed as text. Joined, the pieces are exactly `visible(text)`.
    """
    start = 0
    for match in _ESCAPED.finditer(text):
        if match.start() > start:
            yield text[start : match.start()], False
        char = match.group()
        yield (f"\\u{ord(char):04x}" if "\ud800" <= char <= "\udfff" else _escape(match)), True
        start = match.end()
    if start < len(text):
        yield text[start:], False


def one_line(text: str, limit: int | None = None) -> str:
    """`text` on one line (whitespace collapsed); cut to `limit` characters with an ellipsis if given."""
    flat = _WHITESPACE.sub(" ", str(text)).strip()
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)].rstrip() + "…"


def plural(number: int, noun: str, plural_form: str | None = None) -> str:
    """'1 line', '2 lines', '1,204 messages' (`plural_form` for nouns that do not just add an s)."""
    word = noun if number == 1 else (plural_form or noun + "s")
    return f"{number:,} {word}"


def article(word: str) -> str:
    """The indefinite article for `word` by its first letter: 'a' (bash), 'an' (edit_file)."""
    return "an" if word[:1].lower() in ("a", "e", "i", "o", "u") else "a"


def error_line(error: BaseException, limit: int | None = None) -> str:
    """An exception as one line: its message, or its type name when the message is empty."""
    return one_line(str(error), limit) or type(error).__name__
