"""KeysFooter: Textual's footer with the quit key first, so a narrow terminal never loses it.

Textual lays the footer's keys out in the order of the binding chain (the focused widget, then the
screen, then the app), so the app-wide `ctrl+q` comes last and is the first key cut off at 80
columns. Here it leads; the rest keep their order.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

QUIT_ACTIONS = ("quit", "app.quit")


class KeysFooter(Footer):
    """The footer, quit first."""

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        widgets.sort(key=lambda widget: not (isinstance(widget, FooterKey) and widget.action in QUIT_ACTIONS))
        yield from widgets
