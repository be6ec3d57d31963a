"""The message tree applies the splices of HistoryChanged events in place and always equals a tree built afresh."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.widgets.tree import TreeNode

from core.archive import Archive
from core.history import estimate_chars
from core.history.messages import splice_between
from core.history.store import History
from core.markers import placeholder
from tests.support.pilot import wait_for
from tui.textual_private import tree_line_paths
from tui.widgets.message_tree import MessageTree, NodeInfo


def exchange(number: int, result: str = "output") -> list[dict[str, Any]]:
    use = f"toolu_{number}"
    return [
        {"role": "user", "content": f"request {number}"},
        {"role": "assistant", "content": [
            {"type": "text", "text": f"step {number}"},
            {"type": "tool_use", "id": use, "name": "bash", "input": {"command": "ls"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use, "content": result}]},
    ]


class TreeApp(App[None]):
    def __init__(self, archive: Archive, history: History) -> None:
        super().__init__()
        self.archive = archive
        self.history = history

    def compose(self) -> ComposeResult:
        yield MessageTree(self.archive, list(self.history), id="live")


def follow(tree: MessageTree, before: list[dict[str, Any]], history: History) -> None:
    """Push to the tree the splices that turned `before` into the history (what a HistoryChanged carries)."""
    tree.push(splice_between(before, history), estimate_chars(history))


def shape(node: TreeNode[NodeInfo]) -> tuple[Any, ...]:
    info = node.data
    assert info is not None
    children = tuple(shape(child) for child in node.children)
    return (node.label, info.kind, info.index, id(info.message), info.trusted, node.allow_expand, children)


async def fresh_shape(app: TreeApp) -> list[tuple[Any, ...]]:
    fresh = MessageTree(app.archive, list(app.history))
    await app.mount(fresh)
    await app.workers.wait_for_complete()  # the fresh tree's build
    for (_, live_node), (_, node) in zip(app.query_one("#live", MessageTree).entries, fresh.entries, strict=True):
        if live_node.children:
            fresh.populate(node)
    shapes = [shape(node) for _, node in fresh.entries]
    await fresh.remove()
    return shapes


edits = st.lists(
    st.tuples(
        st.sampled_from(["append", "replace_front", "replace_any", "insert_front", "delete_range", "snip", "reset"]),
        st.integers(min_value=0, max_value=1_000),
    ),
    min_size=1,
    max_size=12,
)


async def run_edits(tmp_path: Path, operations: list[tuple[str, int]]) -> None:
    archive = Archive(tmp_path)
    saved = await archive.save_tool_result("toolu_saved", "the full text")
    history = History(message for number in range(12) for message in exchange(number))
    app = TreeApp(archive, history)
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.query_one("#live", MessageTree)
        await wait_for(pilot, lambda: not tree.syncing)
        tree.populate(tree.node_for(2))  # an expanded message keeps showing its blocks
        tree.node_for(2).expand()
        for number, (operation, value) in enumerate(operations):
            before = list(history)
            size = len(history)
            if operation == "append":
                history.extend(exchange(100 + number))
            elif operation == "replace_front" and size:
                history[value % min(size, 4)] = {"role": "user", "content": placeholder(saved) if value % 2 else "edited"}
            elif operation == "replace_any" and size:
                history[value % size] = {"role": "assistant", "content": [{"type": "text", "text": f"new {value}"}]}
            elif operation == "insert_front":
                history.insert(value % (size + 1), {"role": "user", "content": f"inserted {value}"})
            elif operation == "delete_range" and size:
                start = value % size
                del history[start : start + 1 + value % 5]
            elif operation == "snip" and size > 6:
                history[3 : size - 3] = [{"role": "user", "content": f"[{size - 6} messages archived at x]"}]
            elif operation == "reset":
                history[:] = exchange(500 + number)
            follow(tree, before, history)
            if value % 3 == 0:  # sometimes several edits arrive before the tree catches up
                await wait_for(pilot, lambda: not tree.syncing)
                await pilot.pause()  # and a frame is drawn in between
        await wait_for(pilot, lambda: not tree.syncing)
        assert [message for message, _ in tree.entries] == list(history)
        assert all(message is live for (message, _), live in zip(tree.entries, history, strict=True))
        assert list(tree.root.children) == [node for _, node in tree.entries]
        assert [shape(node) for _, node in tree.entries] == await fresh_shape(app)
        shown = tree_line_paths(tree)  # what a frame draws from
        tree.rebuild_lines()
        assert tree_line_paths(tree) == shown  # = a full rebuild


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=edits)
def test_tree_equals_a_fresh_build_after_random_edits(tmp_path: Path, operations: list[tuple[str, int]]) -> None:
    asyncio.run(run_edits(tmp_path, operations))


async def test_an_edit_near_the_front_keeps_every_other_node(tmp_path: Path) -> None:
    history = History(message for number in range(300) for message in exchange(number))
    app = TreeApp(Archive(tmp_path), history)
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.query_one("#live", MessageTree)
        await wait_for(pilot, lambda: not tree.syncing)
        nodes = [node for _, node in tree.entries]
        before = list(history)
        history[2] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "short"}]}
        follow(tree, before, history)
        await wait_for(pilot, lambda: not tree.syncing)
        assert [node for _, node in tree.entries] == nodes
        assert "short" not in str(nodes[2].label) and nodes[2].data is not None
        assert nodes[2].data.message is history[2]
        before = list(history)
        del history[0:3]  # the numbers after the cut move
        follow(tree, before, history)
        await wait_for(pilot, lambda: not tree.syncing)
        assert [node for _, node in tree.entries] == nodes[3:]
        assert str(tree.node_for(0).label).lstrip().startswith("#1 user")
        assert tree.node_for(0).data is not None and tree.node_for(0).data.index == 0
