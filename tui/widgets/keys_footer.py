"""KeysFooter: Textual's footer with the quit key first, so a narrow terminal never loses it.

Textual lays the footer's keys out in the order of the binding chain (the focused widget, then the
screen, then the app), so the app-wide `ctrl+q` comes last and is the first key cut off at 80
columns. Here it leads; the rest keep their order. Given `groups` (the keys, most needed first, in
groups shown together or not at all), the footer shows only whole keys: where not all fit beside the
palette key, the least needed give way (Textual's footer would cut the last one in the middle).

Textual's footer recomposes every key whenever the screen's bindings are refreshed (each focus
change, each turn's start and end); mounting a dozen keys costs the event loop tens of
milliseconds, felt as a stutter while typing. This one leaves the keys alone when what they show is
unchanged, and otherwise replaces only the keys that changed (the new ones mounted together). Its
keys are in the app's first frame.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import MountError, Widget
from textual.widgets import Footer

from tui.textual_private import FooterKey, footer_bindings_ready, set_footer_key_disabled

QUIT_ACTIONS = ("quit", "app.quit")

Shown = tuple[object, ...]


def shown(widget: Widget, *, state: bool = True) -> Shown:
    """What a footer widget shows: equal for two widgets that would look and act the same (with
    `state=False`, whether it is greyed out aside: a key that only changes that is kept and updated)."""
    if isinstance(widget, FooterKey):
        ignored = {"-compact"} if state else {"-compact", "-disabled"}  # -compact: bound to the footer
        return (
            type(widget),
            widget.key,
            widget.key_display,
            widget.description,
            widget.action,
            str(widget.tooltip or ""),
            tuple(sorted(widget.classes - ignored)),
        )
    return (type(widget), id(widget))  # anything else (a group, a label) is never taken as unchanged


def set_enabled(key: FooterKey, like: FooterKey) -> None:
    """Grey `key` out, or not, as `like` is (the footer's own key state: its class and click)."""
    set_footer_key_disabled(key, like.has_class("-disabled"))


def key_width(key: FooterKey) -> int:
    """The cells a compact footer key takes: `^q Quit` and its margin (the palette key: its border)."""
    width = cell_len(key.key_display) + (1 + cell_len(key.description) if key.description else 0)
    return width + 1  # the margin after a key, or the border before the palette key (docked right)


def fitting(widgets: list[Widget], width: int, groups: Sequence[Sequence[str]]) -> list[Widget]:
    """`widgets` less the least needed keys (the last of `groups`; keys in no group first) until the rest
    fit in `width` cells; the quit and palette keys always stay. Anything but keys: all of them."""
    keys = [widget for widget in widgets if isinstance(widget, FooterKey)]
    if len(keys) != len(widgets):
        return widgets
    rank = {key: index for index, group in enumerate(groups) for key in group}
    kept = list(keys)
    total = sum(key_width(key) for key in kept)
    removable = sorted(
        {
            rank.get(key.key, len(groups))
            for key in kept
            if key.action not in QUIT_ACTIONS and not key.has_class("-command-palette")
        },
        reverse=True,
    )
    for level in removable:
        if total <= width:
            break
        going = [
            key
            for key in kept
            if rank.get(key.key, len(groups)) == level
            and key.action not in QUIT_ACTIONS
            and not key.has_class("-command-palette")
        ]
        total -= sum(key_width(key) for key in going)
        kept = [key for key in kept if key not in going]
    return list(kept)


class KeysFooter(Footer):
    """The footer, quit first, only whole keys."""

    def __init__(self, *args: Any, groups: Sequence[Sequence[str]] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groups = tuple(tuple(group) for group in groups)
        """The keys by need, most needed first (tui/actions.py `footer_groups`); empty: every key."""
        self._updating = asyncio.Lock()
        self._updated_once = False

    def compose(self) -> ComposeResult:
        # The screen's and the app's keys are known before anything has focus: they are in the first
        # frame (Textual's footer shows nothing until the first bindings refresh, a moment later).
        footer_bindings_ready(self, quietly=True)
        widgets = list(super().compose())
        for (
            widget
        ) in widgets:  # the class its compact binding would set once mounted: no restyle pass of its own
            if isinstance(widget, FooterKey):
                widget.set_class(self.compact, "-compact", update=False)
        widgets.sort(key=lambda widget: not (isinstance(widget, FooterKey) and widget.action in QUIT_ACTIONS))
        if self.groups and self.compact:
            width = self.size.width or self.app.size.width  # docked at the bottom: the screen's width
            widgets = fitting(widgets, width, self.groups)
        yield from widgets

    def on_resize(self, event: events.Resize) -> None:
        """Another width fits other keys."""
        if self.groups and self.is_attached:
            self.call_next(self._update_keys)

    def bindings_changed(self, screen: Screen[object]) -> None:
        footer_bindings_ready(self)
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            # once the keys have been brought up to date once: next, not after the next refresh (as
            # Textual's footer does), so they change in the same frame as what changed them (a turn's
            # start greys keys and adds esc) instead of a second frame that lays the whole screen out
            # again; the first time after the first frame, which already shows the keys (compose)
            if self._updated_once:
                self.call_next(self._update_keys)
            else:
                self.call_after_refresh(self._update_keys)

    async def _update_keys(self) -> None:
        """Bring the keys up to date, keeping each one that shows the same as before (one update at
        a time: each starts from the keys the one before left)."""
        async with self._updating:
            self._updated_once = True
            if not self.is_attached or self.app.return_code is not None:
                return
            try:
                await self._update_keys_now()
            except MountError:  # the footer is leaving (the app quits): Textual's own recompose knows
                await self.recompose()

    async def _update_keys_now(self) -> None:
        wanted = list(self.compose())
        current = list(self.children)
        if [shown(widget) for widget in wanted] == [shown(widget) for widget in current]:
            return
        keep = {shown(widget, state=False): widget for widget in current}
        if len(keep) != len(current) or any(not isinstance(widget, FooterKey) for widget in wanted):
            await self.recompose()
            return
        olds = [
            keep.get(shown(widget, state=False)) for widget in wanted
        ]  # each wanted key's kept twin, or None
        kept = [old for old in olds if old is not None]
        if kept != [widget for widget in current if widget in kept]:  # the order changed: start again
            await self.recompose()
            return
        with self.app.batch_update():
            await self.remove_children([widget for widget in current if widget not in kept])
            # the new keys in runs, each mounted at once after the kept key before it (the first
            # footer: all of them in one mount, not one mount and one refresh per key); a kept key
            # whose only change is being greyed out (a turn starts or ends) is updated in place
            anchor: Widget | None = None
            run: list[Widget] = []
            for widget, old in [*zip(wanted, olds, strict=True), (None, None)]:
                if widget is not None and old is None:
                    run.append(widget)
                    continue
                if run:
                    await self._mount_run(run, anchor)
                    run = []
                if isinstance(old, FooterKey) and isinstance(widget, FooterKey):
                    set_enabled(old, widget)
                anchor = old

    async def _mount_run(self, run: list[Widget], anchor: Widget | None) -> None:
        """Mount `run` after `anchor` (None: at the start)."""
        if anchor is not None:
            await self.mount(*run, after=anchor)
        elif self.children:
            await self.mount(*run, before=0)
        else:
            await self.mount(*run)
