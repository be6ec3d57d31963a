"""Write the README's screenshots by driving the real app (Pilot, offline model, no network).

Run: .venv/bin/python screenshots/make_screenshots.py

Every picture is the real `CtxApp` on a real offline `Agent` in a fresh workdir with fixed contents
(`<tmp>/ctxtui-demo`, so the title bar shows the same path every run). That path cannot be private,
so a run holds `<tmp>/ctxtui-demo.lock` (flock) from start to end: two runs at once take turns
instead of deleting each other's workdir. Each SVG is written with `app.save_screenshot`, each PNG
is rendered from that SVG with cairosvg.

  main.png              the demo in progress, held at a moment the context is over the limit
  gauge-over-limit.png  the demo held right after the pasted incident log pushed it far over
  tree-markers.png      a history with every marker kind, the marker messages expanded
  archive-viewer.png    ArchiveScreen opened from a placeholder node, with a search
  small-80x24.png       the same app in an 80x24 terminal (inspector folded into a one-line gauge)
  breakdown.png         after a session that compacted: what fills the context, by category (/breakdown, f2)
  timeline.png          the same session: every model call, the steps before it, one call selected (/timeline, f2)
  preview.png           the preview of the next call (f4) with a pinned result, paused then resumed
  summary-review.png    the summary drafted for review before a manual compact (ctrl+o)
  proxy.png             `ctxtui proxy`'s live view on a Claude Code-shaped session: the timeline, the
                        call after the client's compaction selected (the real proxy, the loopback fake
                        API of tests/support as its upstream, the real SDK as the client)
  proxy-diff.png        the same session's diff view: the call after Claude Code cleared an old tool result
  compare.png           `ctxtui inspect FILE --compare` on tests/fixtures/engines' ctxtui session: the
                        engines' table and one timeline per engine (80 columns)

`make_screenshots.py steering` writes only preview and summary-review; `make_screenshots.py proxy`
only the proxy's two; `make_screenshots.py economics` only gauge-cache, timeline-misses and step-cost,
`make_screenshots.py ledger` only dropped and facts (screenshots/views_shots.py says how), and
`make_screenshots.py compare` only compare.

The context is over the limit only between a turn adding tool results and the next
`Compactor.prepare` (which runs at once and brings it down), so "over the limit" lasts
milliseconds in real use. To show it, `HoldBeforePrepare` wraps the agent's `compactor.prepare_changes`:
when its condition holds it waits (after the history change has been posted to the app) until the
screenshot is taken, then runs the real prepare. Nothing else is staged.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input
from textual.widgets.tree import TreeNode

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.history import estimate_chars
from core.markers import parse_marker
from core.model.offline import OfflineModel
from tui.app import CtxApp
from tui.demo import DEMO_COMMANDS, build_demo_workspace
from tui.screens.archive import ArchiveScreen

Message = dict[str, Any]
OUT = Path(__file__).resolve().parent
WORKDIR = Path(tempfile.gettempdir()) / "ctxtui-demo"
SIZE = (160, 48)
LIMIT = CompactionSettings().context_char_limit


# --- helpers ---------------------------------------------------------------------------------------


class HoldBeforePrepare:
    """Holds the agent right before `Compactor.prepare` when the next condition holds.

    `hold_when(name, condition)` queues a condition on the history about to be prepared; when it is
    met the turn waits in `prepare` (the app has been sent the history change) until `release()`.
    """

    def __init__(self, agent: Agent) -> None:
        # the agent runs the pipeline through `prepare_events` (each step as it is done, then the outcome)
        self._prepare = agent.compactor.prepare_events
        agent.compactor.prepare_events = self._held_prepare  # type: ignore[method-assign]
        self.queue: list[tuple[str, Callable[[list[Message]], bool]]] = []
        self.holding: str | None = None
        self.arrived = asyncio.Event()
        self._release = asyncio.Event()

    def hold_when(self, name: str, condition: Callable[[list[Message]], bool]) -> None:
        self.queue.append((name, condition))

    async def _held_prepare(self, messages: Sequence[Message], active_request: str, hold: bool = False) -> Any:
        if self.queue and self.queue[0][1](list(messages)):
            self.holding, _ = self.queue.pop(0)
            self._release.clear()
            self.arrived.set()
            await self._release.wait()
        async for event in self._prepare(messages, active_request, hold):
            yield event

    def release(self) -> None:
        self.holding = None
        self.arrived.clear()
        self._release.set()


def has_marker(messages: Sequence[Message], kind: str) -> bool:
    for message in messages:
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [
            block.get("content") for block in content or [] if isinstance(block, dict)
        ]
        if any((marker := parse_marker(text)) is not None and marker.kind == kind for text in texts):
            return True
    return False


def ends_with_results(messages: Sequence[Message]) -> bool:
    """The last message answers tool calls (a turn has just added their results)."""
    content = messages[-1].get("content") if messages else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


@contextlib.contextmanager
def workdir_lock() -> Iterator[None]:
    """Hold the lock on the shared workdir for the whole run (blocks while another run holds it)."""
    with open(WORKDIR.with_name(WORKDIR.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def fresh_workdir() -> Path:
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    await build_demo_workspace(WORKDIR)
    return WORKDIR


def make_agent(workdir: Path, compaction: CompactionSettings | None = None) -> Agent:
    settings = Settings(workdir=workdir, offline=True, yes=True, compaction=compaction or CompactionSettings())
    return Agent.from_settings(settings, model=OfflineModel())  # yes=True: every tool call is allowed


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], within: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("the app did not reach the expected state")
        await pilot.pause(0.02)


async def settle(pilot: Pilot[Any], app: CtxApp, counted: bool = True) -> None:
    """Wait until the gauge and the tree show the agent's history as it is now, and paint. While a
    turn is held (`counted` False) the next request's count is the one from before it (the inspector
    asks the core nothing while a turn runs)."""
    await wait_for(
        pilot,
        lambda: not app.message_tree.syncing
        and app.gauge.chars == app.agent.chars
        and (not counted or (app.gauge.state.count is not None and not app.gauge.state.count_stale))
        and not any(worker.group in ("measure", "count", "window") and not worker.is_finished
                    for worker in app.workers),
    )
    app.gauge.flush()
    await pilot.pause(0.15)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def send(pilot: Pilot[Any], app: CtxApp, text: str, hold: HoldBeforePrepare | None = None,
               on_hold: Callable[[str], Any] | None = None) -> None:
    """Send `text` through `CtxApp.submit` (what Enter on the prompt calls); wait for the turn to end.

    If `hold` holds the turn, `on_hold(name)` runs (and is awaited) before the turn goes on."""
    done = app.turns_completed
    await app.submit(text)
    while app.turns_completed <= done:
        if hold is not None and hold.arrived.is_set():
            assert hold.holding is not None and on_hold is not None
            await on_hold(hold.holding)
            hold.release()
        await pilot.pause(0.02)
    await settle(pilot, app)


def has_children(node: TreeNode[Any]) -> Callable[[], bool]:
    return lambda: bool(node.children)


def freeze_cursors(app: CtxApp) -> None:
    app.chat.input.cursor_blink = False
    for field in app.screen.query(Input):
        field.cursor_blink = False


def save(app: App[Any], name: str) -> None:
    """`name`.svg via save_screenshot, `name`.png from it (cairosvg, DejaVu Sans Mono for Fira Code)."""
    import cairosvg

    svg_path = Path(app.save_screenshot(f"{name}.svg", str(OUT)))
    svg = svg_path.read_text(encoding="utf-8")
    # The SVG asks for Fira Code from a web font; cairo cannot fetch it: use the local monospace font.
    local = svg.replace('"Fira Code"', '"DejaVu Sans Mono"').replace("Fira Code", "DejaVu Sans Mono")
    cairosvg.svg2png(bytestring=local.encode("utf-8"), write_to=str(OUT / f"{name}.png"), scale=1.0)
    print(f"wrote {svg_path.relative_to(OUT.parent)} and screenshots/{name}.png")


# --- the pictures -------------------------------------------------------------------------------------


async def demo_over_the_limit() -> None:
    """main + gauge-over-limit: the demo's commands, held twice while the context is over the limit."""
    agent = make_agent(await fresh_workdir())
    hold = HoldBeforePrepare(agent)
    # main: over the limit once micro_compact has already left placeholders (a tree with markers).
    hold.hold_when(
        "main", lambda ms: estimate_chars(ms) > LIMIT and ends_with_results(ms) and has_marker(ms, "placeholder"),
    )
    # gauge-over-limit: far over it (the pasted log and its write_file call, just before the summary).
    hold.hold_when("gauge-over-limit", lambda ms: estimate_chars(ms) > LIMIT * 1.3 and ends_with_results(ms))
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        freeze_cursors(app)

        async def shoot(name: str) -> None:
            await settle(pilot, app, counted=False)
            assert app.gauge.state.level == "over", app.gauge.figure
            save(app, name)

        commands = DEMO_COMMANDS[: DEMO_COMMANDS.index("read README.md")]
        for command in commands:
            await send(pilot, app, command, hold, shoot)
            if not hold.queue:
                break
        missing = [name for name, _ in hold.queue]
        if missing:
            raise RuntimeError(f"the demo never reached the state for: {', '.join(missing)}")
    await agent.aclose()


