"""KeysFooter: the screen's keys on one line, quit first, only whole keys; one widget.

It shows what Textual's compact footer shows (the screen's active bindings that have `show`, one key
per action, greyed out when disabled, the palette key at the right edge behind a thin rule), with
two differences:

- **Quit leads.** Textual lays keys out in the order of the binding chain (the focused widget, then
  the screen, then the app), so the app-wide `ctrl+q` comes last and is the first key cut off at 80
  columns. Here it comes first; the rest keep their order.
- **Only whole keys.** Given `groups` (the keys, most needed first, in groups shown together or not at
  all: tui/actions.py `footer_groups`), where not all fit beside the palette key the least needed
  give way whole (Textual's footer would cut the last one in the middle).

Textual's footer is a container of one widget per key, composed again at every bindings refresh
(each focus change, each turn's start and end): a dozen widgets to mount, style and lay out, felt
as a stutter while typing and a sixth of the styling before the first frame. This one is a single
line drawn from a list of `FooterEntry`: a refresh that changes nothing draws nothing, one that
does draws one line. A click on a key presses it (a greyed-out key rings the bell), the key under
the pointer is highlighted and its help is the tooltip, as on Textual's footer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget

QUIT_ACTIONS = ("quit", "app.quit")
RULE = "▏"
"""Before the palette key: Textual's footer draws it as the key's left border (`vkey`)."""


class FooterEntry(NamedTuple):
    """One key the footer shows."""

    key: str
    """The binding's key (`ctrl+q`): what a click presses."""
    display: str
    """How the key is shown (`^q`)."""
    description: str
    action: str
    enabled: bool
    tooltip: str
    palette: bool = False
    """The command palette's key, at the right edge."""

    @property
    def width(self) -> int:
        """The cells it takes: `^q Quit` (no margin)."""
        return cell_len(self.display) + (1 + cell_len(self.description) if self.description else 0)


def fitting(entries: Sequence[FooterEntry], width: int, groups: Sequence[Sequence[str]]) -> list[FooterEntry]:
    """`entries` less the least needed (the last of `groups`; keys in no group first) until the rest
    fit in `width` cells, a cell after each key; the quit and palette keys always stay."""
    rank = {key: index for index, group in enumerate(groups) for key in group}

    def removable(entry: FooterEntry) -> bool:
        return entry.action not in QUIT_ACTIONS and not entry.palette

    kept = list(entries)
    total = sum(entry.width + 1 for entry in kept)
    levels = sorted({rank.get(entry.key, len(groups)) for entry in kept if removable(entry)}, reverse=True)
    for level in levels:
        if total <= width:
            break
        going = [e for e in kept if removable(e) and rank.get(e.key, len(groups)) == level]
        total -= sum(entry.width + 1 for entry in going)
        kept = [entry for entry in kept if entry not in going]
    return kept


