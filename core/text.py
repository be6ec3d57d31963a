"""Text helpers every layer shares: one-line flattening, and untrusted text made safe to show.

Text from a model, a tool, a file or a session log is data. Shown in a terminal it must never act
as terminal control (an escape sequence can set the title or the clipboard, or move the cursor so
that one command is shown while another runs), and never hide characters (bidirectional overrides
reorder what is seen). `visible` replaces every such character with a visible escape.
"""

from __future__ import annotations

import re

_WHITESPACE = re.compile(r"\s+")

# C0 controls except tab and newline, DEL, C1 controls, and the Unicode format characters that
# reorder or hide text (bidi embeddings, overrides and isolates, zero-width marks, BOM).
_CONTROLS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\ufff9-\ufffb\U000e0000-\U000e007f]"
)
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


def one_line(text: str, limit: int | None = None) -> str:
    """`text` on one line (whitespace collapsed); cut to `limit` characters with an ellipsis if given."""
    flat = _WHITESPACE.sub(" ", str(text)).strip()
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)].rstrip() + "…"


def error_line(error: BaseException, limit: int | None = None) -> str:
    """An exception as one line: its message, or its type name when the message is empty."""
    return one_line(str(error), limit) or type(error).__name__
