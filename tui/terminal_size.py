"""The terminal's size measured where Textual paints: stderr.

Textual writes the screen to stderr, but its Linux driver asks `shutil.get_terminal_size()`, which
measures stdout and answers 80x24 when stdout is a file or a pipe. `ctxtui proxy` keeps stdout for
its `listening on ...` line (a script may read it) while the view paints on the terminal, so the
view's driver measures stderr first. Replacing the driver's size probe is a Textual internal:
tui/textual_private.py `measured_first`.
"""

from __future__ import annotations

import os
import sys

from textual.driver import Driver

from tui.textual_private import measured_first


def stderr_size() -> tuple[int, int] | None:
    """The terminal's columns and lines as stderr sees them (None when stderr is no terminal)."""
    stream = sys.__stderr__
    try:
        if stream is not None:
            size = os.get_terminal_size(stream.fileno())
            if size.columns and size.lines:
                return size.columns, size.lines
    except (OSError, ValueError):
        pass
    return None


def stderr_sized(driver: type[Driver]) -> type[Driver]:
    """`driver` measuring the terminal on stderr (unchanged if it has no size probe to replace)."""
    return measured_first(driver, stderr_size)
