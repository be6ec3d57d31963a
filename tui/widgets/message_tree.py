"""MessageTree: one node per message of the history, children per block, markers styled by kind.

The tree holds one node per message (each node's data holds its message; the UI's history itself is
the inspector's `HistoryModel`, tui/history_model.py). It never reads the agent: it applies the
splices each `HistoryChanged` carries (`push`), in order, in one worker that touches only the nodes
they change: a replaced message is relabelled in place, removed ones are dropped in one cut, new
ones are added in chunks with `asyncio.sleep(0)` between them. Block children are added when a
message is expanded.

The labels come from `NodeLabels` (tui/widgets/node_labels.py): a marker is styled (and can be
opened) only if the archive resolves its path; anything else is shown as the plain text it is.

Speed on long histories comes from `AppendableTree` (tui/textual_private.py), a hook on Tree's
internals: appended messages extend the line cache instead of rebuilding it, removed ones go in one
cut, and relabelling many nodes (their numbers move) schedules one refresh, not one per node. With
the public Tree API instead, an append at 5,000 messages took 22 ms (under 1 ms here) and a cut at
20,000 about twice as long (bench/bench_tree.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.binding import BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode
from textual.worker import Worker

from core.history import estimate_chars
from core.history.messages import (
    USER_PIN_PREFIX,
    tool_result_ids,
    tool_use_ids,
    user_pin_key,
)
from core.markers import parse_marker
from core.values.splice import Splice
from tui.actions import tree_bindings
from tui.format import count
from tui.textual_private import AppendableTree
from tui.widgets.node_labels import NodeInfo, NodeLabels, has_blocks

if TYPE_CHECKING:  # the archive's module loads with the agent, after the first frame
    from core.archive import Archive, ArchivedFile

CHUNK = 500


class MessageTree(AppendableTree[NodeInfo], Tree[NodeInfo]):
    """The inspector's view of the history."""

    DEFAULT_CSS = """
    MessageTree {
        height: 1fr;
        padding: 0 1;
        background: transparent;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "message-tree--user",
        "message-tree--assistant",
        "message-tree--muted",
        "message-tree--snip",
        "message-tree--placeholder",
        "message-tree--persisted",
        "message-tree--summary",
        "message-tree--link",
        "message-tree--error",
        "message-tree--tool",
        "message-tree--pinned",
        "message-tree--shortened",
    }

    BINDINGS: ClassVar[list[BindingType]] = list(tree_bindings())
    """The steering keys (tui/actions.py): function keys only, so typing here goes to the prompt."""

    @dataclass
    class OpenMarker(Message):
        """Enter/click on a trusted marker: open what it points at."""

        info: NodeInfo

    @dataclass
    class OpenBlock(Message):
        """Enter/click on an ordinary leaf: show its in-context text."""

        info: NodeInfo

    @dataclass
    class Untrusted(Message):
        """Enter/click on a marker whose path the archive does not vouch for: nothing opens."""

        info: NodeInfo

    def __init__(
        self,
        archive: Archive | None,
        messages: Sequence[dict[str, Any]] = (),
        *,
        chars: int | None = None,
        id: str | None = None,
    ) -> None:
        self._widths: dict[int, tuple[object, int]] = {}
        # a Text label: a str one goes through Rich's markup, whose emoji table (~5 ms) loads then
        super().__init__(Text("history"), id=id)
        self.show_root = False
        self.guide_depth = 3
        self.archive = archive
        self.nodes: list[TreeNode[NodeInfo]] = []
        """One node per message, in order (each node's data holds its message: no list of messages here)."""
        self.chars = estimate_chars(messages) if chars is None else chars
        """`estimate_chars` of the history the tree shows (from the last HistoryChanged)."""
        self._queue: list[Splice] = [Splice(0, 0, tuple(messages))] if messages else []
        self._worker: Worker[None] | None = None
        self._resolved: dict[str, ArchivedFile | None] = {}
        self._styles: dict[str, Style] = {}
        self.labels = NodeLabels(self._style, self.resolve)

    # --- following the history -----------------------------------------------------------------

    def on_mount(self) -> None:
        self._set_title()
        if self._queue:
            self._start()

    def push(self, changes: Sequence[Splice], chars: int) -> None:
        """Apply a HistoryChanged's splices soon, after every splice pushed before them."""
        self._queue.extend(changes)
        self.chars = chars
        if self.is_mounted:
            self._start()

    def _start(self) -> None:
        if self._worker is None or self._worker.is_finished:
            self._worker = self.run_worker(
                self._drain, group="tree-sync", exit_on_error=False, description="apply the history's changes"
            )

    @property
    def syncing(self) -> bool:
        return bool(self._queue) or (self._worker is not None and not self._worker.is_finished)

    async def _drain(self) -> None:
        while self._queue:
            changes, self._queue = self._queue, []
            await self.apply(changes)

    async def apply(self, changes: Sequence[Splice]) -> None:
        """Apply the history's splices, in order, touching only the nodes they change.

        A splice with `removed == -1` replaces everything.
        """
        for change in changes:
            removed = len(self.nodes) if change.removed < 0 else change.removed
            await self._splice(change.start, removed, change.added)
        self._finish()

    async def _splice(self, start: int, removed: int, added: Sequence[dict[str, Any]]) -> None:
        nodes = self.nodes
        kept = min(removed, len(added))
        for offset in range(kept):  # same place, new message: relabel the node in place
            index = start + offset
            nodes[index] = self._update_node(nodes[index], index, added[offset])
        if removed > kept:
            self._drop(start + kept, start + removed)
        for offset in range(kept, len(added)):
            index = start + offset
            nodes.insert(index, self._add_message(index, added[offset]))
            if (offset - kept + 1) % CHUNK == 0:
                await asyncio.sleep(0)
        if removed != len(added):
            self._renumber(start + len(added))

    def _drop(self, start: int, stop: int) -> None:
        """Remove the nodes of messages `start:stop` in one cut (the root's children line up with
        `nodes`; TreeNode.remove, once per node, makes removing many quadratic)."""
        for node in self.cut_root_children(start, stop):
            self._widths.pop(node.id, None)
        del self.nodes[start:stop]

    def _renumber(self, start: int) -> None:
        """Messages from `start` on moved: give them their new numbers (labels and indices)."""
        for index in range(start, len(self.nodes)):
            node = self.nodes[index]
            info = node.data
            if info is None or info.index == index:
                continue
            info.index = index
            for child in node.children:
                if child.data is not None:
                    child.data.index = index
            self._set_label(node, self._numbered(info))
        self.refresh()

    def _finish(self) -> None:
        self.refresh()
        self._set_title()
        if not self.has_focus and self.nodes:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)

    def _set_title(self) -> None:
        self.border_title = f"Messages · {count(len(self.nodes))} · {count(self.chars)} chars"

    def node_for(self, index: int) -> TreeNode[NodeInfo]:
        return self.nodes[index]

    def select_entry(self, index: int, block: int | None = None) -> None:
        """Focus the tree with its cursor on message `index` (on its block `block`, expanded)."""
        if not 0 <= index < len(self.nodes):
            return
        node = self.node_for(index)
        if block is not None and node.allow_expand:
            self.populate(node)
            node.expand()
            if 0 <= block < len(node.children):
                node = node.children[block]
        self.focus()

        def move() -> None:
            self.last_line  # noqa: B018 - builds the lines if out of date, which gives each node its line
            self.move_cursor(node)
            self.scroll_to_node(node, animate=False)

        self.call_after_refresh(move)

    # --- building nodes -------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        """A component style as foreground attributes only (the cursor line keeps its background)."""
        if name == "link":
            return Style(underline=True)
        cached = self._styles.get(name)
        if cached is None:
            full = self.get_component_rich_style(f"message-tree--{name}", partial=False)
            cached = Style(color=full.color, bold=full.bold, italic=full.italic)
            self._styles[name] = cached
        return cached

    def notify_style_update(self) -> None:
        self._styles = {}
        super().notify_style_update()

    def use_archive(self, archive: Archive) -> None:
        """Resolve markers through `archive` from now on (the agent's, once built)."""
        self.archive = archive
        self._resolved.clear()

    def resolve(self, path: str) -> ArchivedFile | None:
        if self.archive is None:
            return None  # before the agent (and its archive) exists: nothing is vouched for
        if path not in self._resolved:
            self._resolved[path] = self.archive.resolve(path)
        return self._resolved[path]

    def _add_message(self, index: int, message: dict[str, Any]) -> TreeNode[NodeInfo]:
        info = self.labels.message(index, message)
        label = self._numbered(info)
        return self.add_at(index, label, info, allow_expand=not info.leaf and has_blocks(message))

    def _update_node(
        self, node: TreeNode[NodeInfo], index: int, message: dict[str, Any]
    ) -> TreeNode[NodeInfo]:
        """Show `message` in an existing node: new label and data, block children built again."""
        info = self.labels.message(index, message)
        expanded = node.is_expanded
        if node.children:
            node.remove_children()
        node.data = info
        node.allow_expand = not info.leaf and has_blocks(message)
        self._set_label(node, self._numbered(info))
        if expanded and node.allow_expand:
            self.populate(node)
        return node

    def _set_label(self, node: TreeNode[NodeInfo], label: Text) -> None:
        self.set_label_quietly(node, label)  # the caller refreshes once (TreeNode.set_label: once per node)

    def _numbered(self, info: NodeInfo) -> Text:
        """The node's label: its number (which moves when earlier messages go) and its body."""
        number = Text(f"#{info.index + 1} ", style=self._style("muted"))
        body = info.body if info.body is not None else Text("")
        label = Text.assemble(number, body)
        return Text("  ").append_text(label) if info.leaf else label  # leaves line up with ▶

    def populate(self, node: TreeNode[NodeInfo]) -> None:
        """Add the block children of a message node (once)."""
        info = node.data
        if info is None or info.populated or info.block is not None:
            return
        info.populated = True
        content = info.message.get("content")
        if not isinstance(content, list):
            return
        for block_index, block in enumerate(content):
            if isinstance(block, dict):
                node.add_leaf(*self.labels.block(info, block_index, block))

    def get_label_width(self, node: TreeNode[NodeInfo]) -> int:
        """Cheap width, measured once per label (the default renders every label on every rebuild)."""
        label = node.label
        cached = self._widths.get(node.id)
        if cached is not None and cached[0] is label:
            width = cached[1]
        else:
            width = label.cell_len if isinstance(label, Text) else len(str(label))
            self._widths[node.id] = (label, width)
        return width + (len(self.ICON_NODE) if node.allow_expand else 0)

    # --- interaction ----------------------------------------------------------------------------

    def on_focus(self) -> None:
        if self.cursor_line < 0 and self.nodes:
            self.move_cursor(self.nodes[-1])

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[NodeInfo]) -> None:
        self.populate(event.node)

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[NodeInfo]) -> None:
        info = event.node.data
        if info is None or event.node.allow_expand:
            return
        event.stop()
        if info.is_marker and info.trusted:
            self.post_message(self.OpenMarker(info))
        elif info.marker is not None:
            self.post_message(self.Untrusted(info))
        else:
            self.post_message(self.OpenBlock(info))

    # --- steering: the keys, the marks and the selected item ---------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A steering key (`steer`) is offered only on a screen that has its action, as that screen
        allows it now (the main screen: idle, agent built); elsewhere it is hidden."""
        if action != "steer":
            return True
        name = str(parameters[0]) if parameters else ""
        screen = self.screen
        if not name or not hasattr(screen, f"action_{name}"):
            return False
        return screen.check_action(name, ())

    async def action_steer(self, name: str) -> None:
        """Run the screen's steering action `name` on the selection."""
        await self.screen.run_action(name)

    def set_marks(self, pinned: frozenset[str], shortened: frozenset[str]) -> None:
        """Mark pinned results and those the next call would shorten; relabels only the nodes concerned."""
        changed = self.labels.set_marks(pinned, shortened)
        if not changed:
            return
        users = any(key.startswith(USER_PIN_PREFIX) for key in changed)
        for index, node in enumerate(self.nodes):
            message = node.data.message if node.data is not None else {}
            if changed.intersection(tool_result_ids(message)) or (users and user_pin_key(message) in changed):
                self._update_node(node, index, message)
        self.rebuild_lines()
        self.refresh()

    def mark_cleared(self, tool_use_ids: tuple[str, ...]) -> None:
        """Mark results the API cleared from what the model sees (a server engine's step)."""
        added = frozenset(tool_use_ids) - self.labels.cleared
        if not added:
            return
        self.labels.cleared |= added
        for index, node in enumerate(self.nodes):
            message = node.data.message if node.data is not None else {}
            if added.intersection(tool_result_ids(message)):
                self._update_node(node, index, message)
        self.rebuild_lines()
        self.refresh()

    @property
    def entries(self) -> list[tuple[dict[str, Any], TreeNode[NodeInfo]]]:
        """(message, node) per message the tree shows, read off its nodes."""
        return [(node.data.message if node.data is not None else {}, node) for node in self.nodes]

    @property
    def selected(self) -> NodeInfo | None:
        node = self.cursor_node
        return node.data if node is not None else None

    def selected_tool_use_id(self) -> str | None:
        """The tool_use id of the selected result (or tool call, or a message with one result)."""
        info = self.selected
        if info is None:
            return None
        content = info.message.get("content")
        if not isinstance(content, list):
            return None
        if info.block is not None:
            block = content[info.block] if info.block < len(content) else {}
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return str(block.get("tool_use_id"))
            if isinstance(block, dict) and block.get("type") == "tool_use":
                return str(block.get("id"))
            return None
        ids = tool_result_ids(info.message) or tool_use_ids(info.message)
        return ids[0] if len(ids) == 1 else None

    def selected_pin_key(self) -> str | None:
        """What `p` pins for the selection: its tool_use id, or the `user:` key of a user message."""
        tool_use_id = self.selected_tool_use_id()
        if tool_use_id is not None:
            return tool_use_id
        info = self.selected
        return user_pin_key(info.message) if info is not None else None

    def selected_archive_path(self) -> str | None:
        """The archived tool result the selected placeholder / persisted-output node points at."""
        info = self.selected
        if info is None:
            return None
        if info.block is None:
            content = info.message.get("content")
            paths = (
                [
                    marker.path
                    for block in content
                    if isinstance(block, dict)
                    and block.get("type") == "tool_result"
                    and (marker := parse_marker(block.get("content"))) is not None
                    and marker.kind in ("placeholder", "persisted")
                ]
                if isinstance(content, list)
                else []
            )
            return paths[0] if len(paths) == 1 else None
        if info.kind in ("placeholder", "persisted") and info.marker is not None and info.trusted:
            return info.marker.path
        return None
