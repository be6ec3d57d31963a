"""The message tree at size (issue 12), against a plain Textual `Tree` holding the same nodes, same run.

Rows:
  1. re-sync after an edit near the front (message 3 replaced by a copy, as micro_compact does) at
     1,000 / 5,000 / 20,000 messages: from the change until the tree is in line and its line cache
     (what the next frame draws) is rebuilt. Peer: a plain Tree with the same number of nodes
     relabelling its third node (`set_label`), to its rebuilt line cache.
  2. cut at the front at 20,000 messages: three messages removed before all the others (every later
     message is renumbered), then a compaction snip (messages 3 to n-3 replaced by one summary).
     Peer: a plain Tree with the same number of nodes removing three nodes (`TreeNode.remove`).
  3. append one message at 5,000: median and worst of 30, the same way. Peer: a plain Tree of 5,000
     nodes getting one more leaf.
  4. first build of 5,000 messages (a resumed session): from the first sync request until every
     node is in and the line cache is built (ours adds the nodes in chunks, letting the loop run
     between them). Peer: a plain Tree adding the same 5,000 expandable nodes in one go.
The frame itself (painting the visible lines) costs the same for both and is left out.

Both trees are in a small headless app of their own (Textual Pilot, 120x40), so only the tree's cost
is measured. Run: python bench/bench_tree.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_history import history, turn
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Tree

from core.archive import Archive
from core.events import Splice
from core.history import estimate_chars
from core.history.store import History
from tui.widgets.message_tree import MessageTree

SIZE = (120, 40)


class Host(App[None]):
    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


async def until(pilot: Pilot[Any], condition: Callable[[], bool], tree: Tree[Any]) -> None:
    """Wait for `condition`, then for the tree's lines to be rebuilt (what the next frame draws from)."""
    while not condition():  # noqa: ASYNC110 - polling as fast as the loop turns is the measurement
        await asyncio.sleep(0)
    tree.last_line  # noqa: B018 - builds the line cache now if the change invalidated it


async def tree_edit(archive: Archive, count: int, repeats: int = 5) -> float:
    messages = History(history(count))
    tree = MessageTree(archive, list(messages))
    async with Host(tree).run_test(size=SIZE) as pilot:
        await until(pilot, lambda: not tree.syncing, tree)
        times = []
        for number in range(repeats):
            edited = {**messages[2], "content": [{**messages[2]["content"][0], "content": f"[edit {number}]"}]}
            start = time.perf_counter()
            messages[2] = edited
            tree.push([Splice(2, 1, (edited,))], messages.chars)
            await until(pilot, lambda edited=edited: not tree.syncing and tree.entries[2][0] is edited, tree)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


async def plain_edit(count: int, repeats: int = 5) -> float:
    tree: Tree[None] = Tree("history")
    async with Host(tree).run_test(size=SIZE) as pilot:
        tree.show_root = False
        for number in range(count):
            tree.root.add(f"#{number + 1} message {number}", allow_expand=True)
        await pilot.pause()
        node = tree.root.children[2]
        times = []
        for number in range(repeats):
            start = time.perf_counter()
            node.set_label(f"#3 edited {number}")
            await until(pilot, lambda: True, tree)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


async def tree_cut(archive: Archive, count: int) -> tuple[float, float]:
    """Three messages removed at the front, then messages 3..n-3 snipped into one: the time of each."""
    messages = History(history(count))
    tree = MessageTree(archive, list(messages))
    async with Host(tree).run_test(size=SIZE) as pilot:
        await until(pilot, lambda: not tree.syncing, tree)
        start = time.perf_counter()
        del messages[0:3]
        tree.push([Splice(0, 3)], messages.chars)
        await until(pilot, lambda: not tree.syncing and len(tree.entries) == len(messages), tree)
        front = time.perf_counter() - start
        await pilot.pause()
        summary = {"role": "user", "content": f"[{len(messages) - 6} messages archived at x]"}
        start = time.perf_counter()
        removed = len(messages) - 6
        messages[3 : len(messages) - 3] = [summary]
        tree.push([Splice(3, removed, (summary,))], messages.chars)
        await until(pilot, lambda: not tree.syncing and len(tree.entries) == len(messages), tree)
        snip = time.perf_counter() - start
    return front, snip


async def plain_cut(count: int) -> float:
    tree: Tree[None] = Tree("history")
    async with Host(tree).run_test(size=SIZE) as pilot:
        tree.show_root = False
        for number in range(count):
            tree.root.add(f"#{number + 1} message {number}", allow_expand=True)
        await until(pilot, lambda: True, tree)
        start = time.perf_counter()
        for node in list(tree.root.children[:3]):
            node.remove()
        await until(pilot, lambda: True, tree)
        return time.perf_counter() - start


