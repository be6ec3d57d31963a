"""The bounded unified diff the consent dialog shows for write_file and edit_file."""

from __future__ import annotations

import difflib

from core.text import plural

MAX_DIFF_LINES = 400
MAX_DIFF_CHARS = 40_000
MAX_DIFF_LINE_CHARS = 2_000  # a longer line (minified code) is shown clipped, saying so
MAX_DIFFED_LINES = 20_000  # beyond this many lines on a side, difflib gets slow: summarise instead


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def bounded_diff(old: str | None, new: str, shown: str) -> str:
    """A unified diff from `old` (None: the file does not exist yet) to `new`, cut after
    MAX_DIFF_LINES lines or MAX_DIFF_CHARS chars with a line saying how much more there is."""
    old_lines = _lines(old or "")
    new_lines = _lines(new)
    if max(len(old_lines), len(new_lines)) > MAX_DIFFED_LINES:
        return (
            f"(too large to diff: {shown} goes from {len(old_lines):,} to {plural(len(new_lines), 'line')}, "
            f"{len(old or ''):,} to {len(new):,} chars)"
        )
    before = "/dev/null" if old is None else f"a/{shown}"
    diff = list(difflib.unified_diff(old_lines, new_lines, fromfile=before, tofile=f"b/{shown}"))
    if not diff:
        return f"(no change: {shown} already holds exactly this text)"
    kept: list[str] = []
    used = 0
    for line in diff:
        if len(line) > MAX_DIFF_LINE_CHARS:
            line = f"{line[:MAX_DIFF_LINE_CHARS]} [... line clipped: {len(line):,} chars in all]\n"
        if len(kept) >= MAX_DIFF_LINES or used + len(line) > MAX_DIFF_CHARS:
            break
        kept.append(line if line.endswith("\n") else line + "\n")
        used += len(line)
    text = "".join(kept)
    if len(kept) < len(diff):
        more = diff[len(kept) :]
        text += f"[... {plural(len(more), 'more diff line')} ({sum(map(len, more)):,} chars) not shown ...]\n"
    return text
