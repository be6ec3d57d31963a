"""Keeping Textual's stream layout exact when a widget inside one of its blocks changes size.

The stream layout (the transcript's, and each reply's) measures again only the children that asked
for a layout, and those after them; the others keep the placement they had. Textual records who
asked per ancestor, but a block whose nested widget asked (the code inside a fence, an item inside a
list, a reply inside the transcript) is left out of its parent's record when it is itself recorded
as an ancestor first (textual 8.2's `Screen._on_layout` checks the whole record, not the parent's
entry). If a later block asked in the same frame, the layout then keeps the nested block's old height
and every block after it stands off by the difference, until something lays the column out again:
seen in a real terminal as a reply's last screenful a row too low.

`count_nested_requests(container)`, called from the container's `pre_layout`, adds each child with
a descendant that asked to the container's record, so it is measured again. The record is Textual's
own (tui/textual_private.py `pending_layouts`).
"""

from __future__ import annotations

from textual.widget import Widget

from tui.textual_private import pending_layouts


def count_nested_requests(container: Widget) -> None:
    """Add to `container`'s layout record every child of it that has a descendant waiting for a layout."""
    pending = pending_layouts(container.screen)
    asked = pending.get(container)
    if not asked:
        return  # nothing asked: the stream layout measures every child anyway
    for widget in list(pending):  # every ancestor of a widget that asked is recorded
        child, node = widget, widget.parent  # the container itself and its ancestors walk to the root
        while node is not None and node is not container:
            child, node = node, node.parent
        if node is container and isinstance(child, Widget):
            asked.add(child)
