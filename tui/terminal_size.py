"""The terminal's size measured where Textual paints: stderr.

Textual writes the screen to stderr, but its Linux driver asks `shutil.get_terminal_size()`, which
measures stdout and answers 80x24 when stdout is a file or a pipe. `ctxtui proxy` keeps stdout for
its `listening on ...` line (a script may read it) while the view paints on the terminal, so the
view's driver measures stderr first. `_get_terminal_size` is a Textual internal; pyproject.toml
pins the Textual range it was tested with.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from textual.driver import Driver


def stderr_sized(driver: type[Driver]) -> type[Driver]:
    """`driver` measuring the terminal on stderr (unchanged if it has no size probe to replace)."""
    found = getattr(driver, "_get_terminal_size", None)
    if found is None:
        return driver
    measure: Callable[[Driver], tuple[int, int]] = found

    class StderrSized(driver):  # type: ignore[valid-type, misc]
        def _get_terminal_size(self) -> tuple[int, int]:
            stream = sys.__stderr__
            try:
                if stream is not None:
                    size = os.get_terminal_size(stream.fileno())
                    if size.columns and size.lines:
                        return size.columns, size.lines
            except (OSError, ValueError):
                pass
            return measure(self)

    StderrSized.__name__ = f"StderrSized{driver.__name__}"
    return StderrSized