TREE_COMMANDS = [
    "read README.md",
    "compact",  # a summary first: snip keeps the first messages, so it stays at the top
    *[f"read src/module_{index:02d}.py" for index in range(1, 13)],  # micro (placeholders), snip twice
    "read logs/test.log",  # 100,000 chars on top: fit_tool_results persists it (preview)
]


async def tree_and_archive() -> None:
    """tree-markers + archive-viewer: a history holding a summary, a snip marker, a placeholder and a
    persisted-output block (snip at 30 messages, down to 16, so the whole tree fits on screen)."""
    compaction = CompactionSettings(snip_trigger_messages=30, snip_target_messages=16)
    agent = make_agent(await fresh_workdir(), compaction)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        freeze_cursors(app)
        for command in TREE_COMMANDS:
            await send(pilot, app, command)
        kinds = {kind for kind in ("compacted", "snip", "placeholder", "persisted") if has_marker(agent.messages, kind)}
        assert kinds == {"compacted", "snip", "placeholder", "persisted"}, kinds

        tree = app.message_tree
        await pilot.press("ctrl+t")  # focus the tree
        await pilot.press(*["f9"] * 9)  # a wider inspector: marker paths are long
        placeholder_child = None
        for _message, node in tree.entries:
            info = node.data
            if info is not None and (info.markers.get("placeholder") or info.markers.get("persisted")):
                node.expand()
                await wait_for(pilot, has_children(node))
                if info.markers.get("placeholder") and placeholder_child is None:
                    placeholder_child = node.children[0]
        assert placeholder_child is not None
        tree.move_cursor(placeholder_child)
        await settle(pilot, app)
        save(app, "tree-markers")

        await pilot.press("enter")  # open the archived tool result behind the placeholder
        await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
        freeze_cursors(app)
        await pilot.press(*"def handler_")
        await pilot.press("enter", "enter", "enter")  # third match
        await settle(pilot, app)
        save(app, "archive-viewer")
    await agent.aclose()


