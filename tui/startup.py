"""The start of the TUI: the cyclic garbage collector waits until the first frame is on screen.

Importing Textual, the core and the widgets, then composing the screen, allocates several hundred
thousand objects that live as long as the app (modules, classes, styles). With the collector on,
its full passes walk all of them again and again before anything is drawn (about a sixth of the
time to the first frame on a small machine). `pause_collector` switches it off for the start;
`resume_collector`, called once the first frame is painted, moves everything allocated so far to
the permanent generation (`gc.freeze`: later passes skip it) and switches the collector back on.
Reference counting frees memory as usual meanwhile; only cycles wait.
"""

from __future__ import annotations

import gc

_paused = False


def pause_collector() -> None:
    """Switch the cyclic collector off until `resume_collector` (a no-op if it is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Freeze what the start allocated and switch the collector back on, if `pause_collector` paused it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def collector_paused() -> bool:
    """True between `pause_collector` and `resume_collector`."""
    return _paused
