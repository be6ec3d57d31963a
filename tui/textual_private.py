"""Every use ctxtui makes of a private name of Textual (or textual-serve), in one place.

Textual may change anything whose name starts with `_` in any release. The TUI uses a few such names
where no public API does what it needs (speed on long histories, repainting less); each use is a
small named function or a subclass hook below, whose docstring says what it relies on and why
nothing public does it. No other module of tui/ touches a private name of
Textual (tests/test_textual_private.py scans them), so a new Textual release is checked here:

- `PRIVATE_USES` lists each private name used (its owner and what kind of thing it is);
  tests/test_textual_private.py checks every one against the installed Textual (that it is still there,
  with the same signature or type) and checks the behaviour each hook relies on.
- `CHECKED_VERSIONS` holds the versions those uses were read against. `check_textual_version()`, called
  by the `ctxtui` command before any TUI starts, refuses another Textual in one line (exit 2) unless
  `CTXTUI_ALLOW_UNCHECKED_TEXTUAL=1` is set. pyproject.toml pins the range; to widen it, read each use
  below in the new version's source, run the tests, and add the version here.

Importing this module costs only the standard library (the start-up check runs before anything of
Textual is imported): Textual's names are imported where a function runs, or by the type checker only.
The subclass hooks derive from `object` at run time (from the Textual class they extend for the type
checker); the class using one names the Textual class after it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

if TYPE_CHECKING:
    from asyncio.subprocess import Process

    from rich.style import Style
    from rich.text import Text
    from textual.driver import Driver
    from textual.geometry import Region, Size
    from textual.screen import Screen
    from textual.strip import Strip
    from textual.widget import Widget
    from textual.widgets import Tree
    from textual.widgets._tree import _TreeLine
    from textual.widgets.tree import TreeNode

TreeData = TypeVar("TreeData")

ALLOW_UNCHECKED = "CTXTUI_ALLOW_UNCHECKED_TEXTUAL"
"""Set to 1 to start the TUI on a Textual version not in CHECKED_VERSIONS (at your own risk)."""

CHECKED_VERSIONS: dict[str, tuple[str, ...]] = {
    "textual": ("8.2.8",),  # the newest 8.2 release, and the only one pyproject.toml allows (>=8.2.8,<8.3)
    "textual-serve": ("1.1.3",),  # `--serve` only; its one use degrades to doing nothing (app_process)
}
"""The versions of each distribution whose source every use below was read against."""


class PrivateUse(NamedTuple):
    """One private name used: `owner` is where it lives (`module:Class`, or `module` for a private
    module or class), `kind` what it is (`module`, `class`, `method`, `override`, `property`,
    `attribute`, `reactive`), `expect` what the tests hold it to (a method's parameters, an attribute's
    type once mounted, a class's fields, a reactive's default), `used_by` the function or hook here that
    uses it."""

    owner: str
    name: str
    kind: str
    expect: str
    used_by: str


PRIVATE_USES: tuple[PrivateUse, ...] = (
    # the stream layout (tui/widgets/stream_layout.py)
    PrivateUse("textual.screen:Screen", "_layout_widgets", "attribute", "dict", "pending_layouts"),
    # the assistant's block repaints only the rows it gained (tui/widgets/assistant_block.py)
    PrivateUse(
        "textual.widget:Widget",
        "_size_updated",
        "override",
        "self, size, virtual_size, container_size, layout=True",
        "RepaintGainedRows",
    ),
    PrivateUse("textual.widget:Widget", "_set_dirty", "override", "self, *regions", "RepaintGainedRows"),
    # the proxy's view measures the terminal on stderr (tui/terminal_size.py)
    PrivateUse(
        "textual.drivers.linux_driver:LinuxDriver", "_get_terminal_size", "override", "self", "measured_first"
    ),
    # the message tree (tui/widgets/message_tree.py)
    PrivateUse("textual.widgets", "_tree", "module", "_TreeLine", "AppendableTree"),
    PrivateUse("textual.widgets._tree", "_TreeLine", "class", "path, last", "AppendableTree"),
    PrivateUse("textual.widgets._tree:Tree", "_invalidate", "override", "self", "AppendableTree"),
    PrivateUse("textual.widgets._tree:Tree", "_build", "override", "self", "AppendableTree"),
    PrivateUse(
        "textual.widgets._tree:Tree",
        "_render_line",
        "method",
        "self, y, x1, x2, base_style",
        "AppendableTree",
    ),
    PrivateUse("textual.widgets._tree:Tree", "_tree_lines", "property", "list", "tree_line_paths"),
    PrivateUse("textual.widgets._tree:Tree", "_tree_lines_cached", "attribute", "list", "AppendableTree"),
    PrivateUse(
        "textual.widgets._tree:Tree", "_updates", "attribute", "int", "AppendableTree.set_label_quietly"
    ),
    PrivateUse(
        "textual.widgets._tree:Tree", "_tree_nodes", "attribute", "dict", "AppendableTree.cut_root_children"
    ),
    PrivateUse("textual.widgets._tree:TreeNode", "_children", "attribute", "list", "AppendableTree"),
    PrivateUse(
        "textual.widgets._tree:TreeNode",
        "_remove_children",
        "method",
        "self",
        "AppendableTree.cut_root_children",
    ),
    PrivateUse(
        "textual.widgets._tree:TreeNode", "_label", "attribute", "Text", "AppendableTree.set_label_quietly"
    ),
    PrivateUse(
        "textual.widgets._tree:TreeNode", "_updates", "attribute", "int", "AppendableTree.set_label_quietly"
    ),
    PrivateUse("textual.widgets._tree:TreeNode", "_line", "attribute", "int", "AppendableTree"),
    # `ctxtui --serve` (tui/cli/serve.py)
    PrivateUse("textual_serve.app_service:AppService", "_process", "attribute", "NoneType", "app_process"),
)
"""Every private name used below (tests/test_textual_private.py checks each one, and that no other
module of tui/ uses them)."""

PRIVATE_NAMES = frozenset(use.name for use in PRIVATE_USES)


# --- the start-up check ------------------------------------------------------------------------------


def installed_version(distribution: str = "textual") -> str | None:
    """The installed version of `distribution` (None when it is not installed).

    Read from the name of the `NAME-VERSION.dist-info` folder beside the package (the wheel layout
    pip and uv install: the name of a dist-info folder is its version, PEP 427), so the start does not
    import `importlib.metadata` (~9 ms before the first frame); anything else (no such folder, two of
    them, an egg or an editable install elsewhere) asks `importlib.metadata`, the reference."""
    import importlib.util

    spec = importlib.util.find_spec(distribution)
    if spec is not None and spec.origin is not None:
        origin = Path(spec.origin)
        site = origin.parent.parent if spec.submodule_search_locations else origin.parent
        prefix = distribution.replace("-", "_").lower() + "-"
        found = [
            entry.name[len(prefix) : -len(".dist-info")]
            for entry in os.scandir(site)
            if entry.name.lower().startswith(prefix) and entry.name.endswith(".dist-info")
        ]
        if len(found) == 1:
            return found[0]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def check_textual_version(environ: Mapping[str, str] | None = None) -> str | None:
    """None when the installed Textual is one the uses here were checked against, or when
    CTXTUI_ALLOW_UNCHECKED_TEXTUAL=1 asks to start anyway; otherwise the one line that says why the
    TUI does not start (the `ctxtui` command prints it and exits 2)."""
    environ = os.environ if environ is None else environ
    if environ.get(ALLOW_UNCHECKED, "").strip().lower() in ("1", "true", "yes"):
        return None
    found = installed_version("textual")
    checked = CHECKED_VERSIONS["textual"]
    if found in checked:
        return None
    shown = "no Textual is installed" if found is None else f"Textual {found} is installed"
    return (
        f"{shown}, but the TUI relies on Textual internals checked only with textual "
        f"{', '.join(checked)} (tui/textual_private.py): install textual=={checked[-1]}, "
        f"or set {ALLOW_UNCHECKED}=1 to start anyway"
    )


# --- the stream layout ---------------------------------------------------------------------------------


def pending_layouts(screen: Screen[Any]) -> dict[Any, set[Widget]]:
    """The screen's record of who asked for a layout since the last one: for each ancestor of a
    widget that called `refresh(layout=True)`, the children (or the widget itself) that asked.

    Relies on: `Screen._layout_widgets`, filled by `Screen._on_layout` and read by the stream layout
    (which measures again only the widgets recorded for its container) until the next layout clears it.
    Public API: none; a container cannot learn which of its children asked."""
    return screen._layout_widgets


# --- repainting only the rows a widget gained --------------------------------------------------------------

if TYPE_CHECKING:
    _WidgetHook = Widget
else:
    _WidgetHook = object


class RepaintGainedRows(_WidgetHook):
    """Subclass hook for a widget whose rows, once drawn, stay right when it grows at the bottom (its
    own drawing is the same on every row; its children draw the rest): growing taller repaints only the
    rows gained, from its old bottom gutter on. Any other change of size repaints it all.
    Use: `class Block(RepaintGainedRows, Markdown)`.

    Relies on: `Widget._size_updated(size, virtual_size, container_size, layout)`, which Textual calls
    with the widget's new outer size and which calls `Widget._set_dirty()` (no regions: all of it) when
    the size changed, before storing it; `_set_dirty(*regions)` takes regions in content coordinates.
    Public API: a widget cannot say which of its rows a resize leaves right (`refresh(region)` adds
    regions, it does not narrow Textual's own full repaint)."""

    _gained: Region | None = None
    """While Textual takes a new size that only adds rows: those rows, from the old bottom gutter on."""

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        from textual.geometry import Region

        old = self.outer_size
        bottom = self.styles.gutter.bottom  # rows below the content, which move down as it grows
        if old.width == size.width and bottom < old.height < size.height:
            first = old.height - bottom
            self._gained = Region(0, first, size.width, size.height - first)
        try:
            return super()._size_updated(size, virtual_size, container_size, layout)
        finally:
            self._gained = None

    def _set_dirty(self, *regions: Region) -> None:
        if not regions and self._gained is not None:
            regions = (self._gained.translate(-self.content_offset),)
        super()._set_dirty(*regions)


# --- the terminal's size ------------------------------------------------------------------------------------


def measured_first(driver: type[Driver], measure: Callable[[], tuple[int, int] | None]) -> type[Driver]:
    """`driver` asking `measure()` for the terminal's size first (columns, lines), its own probe when
    that says None; `driver` unchanged if it has no size probe to replace.

    Relies on: Textual's terminal drivers (Linux, inline, headless) ask `self._get_terminal_size()`
    for the size at start and on every SIGWINCH; the Linux one measures stdout. Public API: none
    chooses the stream the size is measured on (`App.run(size=...)` fixes a size, resizes included)."""
    found = getattr(driver, "_get_terminal_size", None)
    if found is None:
        return driver
    own: Callable[[Driver], tuple[int, int]] = found

    class MeasuredFirst(driver):  # type: ignore[valid-type, misc]
        def _get_terminal_size(self) -> tuple[int, int]:
            size = measure()
            return size if size is not None else own(self)

    MeasuredFirst.__name__ = f"MeasuredFirst{driver.__name__}"
    return MeasuredFirst


# --- `ctxtui --serve` -----------------------------------------------------------------------------------------


def app_process(app: object) -> Process | None:
    """The process textual-serve runs a browser tab's app in (None if it has none, or if a textual-serve
    release no longer keeps it there: the caller then cannot kill a tab's app that does not quit).

    Relies on: `AppService._process`, the `asyncio` subprocess it opens for the tab. Public API:
    `AppService.stop()` asks the app to quit and waits; nothing public kills it when it does not."""
    return getattr(app, "_process", None)


# --- the message tree ------------------------------------------------------------------------------------------

if TYPE_CHECKING:
    _TreeHook = Tree
else:

    class _TreeHook(Generic[TreeData]):
        pass


class AppendableTree(_TreeHook[TreeData]):
    """Subclass hook for a `Tree` (root hidden) that grows mostly at the end, with many nodes: what the
    public Tree API does by walking every node, done in time proportional to what changed.
    Use: `class Messages(AppendableTree[Data], Tree[Data])`.

    - `add_at(index, ...)`: a node added after the root's last child extends the line cache (one line
      per visible node, what every frame draws from) instead of rebuilding it: Tree rebuilds it on the
      next idle after any change, walking every node (20 ms at 5,000 nodes, for every message added);
    - `cut_root_children(start, stop)`: root children `start:stop` removed in one cut (`TreeNode.remove`
      looks its node up in the parent's children and invalidates the tree, once per node);
    - `set_label_quietly(node, label)`: a label set without the refresh `TreeNode.set_label` schedules
      per node (each one walks the visible lines): relabelling thousands of nodes, the caller refreshes
      once;
    - `render_line` reads the widget's style once a frame (`render_lines`), not once a line: Tree's
      reads `rich_style`, which walks every ancestor's styles (~30 µs), for each line of each repaint.

    Relies on: `Tree._invalidate()` (called by every change of the nodes: clears `_tree_lines_cached`,
    bumps `Tree._updates`, refreshes with layout), `Tree._build()` (called when `_tree_lines_cached` is
    None: one `_TreeLine(path, last)` per visible node, setting each `TreeNode._line`, then the virtual
    size), `TreeNode._children` (the list behind `children`), `TreeNode._remove_children()`,
    `Tree._tree_nodes` (id to node), `TreeNode._label` and `_updates` (a line's cache key holds
    `Tree._updates` and the `_updates` of each node of its path), `Tree._render_line(y, x1, x2,
    base_style)` (what `Tree.render_line` calls with the scroll offsets and `rich_style`). With the root hidden, a root child's
    lines depend on nothing after it, so lines built before an append stay right.
    """

    _appending = False
    """`add_at` is adding a node after every root child (read by `_invalidate`)."""
    _append_base: tuple[list[_TreeLine[TreeData]], int] | None = None
    """The lines built before the first append since the last build, and the first appended child."""
    _full_build = False
    """Something other than an append changed since the last build: Tree's own build."""
    _frame_style: Style | None = None
    """The widget's style while `render_lines` runs (None otherwise)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        style = self._frame_style if self._frame_style is not None else self.rich_style
        return self._render_line(y + scroll_y, scroll_x, scroll_x + self.size.width, style)

    def add_at(self, index: int, label: Text, data: TreeData, *, allow_expand: bool) -> TreeNode[TreeData]:
        """`root.add(label, data, before=index, allow_expand=...)` (a leaf without `allow_expand`);
        added after every root child, the lines built so far are kept and extended."""
        self._appending = index == len(self.root.children)
        try:
            return self.root.add(label, data, before=index, allow_expand=allow_expand)
        finally:
            self._appending = False

    def cut_root_children(self, start: int, stop: int) -> list[TreeNode[TreeData]]:
        """Remove root children `start:stop` (and their descendants) in one cut; returns them."""
        nodes = list(self.root.children[start:stop])
        del self.root._children[start:stop]
        for node in nodes:
            node._remove_children()
            self._tree_nodes.pop(node.id, None)
        self._invalidate()
        return nodes

    def set_label_quietly(self, node: TreeNode[TreeData], label: Text) -> None:
        """Give `node` a new label (already a one-line `Text`) without scheduling a refresh."""
        node._label = label
        node._updates += 1
        self._updates += 1

    def rebuild_lines(self) -> None:
        """Build every line again on the next idle (what any change but an append does)."""
        self._invalidate()

    def _invalidate(self) -> None:
        if self._appending:
            if self._append_base is None and not self._full_build and self._tree_lines_cached is not None:
                # the node just added is the root's last child; every line built so far comes before it
                self._append_base = (self._tree_lines_cached, len(self.root.children) - 1)
        else:
            self._full_build = True
            self._append_base = None
        super()._invalidate()

    def _build(self) -> None:
        from textual.geometry import Size
        from textual.widgets._tree import _TreeLine

        base, full = self._append_base, self._full_build
        self._append_base, self._full_build = None, False
        if base is None or full or self.show_root:
            super()._build()
            return
        lines, first = base
        width = self.virtual_size.width
        for node in self.root.children[first:]:
            node._line = len(lines)
            lines.append(_TreeLine([node], True))
            width = max(width, self.get_label_width(node))
        self._tree_lines_cached = lines
        self.virtual_size = Size(width, len(lines))


def tree_line_paths(tree: Tree[Any]) -> list[tuple[tuple[TreeNode[Any], ...], bool]]:
    """What a frame of `tree` draws from: each line's path of nodes and whether it is its parent's
    last child (built now if out of date). For the tests: an incremental build equals a full one.

    Relies on: `Tree._tree_lines` (the property that builds `_tree_lines_cached` when None).
    Public API: `get_node_at_line` gives the node of a line, not its path."""
    return [(tuple(line.path), line.last) for line in tree._tree_lines]