async def small_terminal() -> None:
    """small-80x24: two turns in an 80x24 terminal."""
    agent = make_agent(await fresh_workdir())
    app = CtxApp(agent)
    async with app.run_test(size=(80, 24)) as pilot:
        freeze_cursors(app)
        for command in ("glob src/*.py", "read src/module_01.py"):
            await send(pilot, app, command)
        save(app, "small-80x24")
    await agent.aclose()


async def steering_views() -> None:
    """preview + summary-review: three reads with compaction paused, one result pinned, then resumed."""
    compaction = CompactionSettings(context_char_limit=9_000, keep_recent_results=1)
    agent = make_agent(await fresh_workdir(), compaction)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        freeze_cursors(app)
        await app.submit("/pause")
        for command in ("read src/module_01.py", "read src/module_02.py", "read src/module_03.py"):
            await send(pilot, app, command)
        first = next(block["tool_use_id"] for message in agent.messages if isinstance(message["content"], list)
                     for block in message["content"] if block.get("type") == "tool_result")
        await app.submit(f"/pin {first}")
        await app.submit("/pause")
        await wait_for(pilot, lambda: "next call:" in app.gauge.preview_line)
        await settle(pilot, app)
        await pilot.press("f4")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "PreviewScreen")
        await settle(pilot, app)
        save(app, "preview")
        await pilot.press("escape")
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CompactPromptScreen")
        await pilot.press(*"the module edits", "enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "SummaryReviewScreen")
        await settle(pilot, app)
        save(app, "summary-review")
    await agent.aclose()


async def views_after_compaction() -> None:
    """breakdown + timeline: the tree session (a summary, snips, placeholders, a persisted block)."""
    compaction = CompactionSettings(snip_trigger_messages=30, snip_target_messages=16)
    agent = make_agent(await fresh_workdir(), compaction)
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        freeze_cursors(app)
        for command in TREE_COMMANDS:
            await send(pilot, app, command)
        assert any(sample.steps for sample in agent.timeline)
        await pilot.press(*["f9"] * 4)
        await app.submit("/breakdown")
        await settle(pilot, app)
        save(app, "breakdown")

        await app.submit("/timeline")
        timeline = app.main.timeline_view
        compacted = max(index for index, sample in enumerate(agent.timeline) if len(sample.steps) > 1 or
                        "snip_compact" in sample.steps)
        timeline.select(compacted)
        await settle(pilot, app)
        save(app, "timeline")
    await agent.aclose()


def free_or_any(port: int) -> int:
    """`port` if nothing listens there (the README's figures), else 0: any free one."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return 0
    return port


async def proxy_views() -> None:
    """proxy + proxy-diff: the live view on the session of tests/support/claude_code.py, recorded in WORKDIR."""
    from core.proxy.http import shown_upstream
    from core.proxy.record import Recorder
    from core.proxy.thread import ProxyThread
    from tests.support.claude_code import (
        CLAUDE_CODE_USER_AGENT,
        claude_code_session,
        play_claude_code_session,
    )
    from tests.support.fakeapi import FakeAnthropicServer
    from tests.support.proxy import sdk_client
    from tui.proxy_app import ProxyApp
    from tui.widgets.proxy_status import ProxyAbout

    workdir = await fresh_workdir()
    calls = len(claude_code_session())
    with FakeAnthropicServer(port=free_or_any(8789)) as fake:
        recorder = Recorder(workdir)
        recorder.prepare()
        proxy = ProxyThread(fake.base_url, recorder, port=free_or_any(8788))
        proxy.start()
        try:
            about = ProxyAbout(proxy.url, shown_upstream(fake.base_url), f"{recorder.folder}/")
            app = ProxyApp(proxy.events, about, workdir, limit=LIMIT)
            async with app.run_test(size=SIZE) as pilot, \
                    sdk_client(proxy.url, default_headers={"User-Agent": CLAUDE_CODE_USER_AGENT}) as client:
                view = app.view
                await play_claude_code_session(client)

                def settled() -> bool:
                    gauge = view.inspector.gauge.state
                    return (view.status.calls == calls and not view.status.pending
                            and not view.inspector.message_tree.syncing and gauge.count is not None
                            and gauge.count.exact and gauge.window is not None
                            and not any(worker.group in ("forecast", "window") and not worker.is_finished
                                        for worker in app.workers))

                await wait_for(pilot, settled)
                await pilot.press("3")
                timeline = view.inspector.timeline_view
                compacted = next(index for index, sample in enumerate(timeline.samples) if sample.steps)
                timeline.select(compacted)
                await pilot.pause(0.2)
                save(app, "proxy")

                await pilot.press("4")
                diff = view.diff_view
                cleared = compacted - 1  # the call before the compaction: Claude Code cleared an old result
                diff.compare(cleared)
                await wait_for(pilot, lambda: diff.diff is not None and diff.later_index == cleared)
                await pilot.pause(0.2)
                save(app, "proxy-diff")
        finally:
            proxy.stop()


async def compare_view() -> None:
    """compare: the read-only inspector's compare view on the ctxtui fixture session (copied into the
    fixed workdir, so the title shows the same path every run), once the worker has replayed it."""
    from core.sessions.inspection import load_file, report
    from tui.inspect_app import InspectApp
    from tui.widgets.compare_view import CompareView

    workdir = await fresh_workdir()
    session = workdir / "session.jsonl"
    shutil.copyfile(OUT.parent / "tests" / "fixtures" / "engines" / "ctxtui_session.jsonl", session)
    inspected = load_file(session)
    app = InspectApp(inspected, await report(inspected, CompactionSettings()), compare=Settings(workdir=workdir))
    async with app.run_test(size=(80, 34)) as pilot:
        view = app.query_one(CompareView)
        await wait_for(pilot, lambda: view.data is not None and len(view.query("EngineTimeline")) == 4)
        await pilot.pause()
        save(app, "compare")


async def economics_and_ledger(which: str) -> None:
    """The views of screenshots/views_shots.py: "economics", "ledger" or both ("all")."""
    from screenshots.views_shots import economics_views, ledger_views

    if which in ("economics", "all"):
        await economics_views(await fresh_workdir(), save, send, settle)
    if which in ("ledger", "all"):
        await ledger_views(await fresh_workdir(), save, send, settle)


async def main() -> None:
    if sys.argv[1:] in (["economics"], ["ledger"]):
        await economics_and_ledger(sys.argv[1])
        shutil.rmtree(WORKDIR, ignore_errors=True)
        return
    if sys.argv[1:] == ["steering"]:
        await steering_views()
        shutil.rmtree(WORKDIR, ignore_errors=True)
        return
    if sys.argv[1:] == ["proxy"]:
        await proxy_views()
        shutil.rmtree(WORKDIR, ignore_errors=True)
        return
    if sys.argv[1:] == ["compare"]:
        await compare_view()
        shutil.rmtree(WORKDIR, ignore_errors=True)
        return
    await proxy_views()
    await steering_views()
    await demo_over_the_limit()
    await tree_and_archive()
    await small_terminal()
    await views_after_compaction()
    await economics_and_ledger("all")
    await compare_view()
    shutil.rmtree(WORKDIR, ignore_errors=True)


if __name__ == "__main__":
    with workdir_lock():
        asyncio.run(main())
