"""The start of the TUI: the cyclic garbage collector waits until the first frame is on screen.

Importing Textual, the core and the widgets, then composing the screen, allocates several hundred
thousand objects that live as long as the app (modules, classes, styles). With the collector on,
its full passes walk all of them again and again before anything is drawn (about a sixth of the
time to the first frame on a small machine). `pause_collector` switches it off for the start;
`resume_collector`, called once the first frame is painted, moves everything allocated so far to
the permanent generation (`gc.freeze`: later passes skip it) and switches the collector back on.
Reference counting frees memory as usual meanwhile; only cycles wait.

From then on the youngest generation is collected every `YOUNG_THRESHOLD` net allocations instead of
Python's 700. While a reply streams, Textual allocates many short-lived objects per frame (strips,
segments, messages); collected every 700, the ones still alive at that moment are promoted, the
old generation grows, and a full pass (30-90 ms here) came every half second or so, each one a key
that waits. With the larger threshold most of them are gone before they are looked at, and the full
passes come less often (`bench/bench_tui.py --collector` measures it). The older generations keep
Python's thresholds.
"""

from __future__ import annotations

import gc

_paused = False

YOUNG_THRESHOLD = 5_000


def pause_collector() -> None:
    """Switch the cyclic collector off until `resume_collector` (a no-op if it is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Freeze what the start allocated, collect the youngest generation every `YOUNG_THRESHOLD`
    allocations and switch the collector back on, if `pause_collector` paused it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        young, middle, old = gc.get_threshold()
        gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
        gc.enable()


def collector_paused() -> bool:
    """True between `pause_collector` and `resume_collector`."""
    return _paused
