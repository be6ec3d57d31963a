"""tui/textual_private.py holds every use of a Textual private name: each one is still what Textual has
(its kind, its parameters, its type once mounted), each hook still does what it relies on, no other
module of tui/ touches a Textual private name, and the start-up check refuses an unchecked Textual."""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.drivers.linux_driver import LinuxDriver
from textual.geometry import Region
from textual.reactive import Reactive
from textual.widgets import Static, Tree
from textual.widgets.tree import UnknownNodeID

import tui.textual_private as private
from tui.textual_private import (
    ALLOW_UNCHECKED,
    CHECKED_VERSIONS,
    PRIVATE_NAMES,
    PRIVATE_USES,
    AppendableTree,
    PrivateUse,
    RepaintGainedRows,
    app_process,
    check_textual_version,
    measured_first,
    pending_layouts,
    tree_line_paths,
)

ROOT = Path(__file__).resolve().parents[1]
TUI = ROOT / "tui"
HOME = TUI / "textual_private.py"
THIRD_PARTY = ("textual", "rich", "textual_serve")


# --- no other module of tui/ touches a Textual private name ------------------------------------------------


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] in THIRD_PARTY and any(is_private(part) for part in parts[1:])


def from_textual(cls: type) -> bool:
    return (getattr(cls, "__module__", "") or "").split(".")[0] in THIRD_PARTY


@functools.cache
def source_of(cls: type) -> str:
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):
        return ""


def textual_private(cls: Any, name: str) -> bool:
    """`name` is a private name of Textual (or rich, textual-serve) reached through `cls`: defined on a
    class of theirs in its MRO, or an instance attribute one of them sets or reads (`self.name`)."""
    if not is_private(name) or not inspect.isclass(cls):
        return False
    pattern = re.compile(rf"\bself\.{re.escape(name)}\b")
    return any(
        from_textual(base) and (name in vars(base) or pattern.search(source_of(base)) is not None)
        for base in cls.__mro__
    )


def resolve(namespace: Mapping[str, Any], qualname: list[str]) -> Any:
    found: Any = namespace.get(qualname[0])
    for part in qualname[1:]:
        found = getattr(found, part, None)
    return found