class KeysFooter(Widget, can_focus=False):
    """The footer, quit first, only whole keys."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "keys-footer--item",
        "keys-footer--key",
        "keys-footer--description",
        "keys-footer--hover",
        "keys-footer--rule",
    }
    # The look of Textual's compact footer, from the same theme variables.
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        & > .keys-footer--item { background: $footer-item-background; }
        & > .keys-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .keys-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .keys-footer--hover { color: $footer-key-foreground; background: $block-hover-background; }
        & > .keys-footer--rule { color: $foreground 20%; }
    }
    """

    def __init__(self, *, groups: Sequence[Sequence[str]] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.groups = tuple(tuple(group) for group in groups)
        """The keys by need, most needed first (tui/actions.py `footer_groups`); empty: every key."""
        self._entries: tuple[FooterEntry, ...] = ()
        self._spans: tuple[tuple[int, int, FooterEntry], ...] = ()
        """Each shown key's cells on the line: (start, end, entry)."""
        self._hover: FooterEntry | None = None

    # --- what it shows ---------------------------------------------------------------------------

    @property
    def keys(self) -> tuple[FooterEntry, ...]:
        """The keys shown now, left to right (the palette key last)."""
        return tuple(entry for _, _, entry in self._spans)

    def region_of(self, entry: FooterEntry) -> Region:
        """Where `entry` is on the screen (an empty region when it is not shown)."""
        for start, end, shown in self._spans:
            if shown == entry:
                return Region(self.region.x + start, self.region.y, end - start, 1)
        return Region()

    def entry_at(self, x: int) -> FooterEntry | None:
        """The key at column `x` of the footer, or None (a gap)."""
        return next((entry for start, end, entry in self._spans if start <= x < end), None)

    def entries(self) -> tuple[FooterEntry, ...]:
        """The screen's shown bindings now, one per action, quit first, the palette key last."""
        screen = self.screen
        active = screen.active_bindings
        by_action: dict[str, FooterEntry] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in by_action:
                by_action[binding.action] = FooterEntry(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    enabled,
                    tooltip or binding.tooltip,
                )
        shown = sorted(by_action.values(), key=lambda entry: entry.action not in QUIT_ACTIONS)
        if self.app.ENABLE_COMMAND_PALETTE and (palette := active.get(self.app.COMMAND_PALETTE_BINDING)):
            _node, binding, enabled, _tooltip = palette
            shown.append(
                FooterEntry(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    enabled,
                    binding.tooltip or binding.description,
                    palette=True,
                )
            )
        return tuple(shown)

    def _update(self) -> None:
        entries = self.entries()
        if entries != self._entries:
            self._entries = entries
            self.refresh()

    # --- Textual's hooks -------------------------------------------------------------------------

    def on_mount(self) -> None:
        # The screen's and the app's keys are known before anything has focus: they are in the first
        # frame (Textual's footer shows nothing until the first bindings refresh, a moment later).
        self._entries = self.entries()
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            self._update()  # drawn in the same frame as what changed them (a turn's start greys keys)

    def render(self) -> Text:
        width = self.size.width
        entries = list(self._entries)
        others = [entry for entry in entries if not entry.palette]
        palette = next((entry for entry in entries if entry.palette), None)
        room = width - (palette.width + 1 if palette is not None else 0)  # the rule before it
        if self.groups:
            others = fitting(others, room, self.groups)
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, FooterEntry]] = []
        for entry in others:
            if line.cell_len + entry.width > room:
                break  # without groups, as Textual's footer does (it scrolls): the rest is off the edge
            start = line.cell_len
            line.append_text(self._key_text(entry))
            spans.append((start, line.cell_len, entry))
            line.append(" ")  # the margin after a key: the footer's own background
        if palette is not None and width > 0:
            gap = max(0, width - palette.width - 1 - line.cell_len)
            line.append(" " * gap)
            line.append(RULE, self.get_component_rich_style("keys-footer--rule"))
            start = line.cell_len
            line.append_text(self._key_text(palette))
            spans.append((start, line.cell_len, palette))
        self._spans = tuple(spans)
        return line

    def _key_text(self, entry: FooterEntry) -> Text:
        """`^q Quit` in the key's styles: the key, then its description, on the item's background."""
        item = self.get_component_rich_style("keys-footer--item")
        if entry == self._hover:
            item += self.get_component_rich_style("keys-footer--hover")
        if not entry.enabled:
            item += Style(dim=True)
        text = Text.assemble((entry.display, self.get_component_rich_style("keys-footer--key", partial=True)))
        if entry.description:
            description = self.get_component_rich_style("keys-footer--description", partial=True)
            text.append(f" {entry.description}", description)
        text.stylize_before(item)
        return text

    def _set_hover(self, entry: FooterEntry | None) -> None:
        if entry != self._hover:
            self._hover = entry
            self.tooltip = entry.tooltip if entry is not None and entry.tooltip else None
            self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self.entry_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        entry = self.entry_at(event.x)
        if entry is None:
            return
        if entry.enabled:
            self.app.simulate_key(entry.key)
        else:
            self.app.bell()
