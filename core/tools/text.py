"""Bytes and names made safe for the history: every tool result is a valid UTF-8 string.

File names that are not UTF-8 come from the OS as lone surrogates (surrogateescape); they are shown
as visible `\\xNN` escapes. File contents are sniffed: binary files are named, not dumped, and text
that is not UTF-8 is decoded with the encoding its byte order mark names, or an assumed one, said so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Magic numbers of common binary formats, checked at the start of a file.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"PK\x05\x06", "ZIP archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"\x28\xb5\x2f\xfd", "zstd archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O universal binary"),
    (b"\xcf\xfa\xed\xfe", "Mach-O binary"),
    (b"\x00asm", "WebAssembly module"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"OggS", "Ogg media"),
    (b"fLaC", "FLAC audio"),
    (b"ID3", "MP3 audio"),
    (b"\x1a\x45\xdf\xa3", "Matroska/WebM video"),
    (b"wOFF", "WOFF font"),
    (b"wOF2", "WOFF2 font"),
)
_SNIFF_BYTES = 8192

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    # UTF-32 before UTF-16: the UTF-32 LE mark starts with the UTF-16 LE one.
    (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"),
    (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"),
    (b"\xef\xbb\xbf", "utf-8", "UTF-8 with a byte order mark"),
    (b"\xff\xfe", "utf-16-le", "UTF-16"),
    (b"\xfe\xff", "utf-16-be", "UTF-16"),
)

_SURROGATE_OR_CONTROL = re.compile(r"[\ud800-\udfff\x00-\x08\x0a-\x1f\x7f]")


def binary_kind(data: bytes) -> str | None:
    """What binary format `data` (a file's first bytes, or all of it) is, "" for an unknown binary,
    or None when it looks like text. UTF-16/32 text with a byte order mark counts as text."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[8:12] == b"WEBP" and data.startswith(b"RIFF"):
        return "WebP image"
    if data[257:262] == b"ustar":
        return "tar archive"
    if any(data.startswith(bom) for bom, _, _ in _BOMS):
        return None
    if b"\x00" in data[:_SNIFF_BYTES]:
        return ""
    return None


def describe_binary(size: int, kind: str) -> str:
    """The one-line answer for a binary file: "binary file, N bytes (PNG image)"."""
    return f"binary file, {size:,} bytes" + (f" ({kind})" if kind else "")


@dataclass(frozen=True)
class Decoded:
    """A file's text (without its byte order mark), how to write it back byte-exact, and a note
    when it was not plain UTF-8 (None for UTF-8)."""

    text: str
    codec: str
    bom: bytes = b""
    note: str | None = None

    def encode(self, text: str) -> bytes:
        """`text` in this file's encoding, mark included; UnicodeEncodeError if it cannot be."""
        return self.bom + text.encode(self.codec)


def decode_text(data: bytes) -> Decoded:
    """Decode a text file: by its byte order mark, else as UTF-8, else as cp1252 or Latin-1 (said so).

    `Decoded.encode` of the decoded text gives back exactly `data`.
    """
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(codec)
            except UnicodeDecodeError:
                break
            note = None if codec == "utf-8" else f"decoded as {label} (byte order mark)"
            return Decoded(text, codec, bom, note)
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return Decoded(data.decode("latin-1"), "latin-1", note="not UTF-8: decoded as Latin-1 (assumed)")
    return Decoded(text, "cp1252", note="not UTF-8: decoded as cp1252, Windows Latin-1 (assumed)")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def display_name(name: str) -> tuple[str, bool]:
    """A file name as it may enter the history, and whether anything had to be escaped.

    Undecodable bytes become `\\xNN`, control characters (a newline in a name would split a listing)
    `\\xNN` too; everything else is kept.
    """
    shown, count = _SURROGATE_OR_CONTROL.subn(_escape, name)
    return shown, count > 0


_ESCAPED_BYTE = re.compile(r"\\x([0-9a-f]{2})")


def unescape_name(shown: str) -> str:
    """The name `display_name` showed as `shown` (its `\\xNN` escapes turned back into bytes)."""

    def back(match: re.Match[str]) -> str:
        code = int(match.group(1), 16)
        if code >= 0x80:
            return chr(0xDC00 + code)
        return chr(code) if code < 0x20 or code == 0x7F else match.group()

    return _ESCAPED_BYTE.sub(back, shown)


NAME_ESCAPE_NOTE = (
    "[names with bytes that are not UTF-8 or control characters are shown with \\xNN escapes; "
    "read_file and edit_file accept such names as shown, and bash reaches them as $'\\xNN']"
)