def violations(source: str, namespace: Mapping[str, Any], where: str) -> list[str]:
    """What in `source` (whose module's globals are `namespace`) touches a Textual private name."""
    found: list[str] = []

    def flag(node: ast.AST, what: str) -> None:
        found.append(f"{where}:{getattr(node, 'lineno', 0)}: {what}")

    def visit(node: ast.AST, classes: list[str], cls: Any) -> None:
        if isinstance(node, ast.ClassDef):
            inner = [*classes, node.name]
            for child in node.body:
                visit(child, inner, resolve(namespace, inner))
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if private_module(alias.name):
                    flag(node, f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if private_module(node.module):
                flag(node, f"imports from {node.module}")
            elif node.module.split(".")[0] in THIRD_PARTY:
                for alias in node.names:
                    if is_private(alias.name):
                        flag(node, f"imports {alias.name} from {node.module}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if cls is not None and textual_private(cls, node.name):
                flag(node, f"{classes[-1]} overrides {node.name}")
            for child in node.body:
                visit(child, classes, cls)  # methods keep their class; nested classes are found again
            return
        elif isinstance(node, ast.Attribute) and is_private(node.attr):
            receiver = node.value
            own = (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")) or (
                isinstance(receiver, ast.Call)
                and isinstance(receiver.func, ast.Name)
                and receiver.func.id == "super"
            )
            named = namespace.get(receiver.id) if isinstance(receiver, ast.Name) else None
            if own and cls is not None and textual_private(cls, node.attr):
                flag(node, f"{classes[-1]} uses {node.attr}")
            elif not own and (node.attr in PRIVATE_NAMES or textual_private(named, node.attr)):
                flag(node, f"uses {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in PRIVATE_NAMES
        ):
            flag(node, f"{node.func.id} of {node.args[1].value}")
        for child in ast.iter_child_nodes(node):
            visit(child, classes, cls)

    visit(ast.parse(source), [], None)
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_other_module_of_tui_touches_a_textual_private_name() -> None:
    found = []
    for path in sorted(TUI.rglob("*.py")):
        if path == HOME or path.name == "__main__.py":
            continue
        module = importlib.import_module(module_name(path))
        found += violations(path.read_text(encoding="utf-8"), vars(module), str(path.relative_to(ROOT)))
    assert not found, "Textual internals outside tui/textual_private.py (move them there):\n" + "\n".join(
        found
    )


SAMPLE = """
from textual.widgets._tree import _TreeLine
from textual.widgets import Static, Tree, _tree

class Label(Static):
    def _size_updated(self, size, virtual_size, container_size, layout=True):
        return super()._size_updated(size, virtual_size, container_size, layout)

    def render(self):
        self._own = 1
        return self._size

def hide(node, tree):
    node._label = "x"
    Tree._clear_line_cache(tree)
    return getattr(node, "_process", None)
"""


def test_the_scan_finds_each_kind_of_use() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(SAMPLE, "sample", "exec"), namespace)
    found = "\n".join(violations(SAMPLE, namespace, "sample"))
    for expected in (
        "imports from textual.widgets._tree",
        "imports _tree from textual.widgets",
        "Label overrides _size_updated",
        "Label uses _size_updated",  # super()._size_updated
        "Label uses _size",
        "uses node._label",
        "uses Tree._clear_line_cache",  # a name of Textual's class, though not one tui/ uses
        "getattr of _process",
    ):
        assert expected in found
    assert "_own" not in found  # the class's own private attribute is its business


# --- each use is still what Textual has ------------------------------------------------------------------


def owner(use: PrivateUse) -> Any:
    module, _, name = use.owner.partition(":")
    if module.startswith("textual_serve"):
        pytest.importorskip("textual_serve")
    found = importlib.import_module(module)
    return getattr(found, name) if name else found


def parameters(function: Callable[..., Any]) -> str:
    shown = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            shown.append(f"*{parameter.name}")
        elif parameter.kind is parameter.VAR_KEYWORD:
            shown.append(f"**{parameter.name}")
        elif parameter.default is not parameter.empty:
            shown.append(f"{parameter.name}={parameter.default!r}")
        else:
            shown.append(parameter.name)
    return ", ".join(shown)


@pytest.mark.parametrize(
    "use", [use for use in PRIVATE_USES if use.kind != "attribute"], ids=lambda use: f"{use.owner}.{use.name}"
)
def test_the_name_is_still_there_as_it_was(use: PrivateUse) -> None:
    where = owner(use)
    if use.kind == "module":
        module = importlib.import_module(f"{where.__name__}.{use.name}")
        assert inspect.isclass(getattr(module, use.expect, None)), f"{module.__name__} has no {use.expect}"
        return
    found = inspect.getattr_static(where, use.name)
    if use.kind == "class":
        assert dataclasses.is_dataclass(found)
        assert ", ".join(field.name for field in dataclasses.fields(found)) == use.expect
    elif use.kind in ("method", "override"):
        assert inspect.isfunction(found), f"{use.name} is no longer a method"
        assert parameters(found) == use.expect
    elif use.kind == "property":
        assert isinstance(found, property)
    elif use.kind == "reactive":
        assert isinstance(found, Reactive)
        assert repr(found._default) == use.expect
    else:
        raise AssertionError(f"unknown kind {use.kind}")


class Host(App[None]):
    def __init__(self, *widgets: Any) -> None:
        super().__init__()
        self.widgets = widgets

    def compose(self) -> ComposeResult:
        yield from self.widgets


async def test_each_attribute_is_there_once_mounted_with_its_type() -> None:
    tree: Tree[None] = Tree("root")
    tree.root.add_leaf("a leaf")
    app = Host(tree)
    async with app.run_test() as pilot:
        await pilot.pause()
        tree_line_paths(tree)  # the lines built
        instances: dict[str, Any] = {
            "textual.screen:Screen": app.screen,
            "textual.widgets._tree:Tree": tree,
            "textual.widgets._tree:TreeNode": tree.root.children[0],
        }
        if importlib.util.find_spec("textual_serve") is not None:
            from textual_serve.app_service import AppService
            from textual_serve.download_manager import DownloadManager

            async def nothing(*_: Any) -> None:
                pass

            instances["textual_serve.app_service:AppService"] = AppService(
                "true",
                write_bytes=nothing,
                write_str=nothing,
                close=nothing,
                download_manager=DownloadManager(),
            )
        wrong = []
        for use in PRIVATE_USES:
            if use.kind != "attribute" or use.owner not in instances:
                continue
            instance = instances[use.owner]
            assert isinstance(instance, owner(use))
            if not hasattr(instance, use.name):
                wrong.append(f"{use.owner}.{use.name}: gone")
            elif type(getattr(instance, use.name)).__name__ != use.expect:
                wrong.append(
                    f"{use.owner}.{use.name}: {type(getattr(instance, use.name)).__name__}, not {use.expect}"
                )
        assert not wrong, wrong


def test_every_use_names_what_uses_it() -> None:
    for use in PRIVATE_USES:
        name = use.used_by.split(".")[0]
        assert hasattr(private, name), f"{use.name}: tui/textual_private.py has no {name}"


# --- each hook still does what it relies on ---------------------------------------------------------------


class Column(Vertical):
    def __init__(self, *children: Any) -> None:
        super().__init__(*children)
        self.seen: list[set[Any]] = []

    def pre_layout(self, layout: Any) -> None:
        self.seen.append(set(pending_layouts(self.screen).get(self, ())))


async def test_a_container_laying_out_sees_which_child_asked_for_a_layout() -> None:
    asked, other = Static("one"), Static("two")
    column = Column(asked, other)
    async with Host(column).run_test() as pilot:
        await pilot.pause()
        column.seen.clear()
        asked.refresh(layout=True)
        await pilot.pause()
        assert any(asked in seen and other not in seen for seen in column.seen)


class Recorded(Vertical):
    def __init__(self, *children: Any) -> None:
        super().__init__(*children)
        self.dirty: list[tuple[Region, ...]] = []

    def _set_dirty(self, *regions: Region) -> None:
        self.dirty.append(regions)
        super()._set_dirty(*regions)


class Growing(RepaintGainedRows, Recorded):
    DEFAULT_CSS = "Growing { height: auto; width: 20; padding: 0 1 1 2; }"


async def test_a_widget_that_grows_repaints_only_the_rows_it_gained() -> None:
    """The widget grows as its child does (as a reply as its paragraphs stream in): only the rows it
    gained are repainted, from its old bottom padding on; any other change of size repaints it all."""
    text = Static("one\ntwo")
    block = Growing(text)
    async with Host(block).run_test() as pilot:
        await pilot.pause()
        assert block.outer_size.height == 3
        offset = block.content_offset
        block.dirty.clear()
        text.update("one\ntwo\nthree\nfour\nfive")
        await pilot.pause()
        assert block.outer_size.height == 6
        gained = Region(0, 2, 20, 4).translate(-offset)  # old bottom padding (row 2) to the new bottom
        assert block.dirty and set(block.dirty) == {(gained,)}
        block.dirty.clear()
        text.update("one")  # shrinking repaints it all
        await pilot.pause()
        assert block.outer_size.height == 2 and () in block.dirty


def test_a_driver_measures_the_terminal_with_the_given_probe_first() -> None:
    assert "self._get_terminal_size()" in inspect.getsource(LinuxDriver)  # at start and on SIGWINCH
    measured: list[tuple[int, int] | None] = [(123, 45)]
    driver = measured_first(LinuxDriver, lambda: measured[0])
    assert issubclass(driver, LinuxDriver)
    probe = object.__new__(driver)
    assert probe._get_terminal_size() == (123, 45)
    measured[0] = None  # the probe cannot tell: the driver's own measure
    width, height = probe._get_terminal_size()
    assert width > 0 and height > 0

    class NoProbe:
        pass

    assert measured_first(NoProbe, lambda: (1, 1)) is NoProbe  # type: ignore[arg-type]


def test_the_serve_process_is_read_where_textual_serve_keeps_it() -> None:
    pytest.importorskip("textual_serve")
    from textual_serve.app_service import AppService

    assert "self._process = process" in inspect.getsource(AppService)  # set when it opens the tab's app

    class Service:
        _process = "the process"

    assert app_process(Service()) == "the process"
    assert app_process(object()) is None


class Appendable(AppendableTree[int], Tree[int]):
    pass


async def test_a_tree_grown_at_the_end_extends_its_lines_and_equals_a_full_build() -> None:
    tree = Appendable("root")
    tree.show_root = False
    async with Host(tree).run_test() as pilot:
        for number in range(5):
            tree.add_at(number, Text(f"node {number}"), number, allow_expand=number == 2)
        tree.root.children[2].add_leaf("inside", 20)
        tree.root.children[2].expand()
        await pilot.pause()
        tree_line_paths(tree)
        lines = tree._tree_lines_cached
        for number in range(5, 8):
            tree.add_at(number, Text(f"node {number}"), number, allow_expand=False)
        shown = tree_line_paths(tree)
        assert tree._tree_lines_cached is lines  # extended, not built again
        assert [node.line for node in tree.root.children] == [0, 1, 2, 4, 5, 6, 7, 8]
        tree.rebuild_lines()
        assert tree_line_paths(tree) == shown
        tree.add_at(0, Text("first"), -1, allow_expand=False)  # anywhere else: built again
        assert [path[-1].data for path, _ in tree_line_paths(tree)] == [-1, 0, 1, 2, 20, 3, 4, 5, 6, 7]


async def test_a_cut_removes_the_nodes_and_their_children_from_the_tree() -> None:
    tree = Appendable("root")
    tree.show_root = False
    async with Host(tree).run_test() as pilot:
        nodes = [
            tree.add_at(number, Text(f"node {number}"), number, allow_expand=True) for number in range(6)
        ]
        inner = nodes[2].add_leaf("inside", 20)
        await pilot.pause()
        assert tree.cut_root_children(1, 4) == nodes[1:4]
        assert list(tree.root.children) == [nodes[0], *nodes[4:]]
        for gone in (*nodes[1:4], inner):
            with pytest.raises(UnknownNodeID):
                tree.get_node_by_id(gone.id)
        assert [path[-1] for path, _ in tree_line_paths(tree)] == [nodes[0], *nodes[4:]]


async def test_a_label_set_quietly_is_drawn_at_the_next_refresh() -> None:
    tree = Appendable("root")
    tree.show_root = False
    async with Host(tree).run_test(size=(40, 10)) as pilot:
        node = tree.add_at(0, Text("old label"), 0, allow_expand=False)
        await pilot.pause()
        assert "old label" in tree.render_line(0).text  # and in the tree's line cache
        tree.set_label_quietly(node, Text("new label"))
        assert node.label == Text("new label")
        tree.refresh()
        await pilot.pause()
        assert "new label" in tree.render_line(0).text


async def test_a_frame_draws_every_line_as_tree_draws_it_reading_the_style_once() -> None:
    tree = Appendable("root")
    tree.show_root = False
    tree.styles.background = "darkblue"
    async with Host(tree).run_test(size=(40, 12)) as pilot:
        for number in range(20):
            tree.add_at(number, Text(f"node {number}"), number, allow_expand=number == 3)
        tree.root.children[3].add_leaf("inside", 30)
        tree.root.children[3].expand()
        await pilot.pause()
        tree.move_cursor_to_line(2)
        tree.scroll_to(y=4, animate=False, immediate=True)
        await pilot.pause()
        reads = 0
        style = type(tree).rich_style

        class Counted(Appendable):
            @property
            def rich_style(self) -> Any:
                nonlocal reads
                reads += 1
                return style.fget(self)  # type: ignore[attr-defined]

        tree.__class__ = Counted
        drawn = tree.render_lines(Region(0, 0, tree.size.width, tree.size.height))
        assert reads == 1  # once for the frame (Tree reads it once a line)
        tree.__class__ = Appendable
        assert tree.scroll_offset.y == 4  # a scrolled frame
        expected = [Tree.render_line(tree, y) for y in range(tree.size.height)]  # Tree's own
        assert [strip.text for strip in drawn] == [strip.text for strip in expected]
        assert [list(strip) for strip in drawn] == [list(strip) for strip in expected]
        assert tree.render_line(0).text == expected[0].text  # outside a frame: read then


# --- the versions ------------------------------------------------------------------------------------------


def test_importing_the_module_imports_nothing_of_textual() -> None:
    code = (
        "import sys, tui.textual_private\n"
        "print([name for name in sys.modules if name.split('.')[0] in ('textual', 'rich')])"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_installed_textual_is_one_the_uses_were_checked_with() -> None:
    assert private.installed_version("textual") in CHECKED_VERSIONS["textual"]
    assert check_textual_version({}) is None


def test_another_textual_is_refused_in_one_line_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(private, "installed_version", lambda distribution="textual": "9.0.0")
    line = check_textual_version({})
    assert line is not None and "\n" not in line
    assert "Textual 9.0.0" in line and ALLOW_UNCHECKED in line and "tui/textual_private.py" in line
    assert check_textual_version({ALLOW_UNCHECKED: "1"}) is None
    assert check_textual_version({ALLOW_UNCHECKED: "0"}) == line
    monkeypatch.setattr(private, "installed_version", lambda distribution="textual": None)
    assert "no Textual is installed" in (check_textual_version({}) or "")


def test_the_escape_hatch_is_no_unknown_setting() -> None:
    from core.config import unknown_environment

    assert unknown_environment({ALLOW_UNCHECKED: "1"}) == []


@pytest.mark.parametrize("command", ["tui", "inspect", "serve"])
def test_the_tui_commands_refuse_an_unchecked_textual(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tui.cli

    monkeypatch.setattr(private, "installed_version", lambda distribution="textual": "9.0.0")
    monkeypatch.delenv(ALLOW_UNCHECKED, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"role": "user", "content": "hello"}]), encoding="utf-8")
    argv = {
        "tui": ["--offline", "--workdir", str(tmp_path)],
        "inspect": ["inspect", str(history)],
        "serve": ["--serve", "--offline", "--workdir", str(tmp_path)],
    }[command]
    assert tui.cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ctxtui: error: Textual 9.0.0 is installed")


def test_a_command_without_the_tui_runs_on_any_textual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tui.cli

    monkeypatch.setattr(private, "installed_version", lambda distribution="textual": "9.0.0")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert tui.cli.main(["config", "--workdir", str(tmp_path)]) == 0
    assert "Textual" not in capsys.readouterr().err