async def tree_append(archive: Archive, count: int, appends: int = 30) -> list[float]:
    messages = History(history(count))
    tree = MessageTree(archive, list(messages))
    async with Host(tree).run_test(size=SIZE) as pilot:
        await until(pilot, lambda: not tree.syncing, tree)
        times = []
        extra = [message for number in range(appends) for message in turn(900_000 + number)][:appends]
        for message in extra:
            await pilot.pause(0.02)
            start = time.perf_counter()
            messages.append(message)
            tree.push([Splice(len(messages) - 1, 0, (message,))], messages.chars)
            await until(pilot, lambda message=message: not tree.syncing and tree.entries[-1][0] is message, tree)
            times.append(time.perf_counter() - start)
    return times


async def plain_append(count: int, appends: int = 30) -> list[float]:
    tree: Tree[None] = Tree("history")
    async with Host(tree).run_test(size=SIZE) as pilot:
        tree.show_root = False
        for number in range(count):
            tree.root.add(f"#{number + 1} message {number}", allow_expand=True)
        await pilot.pause()
        times = []
        for number in range(appends):
            await pilot.pause(0.02)
            start = time.perf_counter()
            tree.root.add_leaf(f"#{count + number + 1} one more")
            await until(pilot, lambda: True, tree)
            times.append(time.perf_counter() - start)
    return times


async def tree_build(archive: Archive, count: int) -> float:
    messages = History(history(count))
    tree = MessageTree(archive)
    async with Host(tree).run_test(size=SIZE) as pilot:
        await pilot.pause()
        start = time.perf_counter()
        tree.push([Splice(0, 0, tuple(messages))], estimate_chars(messages))
        await until(pilot, lambda: not tree.syncing and len(tree.entries) == len(messages), tree)
        return time.perf_counter() - start


async def plain_build(count: int) -> float:
    tree: Tree[None] = Tree("history")
    async with Host(tree).run_test(size=SIZE) as pilot:
        tree.show_root = False
        await pilot.pause()
        start = time.perf_counter()
        for number in range(count):
            tree.root.add(f"#{number + 1} message {number}", allow_expand=True)
        await until(pilot, lambda: True, tree)
        return time.perf_counter() - start


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ctxtui-bench-") as tmp:
        archive = Archive(Path(tmp))
        rows = []
        for count in (1_000, 5_000, 20_000):
            ours = await tree_edit(archive, count)
            peer = await plain_edit(count)
            rows.append((f"re-sync after an edit near the front, {count:,} msgs", ms(ours),
                         f"plain Tree relabel {ms(peer).strip()}: {ours / peer:5.2f}x (goal: 20k under 100 ms)"))
        ours_front, ours_snip = await tree_cut(archive, 20_000)
        peer_cut = await plain_cut(20_000)
        rows.append(("remove 3 messages at the front, 20,000 msgs", ms(ours_front),
                     f"plain Tree removing 3 nodes {ms(peer_cut).strip()}: {ours_front / peer_cut:5.2f}x"))
        rows.append(("then snip messages 3 to n-3 into one", ms(ours_snip), ""))
        ours_append = await tree_append(archive, 5_000)
        peer_append = await plain_append(5_000)
        ours_build = statistics.median([await tree_build(archive, 5_000) for _ in range(3)])
        peer_build = statistics.median([await plain_build(5_000) for _ in range(3)])
    ours_median, peer_median = statistics.median(ours_append), statistics.median(peer_append)
    rows.append(("append one message at 5,000: median", ms(ours_median),
                 f"plain Tree add_leaf {ms(peer_median).strip()}: {ours_median / peer_median:5.2f}x (goal under 5 ms)"))
    rows.append(("                                 worst", ms(max(ours_append)),
                 f"plain Tree {ms(max(peer_append)).strip()}"))
    rows.append(("first build of 5,000 messages (median of 3)", ms(ours_build),
                 f"plain Tree adding 5,000 nodes {ms(peer_build).strip()}: {ours_build / peer_build:5.2f}x"))
    width = max(len(row[0]) for row in rows)
    print(f"ctxtui message tree bench (Textual headless {SIZE[0]}x{SIZE[1]}, Python {sys.version.split()[0]})")
    for name, value, ratio in rows:
        print(f"{name:<{width}}  {value}  {ratio}")


if __name__ == "__main__":
    asyncio.run(main())
