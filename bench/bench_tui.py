"""How the TUI holds up: typing while a reply streams, and a 5,000-message history in the tree.

(a) Typing while a reply streams (what a person feels). A tiny model (`ChunkModel`, the protocol of
    core/model/base.py) streams small text chunks (2,500 by default) as fast as the event loop lets it
    (one `await asyncio.sleep(0)` per chunk, as a network stream would give way). While the stream
    runs, every 50 ms a thread (like the terminal driver's input thread) sends a real Key event ("x")
    through the driver to the focused prompt; a key's latency is the time until the prompt's
    TextArea.Changed for that key is dispatched (the key has been applied). The peer is a minimal
    Textual app streaming the same chunks into one `Markdown.get_stream()` with a focused TextArea,
    measured the same way in the same run: the rounds alternate ctxtui and the peer (the order
    rotating), the latencies of all rounds are pooled per side, and the ratios of their p50, p95 and
    p99 are printed (goal: p95 and p99 within 1.2x). The event loop's lag is sampled with a 10 ms
    sleep loop. Each round of each side runs in a process of its own, as each app runs for a person:
    ctxtui as the `ctxtui` command starts it (the cyclic collector paused until the first frame,
    which then freezes what the start allocated and sets the youngest generation's threshold:
    tui/startup.py), the peer as a plain Textual app with Python's own collector, and every ctxtui
    round is the first turn of a freshly started app. Each side's stream starts once its app has
    finished starting: for ctxtui, once the work it defers past the first frame is done (the agent
    settled, the tokenizer loaded for the first forecast, no worker running); that work (tiktoken's
    encoder alone holds the interpreter for ~0.1 s) is start-up, not streaming, and the peer has none.
    `--shared` runs every round of both sides in this one process instead (the mode before): a later
    round of either then finds the heap, the imports and the collector thresholds the earlier ones
    left, so the peer runs with the collector ctxtui tuned at its first frame and with the Markdown
    modules ctxtui imported, and a gain of ctxtui's own shows up as the peer's too.
(b) A long history (`--history`). The app starts on an agent whose history already holds N messages (a
    realistic mix: request, assistant text + tool_use, tool_result, reply). We time start-up until
    the tree holds every message (N = 0 and N = 5,000), and then the cost of one more message: append
    it to the history, post HistoryChanged as the agent does, time until the tree has the new node
    (median and worst of 30, for N = 50 and N = 5,000).

(c) The collector (`--collector`). ctxtui alone, as in (a), with the cyclic collector as `ctxtui` sets
    it once the first frame is painted (tui/startup.py: the youngest generation collected every
    YOUNG_THRESHOLD allocations) against Python's own thresholds (700). Here each side runs in
    processes of its own (three rounds each, the sides alternating, four processes per side), since
    the thresholds are per process. The ratios are of the pooled key latencies' percentiles, and of
    the event loop's lag.

(d) Frames while a reply grows (`--frames`): what each frame of a stream costs, without keys and
    without timing noise from how fast the stream runs. Each side writes the same 20 fragments at a
    time into its Markdown stream (the chat's, as a reply streams; the peer's own
    `Markdown.get_stream()`), then waits for the screen to be idle (a frame drawn). The time spent in
    the screen's frame callback (layout and render) is summed over the whole reply, for ctxtui's
    chat and for (a)'s peer, alternating over three rounds in this process; the medians are compared.

Run: python bench/bench_tui.py [--rounds N] [--chunks N] [--shared] [--history] [--collector] [--frames]   (prints the figures; no assertions)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events
from textual.app import App, ComposeResult
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Markdown, TextArea

from core import events as core_events
from core.agent import Agent
from core.archive import Archive
from core.compaction import Compactor
from core.config import Settings
from core.model.base import ModelEvent, ModelResponse, TextChunk
from core.tools import ToolBox, Workspace
from tui import messages as msg
from tui import startup
from tui.app import CtxApp
from tui.startup import pause_collector

TOKENS = 2_500
KEY_EVERY = 0.05
SIZE = (160, 48)


# --- (a) a model that streams 10,000 chunks -------------------------------------------------------------


class ChunkModel:
    """Streams `tokens` short fragments (a word and a space; a paragraph break every 60), then the message."""

    name = "bench-chunks"
    offline = True
    label = "bench model (streamed chunks)"

    def __init__(self, tokens: int = TOKENS) -> None:
        self.tokens = tokens

    def fragments(self) -> list[str]:
        words = ("context", "gauge", "tree", "marker", "stream", "token", "archive", "compact", "result")
        return [
            words[index % len(words)] + ("\n\n" if index % 60 == 59 else " ")
            for index in range(self.tokens)
        ]

    async def stream(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int
    ) -> AsyncIterator[ModelEvent]:
        fragments = self.fragments()
        for fragment in fragments:
            await asyncio.sleep(0)  # give way, as a network stream does between chunks
            yield TextChunk(fragment)
        text = "".join(fragments)
        yield ModelResponse(
            content=[{"type": "text", "text": text}],
            stop_reason="end_turn",
            usage={"input_tokens": 100, "output_tokens": self.tokens},
        )

    async def summarize(self, conversation_text: str, focus: str | None) -> str:
        return "bench summary"

    async def aclose(self) -> None:
        return None


def make_agent(workdir: Path, model: Any, messages: list[dict[str, Any]] | None = None) -> Agent:
    settings = Settings(workdir=workdir, offline=True)
    compactor = Compactor(Archive(workdir), summarize=model.summarize, settings=settings.compaction)
    return Agent(model, ToolBox(Workspace(workdir)), compactor, settings=settings, messages=messages)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


class MarkdownPeer(App[None]):
    """The peer for (a): a minimal app streaming the same fragments into one Markdown widget, a TextArea focused."""

    def compose(self) -> ComposeResult:
        yield Markdown(id="peer-md")
        yield TextArea(id="peer-input")

    def on_mount(self) -> None:
        self.query_one("#peer-input", TextArea).focus()
        self.done = False

    async def stream(self, fragments: list[str]) -> None:
        stream = Markdown.get_stream(self.query_one("#peer-md", Markdown))
        for fragment in fragments:
            await asyncio.sleep(0)  # as ChunkModel gives way between chunks
            await stream.write(fragment)
        await stream.stop()
        self.done = True


async def keys_during(
    app: App[Any], hook_box: list[Callable[[Message], None]], start: Callable[[], Any], done: Callable[[], bool],
    input_of: Callable[[], TextArea], ready: Callable[[], bool] = lambda: True,
) -> dict[str, Any]:
    """Send a key every 50 ms from a thread while `start()`'s stream runs; latencies until applied.
    The stream starts once `ready()` says the app has finished starting."""
    changed: list[float] = []  # dispatch times of the input's TextArea.Changed (one per key)
    seen: dict[int, Message] = {}  # holds the messages too, so that their ids are not reused
    target: list[TextArea] = []  # the input, looked up once: the hook must not query during shutdown

    def hook(message: Message) -> None:
        now = time.perf_counter()
        if (
            isinstance(message, TextArea.Changed)
            and target
            and message.text_area is target[0]
            and id(message) not in seen
        ):
            seen[id(message)] = message
            changed.append(now)

    hook_box.append(hook)

    def every_hook(message: Message) -> None:
        for each in hook_box:
            each(message)

    async with app.run_test(size=SIZE, message_hook=every_hook) as pilot:
        await pilot.pause(0.2)
        await wait_for(pilot, ready, within=60)
        await pilot.pause(0.05)
        target.append(input_of())
        driver = app._driver
        assert driver is not None
        sent: list[float] = []
        lags: list[float] = []
        streaming = True

        def press_keys() -> None:
            """Like the terminal driver's input thread: keys arrive whatever the event loop is doing."""
            while streaming:
                key = events.Key("x", "x")
                key.set_sender(app)
                sent.append(time.perf_counter())
                driver.send_message(key)  # thread-safe: run_coroutine_threadsafe onto the app's loop
                time.sleep(KEY_EVERY)

        async def sample_lag() -> None:
            while streaming:
                begin = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(time.perf_counter() - begin - 0.01)

        started = time.perf_counter()
        await start()
        presser = threading.Thread(target=press_keys, daemon=True)
        presser.start()
        sampler = asyncio.create_task(sample_lag())
        await wait_for(pilot, done, within=600)
        total = time.perf_counter() - started
        streaming = False
        await sampler
        await asyncio.to_thread(presser.join)
        await wait_for(pilot, lambda: len(changed) >= len(sent), within=30)
        latencies = [applied - posted for posted, applied in zip(sent, changed, strict=False)]
        typed = target[0].text.count("x")
    return {"total": total, "latencies": latencies, "keys_sent": len(sent), "keys_typed": typed, "lags": lags}


class _Passed:
    """Awaiting this yields `item` to the event loop as the coroutine it came from yielded it."""

    def __init__(self, item: Any) -> None:
        self.item = item

    def __await__(self) -> Any:
        return (yield self.item)


class PartTimer:
    """(e): the event loop's time per part of the TUI while a reply streams. Each part is a set of
    methods (the handlers the core's events reach, the renders the compositor asks for); a call is
    timed once, at the part's outermost method (a render inside a handler counts once)."""

    def __init__(self) -> None:
        self.total: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._depth: dict[str, int] = {}
        self._undo: list[tuple[type, str, Any]] = []
        self.running = False

    def wrap(self, part: str, cls: type, name: str) -> None:
        original = getattr(cls, name)
        timer = self

        if asyncio.iscoroutinefunction(original):
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                if not timer.running or timer._depth.get(part):
                    return await original(*args, **kwargs)
                # each step of the coroutine is timed, not the awaits between (other work runs then)
                coroutine = original(*args, **kwargs)
                timer._depth[part] = 1
                spent, value, error = 0.0, None, None
                try:
                    while True:
                        begin = time.perf_counter()
                        try:
                            yielded = coroutine.throw(error) if error is not None else coroutine.send(value)
                        except StopIteration as stop:
                            spent += time.perf_counter() - begin
                            return stop.value
                        spent += time.perf_counter() - begin
                        timer._depth[part] = 0
                        try:
                            value, error = await _Passed(yielded), None
                        except BaseException as raised:  # handed to the coroutine, as asyncio would
                            value, error = None, raised
                        timer._depth[part] = 1
                finally:
                    timer._add(part, spent)
                    timer._depth[part] = 0
            wrapper: Any = timed_async
        else:
            def timed(*args: Any, **kwargs: Any) -> Any:
                if not timer.running or timer._depth.get(part):
                    return original(*args, **kwargs)
                timer._depth[part] = 1
                begin = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    timer._add(part, time.perf_counter() - begin)
                    timer._depth[part] = 0
            wrapper = timed
        self._undo.append((cls, name, cls.__dict__.get(name)))
        setattr(cls, name, wrapper)

    def _add(self, part: str, seconds: float) -> None:
        self.total[part] = self.total.get(part, 0.0) + seconds
        self.calls[part] = self.calls.get(part, 0) + 1

    def undo(self) -> None:
        for cls, name, original in reversed(self._undo):
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


PARTS: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    # part: (module, class, methods)
    "chat (the streamed reply)": [
        ("tui.widgets.chat_pane", "ChatPane", ("add_text", "end_assistant")),
        ("tui.widgets.assistant_block", "AssistantBlock", ("render_lines",)),
        ("textual.widgets._markdown", "MarkdownBlock", ("render_lines",)),
        ("textual.widgets._markdown", "Markdown", ("append",)),
    ],
    "message tree": [("tui.widgets.message_tree", "MessageTree", ("push", "apply", "render_lines"))],
    "breakdown": [
        ("tui.history_model", "HistoryModel", ("apply",)),
        ("tui.widgets.inspector", "Inspector", ("_paint_breakdown",)),
    ],
    "gauge": [("tui.widgets.context_gauge", "ContextGauge",
               ("history_changed", "measured", "counted", "sampled", "flush", "render_lines"))],
    "footer": [
        ("tui.widgets.keys_footer", "KeysFooter", ("bindings_changed", "render_lines")),
    ],
    "title bar and busy line": [
        ("tui.widgets.title_bar", "TitleBar", ("set_state", "render_lines")),
        ("tui.widgets.chat_pane", "TurnIndicator", ("render_lines", "_tick")),
    ],
    "prompt (the keys)": [("tui.widgets.chat_input", "ChatInput", ("on_key", "render_lines"))],
}


async def bench_parts(workdir: Path, tokens: int = TOKENS) -> dict[str, Any]:
    """(e): one ctxtui stream with (a)'s keys, each part of the TUI timed (`PARTS`)."""
    import importlib

    timer = PartTimer()
    for part, entries in PARTS.items():
        for module, name, methods in entries:
            cls = getattr(importlib.import_module(module), name)
            for method in methods:
                timer.wrap(part, cls, method)
    model = ChunkModel(tokens)
    agent = make_agent(workdir, model)
    app = CtxApp(agent)
    finished: list[float] = []
    pause_collector()

    def on_finished(message: Message) -> None:
        if isinstance(message, msg.TurnFinished) and not finished:
            finished.append(time.perf_counter())

    async def start() -> None:
        timer.running = True
        await app.submit("stream please")

    try:
        result = await keys_during(app, [on_finished], start, lambda: bool(finished) and app.turns_completed >= 1,
                                   lambda: app.chat.input, lambda: started(app, agent))
    finally:
        timer.running = False
        timer.undo()
        await agent.aclose()
    return {"total": result["total"], "parts": timer.total, "calls": timer.calls}


def started(app: CtxApp, agent: Agent) -> bool:
    """ctxtui's start-up is over: the agent settled, the first forecast's tokenizer loaded, no worker running."""
    return (app.main.agent_settled.is_set() and agent.tokens.loaded
            and not any(worker.is_running for worker in app.workers))


async def bench_stream(workdir: Path, tokens: int = TOKENS) -> dict[str, Any]:
    model = ChunkModel(tokens)
    agent = make_agent(workdir, model)
    app = CtxApp(agent)
    finished: list[float] = []
    pause_collector()  # as `ctxtui` starts (tui/cli): the app's first frame freezes the start-up heap

    def on_finished(message: Message) -> None:
        if isinstance(message, msg.TurnFinished) and not finished:
            finished.append(time.perf_counter())

    async def start() -> None:
        await app.submit("stream please")

    result = await keys_during(app, [on_finished], start, lambda: bool(finished) and app.turns_completed >= 1,
                               lambda: app.chat.input, lambda: started(app, agent))
    result["text_ok"] = agent.messages[-1]["content"][0]["text"] == "".join(model.fragments())
    await agent.aclose()
    return result


async def bench_stream_peer(tokens: int = TOKENS) -> dict[str, Any]:
    app = MarkdownPeer()
    fragments = ChunkModel(tokens).fragments()

    async def start() -> None:
        app.run_worker(app.stream(fragments), exit_on_error=False)

    return await keys_during(app, [], start, lambda: getattr(app, "done", False),
                             lambda: app.query_one("#peer-input", TextArea))


# --- (b) a history of 5,000 messages ------------------------------------------------------------------


def history(count: int) -> list[dict[str, Any]]:
    """`count` messages in the API shape: request, assistant text + tool_use, tool_result, reply."""
    messages: list[dict[str, Any]] = []
    turn = 0
    while len(messages) < count:
        turn += 1
        use_id = f"toolu_bench_{turn:05d}"
        body = "\n".join(f"line {line} of src/module_{turn % 40:02d}.py: value = {turn * line}" for line in range(12))
        messages += [
            {"role": "user", "content": f"read src/module_{turn % 40:02d}.py and explain it"},
            {"role": "assistant", "content": [
                {"type": "text", "text": f"Reading src/module_{turn % 40:02d}.py."},
                {"type": "tool_use", "id": use_id, "name": "read_file", "input": {"path": f"src/module_{turn % 40:02d}.py"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": body}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"Module {turn % 40} defines 12 values."}]},
        ]
    return messages[:count]


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], within: float = 120.0) -> None:
    deadline = time.perf_counter() + within
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not get there in time")
        await asyncio.sleep(0.001)


async def bench_history(workdir: Path, count: int, appends: int = 30) -> dict[str, Any]:
    agent = make_agent(workdir, ChunkModel(), history(count))
    app = CtxApp(agent)
    started = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        tree = app.message_tree
        await wait_for(pilot, lambda: len(tree.entries) == count and not tree.syncing and app.screen.is_mounted)
        await pilot.pause()  # one paint with the full tree
        first_render = time.perf_counter() - started
        costs: list[float] = []

        def tree_has(nodes: int) -> Callable[[], bool]:
            return lambda: len(tree.entries) == nodes and not tree.syncing

        extra = history(count + 4 * appends)[count:]
        for message in extra[:appends]:
            await pilot.pause(0.05)
            before = len(tree.entries)
            start = time.perf_counter()
            agent.messages.append(message)
            change = core_events.Splice(len(agent.messages) - 1, 0, (message,))
            event = core_events.HistoryChanged(len(agent.messages), agent.chars, (change,), "bench")
            app.main.post_message(msg.HistoryChanged(event))  # the screen handles core events
            await wait_for(pilot, tree_has(before + 1))
            costs.append(time.perf_counter() - start)
        nodes_ok = len(tree.entries) == count + appends
        gauge_ok = app.gauge.chars == agent.chars
    await agent.aclose()
    return {"first_render": first_render, "append": costs, "ok": nodes_ok and gauge_ok}


# --- report ---------------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def spread(latencies: list[float]) -> tuple[float, float, float, float]:
    """p50, p95, p99 and the worst of a list of latencies."""
    return (percentile(latencies, 0.50), percentile(latencies, 0.95), percentile(latencies, 0.99), max(latencies))


def in_child(side: str, rounds: int, chunks: int, young: int | None = None) -> list[dict[str, Any]]:
    """`rounds` rounds of (a)'s `side` ("ctxtui" or "peer") in a process of its own ((a), (c));
    `young`: the youngest collector threshold ctxtui sets at its first frame (None: its own)."""
    command = [sys.executable, __file__, "--child", side, "--rounds", str(rounds), "--chunks", str(chunks)]
    if young is not None:
        command += ["--young", str(young)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    results: list[dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])
    return results


async def child_rounds(side: str, rounds: int, chunks: int, young: int | None) -> list[dict[str, Any]]:
    """`in_child`'s rounds, run in the child process: each round's figures."""
    if young is not None:
        startup.YOUNG_THRESHOLD = young  # read by resume_collector at the first frame
    results = []
    with tempfile.TemporaryDirectory(prefix="ctxtui-bench-") as tmp:
        for number in range(rounds):
            if side == "peer":
                results.append(await bench_stream_peer(chunks))
                continue
            if side == "parts":
                workdir = Path(tmp) / f"parts{number}"
                workdir.mkdir()
                results.append(await bench_parts(workdir, chunks))
                continue
            workdir = Path(tmp) / f"child{number}"
            workdir.mkdir()
            results.append(await bench_stream(workdir, chunks))
    return results


async def typing_rounds(root: Path, rounds: int, chunks: int, apart: bool = True) -> dict[str, Any]:
    """(a): `rounds` rounds of ctxtui and the peer, alternating which goes first; latencies pooled per
    side. `apart`: each round of each side in a process of its own (each with its own collector);
    otherwise all in this process (`--shared`)."""
    ours: list[float] = []
    peers: list[float] = []
    lags: list[float] = []
    per_round: list[tuple[float, float]] = []
    text_ok = True
    sent = typed = 0
    for number in range(rounds):
        workdir = root / f"stream{number}"
        workdir.mkdir()
        if apart:
            pair = {side: in_child(side, 1, chunks)[0] for side in (("ctxtui", "peer") if number % 2 == 0 else ("peer", "ctxtui"))}
            mine, peer = pair["ctxtui"], pair["peer"]
        elif number % 2 == 0:
            mine = await bench_stream(workdir, chunks)
            peer = await bench_stream_peer(chunks)
        else:
            peer = await bench_stream_peer(chunks)
            mine = await bench_stream(workdir, chunks)
        ours += mine["latencies"]
        peers += peer["latencies"]
        lags += mine["lags"]
        text_ok = text_ok and mine["text_ok"]
        sent += mine["keys_sent"]
        typed += mine["keys_typed"]
        per_round.append((percentile(mine["latencies"], 0.95) / percentile(peer["latencies"], 0.95),
                          percentile(mine["latencies"], 0.99) / percentile(peer["latencies"], 0.99)))
    return {"ours": ours, "peer": peers, "lags": lags, "text_ok": text_ok, "sent": sent, "typed": typed,
            "per_round": per_round}


async def history_rows(root: Path) -> list[tuple[str, str]]:
    for name in ("h0", "h50", "h5000"):
        (root / name).mkdir()
    empty = await bench_history(root / "h0", 0, appends=1)
    small = await bench_history(root / "h50", 50)
    big = await bench_history(root / "h5000", 5_000)
    return [
        ("(b) start-up until the tree is full: 0 messages", ms(empty["first_render"])),
        ("    5,000 messages", ms(big["first_render"])),
        ("    5,000 vs 0 (extra for the tree)",
         f"+{ms(big['first_render'] - empty['first_render'])} "
         f"({(big['first_render'] - empty['first_render']) / 5_000 * 1e6:,.0f} µs per message)"),
        ("    one more message, history of 50: median / worst",
         f"{ms(statistics.median(small['append']))} / {ms(max(small['append']))}"),
        ("    one more message, history of 5,000: median / worst",
         f"{ms(statistics.median(big['append']))} / {ms(max(big['append']))}"),
        ("    5,000 vs 50 (median append)",
         f"{statistics.median(big['append']) / statistics.median(small['append']):.2f}x"),
        ("    tree and gauge exact afterwards", str(small["ok"] and big["ok"] and empty["ok"])),
    ]


# --- (d) frames while a reply grows ----------------------------------------------------------------------


async def frames_while_growing(side: str, workdir: Path, chunks: int, step: int = 20) -> float:
    """(d): grow `side`'s reply `step` fragments at a time, one frame after each; the seconds spent in
    the screen's frame callback (`Screen._on_timer_update`: layout and render)."""
    from textual.screen import Screen

    spent: list[float] = []
    frame = Screen._on_timer_update

    def timed(screen: Screen[Any]) -> None:
        begin = time.perf_counter()
        try:
            frame(screen)
        finally:
            spent.append(time.perf_counter() - begin)

    fragments = ChunkModel(chunks).fragments()
    app: App[Any]
    agent = None
    if side == "peer":
        app = MarkdownPeer()
    else:
        agent = make_agent(workdir, ChunkModel(chunks))
        app = CtxApp(agent)
    Screen._on_timer_update = timed  # type: ignore[method-assign,assignment]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.5)
            if isinstance(app, CtxApp) and agent is not None:
                await wait_for(pilot, lambda: started(app, agent))
            await pilot.pause()
            spent.clear()
            # both through Markdown.get_stream(): the peer's own, and the chat's (ChatPane.add_text)
            stream = Markdown.get_stream(app.query_one("#peer-md", Markdown)) if isinstance(app, MarkdownPeer) else None
            for start in range(0, len(fragments), step):
                text = "".join(fragments[start : start + step])
                if stream is not None:
                    await stream.write(text)
                elif isinstance(app, CtxApp):
                    await app.chat.add_text(text)
                await pilot.pause()
                await pilot.pause()
            if stream is not None:
                await stream.stop()
            elif isinstance(app, CtxApp):
                await app.chat.end_assistant()
            await pilot.pause()
            total = sum(spent)
    finally:
        Screen._on_timer_update = frame  # type: ignore[method-assign]
    if agent is not None:
        await agent.aclose()
    return total


async def frames_rows(root: Path, chunks: int, rounds: int = 3) -> list[tuple[str, str]]:
    totals: dict[str, list[float]] = {"ctxtui": [], "peer": []}
    for number in range(rounds):
        for side in ("ctxtui", "peer") if number % 2 == 0 else ("peer", "ctxtui"):
            workdir = root / f"frames-{side}{number}"
            workdir.mkdir()
            totals[side].append(await frames_while_growing(side, workdir, chunks))
    mine, theirs = statistics.median(totals["ctxtui"]), statistics.median(totals["peer"])
    return [
        (f"(d) frames while a {chunks:,}-fragment reply grows 20 at a time, median of {rounds} rounds",
         "time in the screen's frames (layout + render)"),
        ("    ctxtui's chat / the peer", f"{ms(mine)} / {ms(theirs)}  ({mine / theirs:.2f}x)"),
        ("    each round: ctxtui / peer", ", ".join(f"{ms(a)} / {ms(b)}" for a, b in zip(
            totals["ctxtui"], totals["peer"], strict=True))),
    ]


# --- (c) the collector's thresholds, each side in processes of its own ----------------------------------


def collector_rows(chunks: int, processes: int = 4, rounds: int = 3) -> list[tuple[str, str]]:
    pooled: dict[int, dict[str, list[float]]] = {}
    sides = (startup.YOUNG_THRESHOLD, 700)
    for number in range(processes):
        for young in sides if number % 2 == 0 else reversed(sides):
            side = pooled.setdefault(young, {"latencies": [], "lags": []})
            for figures in in_child("ctxtui", rounds, chunks, young):
                side["latencies"] += figures["latencies"]
                side["lags"] += figures["lags"]
    ours, python = pooled[sides[0]], pooled[sides[1]]
    mine, theirs = spread(ours["latencies"]), spread(python["latencies"])
    lag_mine = (percentile(ours["lags"], 0.99), max(ours["lags"]))
    lag_theirs = (percentile(python["lags"], 0.99), max(python["lags"]))
    figures_of = " / ".join
    return [
        (f"(c) the collector: ctxtui alone, {processes} processes x {rounds} rounds per side",
         f"{len(ours['latencies'])} / {len(python['latencies'])} keys"),
        (f"    youngest threshold {sides[0]:,} (as ctxtui sets it): p50 / p95 / p99 / worst",
         figures_of(ms(value) for value in mine)),
        ("    Python's own thresholds (700): same", figures_of(ms(value) for value in theirs)),
        ("    ctxtui's setting vs Python's: p50 / p95 / p99 / worst",
         figures_of(f"{a / b:.2f}x" for a, b in zip(mine, theirs, strict=True))),
        ("    event-loop lag p99 / worst: ctxtui's setting vs Python's",
         f"{ms(lag_mine[0])} / {ms(lag_mine[1])} vs {ms(lag_theirs[0])} / {ms(lag_theirs[1])} "
         f"({lag_mine[0] / lag_theirs[0]:.2f}x / {lag_mine[1] / lag_theirs[1]:.2f}x)"),
    ]


def parts_rows(chunks: int, rounds: int = 3) -> list[tuple[str, str]]:
    """(e)'s rows: each part's time on the event loop, the median of `rounds` processes."""
    results = [in_child("parts", 1, chunks)[0] for _ in range(rounds)]
    rows = [(f"(e) the event loop's time per part while {chunks:,} chunks stream (with (a)'s keys), "
             f"median of {rounds} processes", "ms in all / per 1,000 chunks / share of the stream's time")]
    for part in PARTS:
        spent = statistics.median(result["parts"].get(part, 0.0) for result in results)
        calls = statistics.median(result["calls"].get(part, 0) for result in results)
        share = statistics.median(result["parts"].get(part, 0.0) / result["total"] for result in results)
        rows.append((f"    {part} ({calls:,.0f} calls)",
                     f"{spent * 1000:7.1f} ms / {spent * 1000 / chunks * 1000:6.2f} ms / {share:6.1%}"))
    stream = statistics.median(result["total"] for result in results)
    rows.append(("    the whole stream (wall)", f"{stream * 1000:7.1f} ms"))
    return rows


async def main(rounds: int, chunks: int, with_history: bool, collector: bool = False, apart: bool = True,
               frames: bool = False, parts: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="ctxtui-bench-") as tmp:
        root = Path(tmp)
        typing = await typing_rounds(root, rounds, chunks, apart)
        extra = await history_rows(root) if with_history else []
        if frames:
            extra += await frames_rows(root, chunks)
    if collector:
        extra += collector_rows(chunks)
    if parts:
        extra += parts_rows(chunks)

    ours, peer = spread(typing["ours"]), spread(typing["peer"])
    figures = " / ".join
    rows = [
        (f"(a) typing while {chunks:,} chunks stream, {rounds} rounds (a key every 50 ms), "
         + ("each round a process of its own" if apart else "all in one process (--shared)"),
         f"{typing['sent']} keys sent, {typing['typed']} in the prompt"),
        ("    ctxtui: key latency p50 / p95 / p99 / worst", figures(ms(value) for value in ours)),
        ("    peer (minimal app, Markdown.get_stream, same chunks): same", figures(ms(value) for value in peer)),
        ("    ctxtui vs peer: p50 / p95 / p99 / worst (goal p95, p99 <= 1.2x)",
         figures(f"{mine / theirs:.2f}x" for mine, theirs in zip(ours, peer, strict=True))),
        ("    per round: p95 / p99 ratio",
         ", ".join(f"{p95:.2f}x / {p99:.2f}x" for p95, p99 in typing["per_round"])),
        ("    ctxtui event-loop lag (10 ms sleeps) median / worst",
         f"{ms(statistics.median(typing['lags']))} / {ms(max(typing['lags']))}"),
        ("    streamed text == final message", str(typing["text_ok"])),
        *extra,
    ]
    width = max(len(name) for name, _ in rows)
    print(f"ctxtui TUI bench (Textual headless, {SIZE[0]}x{SIZE[1]}, Python {sys.version.split()[0]})")
    print("-" * (width + 40))
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=8, help="rounds of ctxtui and the peer (default 8)")
    parser.add_argument("--chunks", type=int, default=TOKENS, help=f"chunks per stream (default {TOKENS:,})")
    parser.add_argument("--history", action="store_true", help="also run (b), the long history")
    parser.add_argument("--collector", action="store_true", help="also run (c), the collector's thresholds")
    parser.add_argument("--frames", action="store_true", help="also run (d), the frames while a reply grows")
    parser.add_argument("--shared", action="store_true",
                        help="(a): every round of both sides in this one process (they share heap, imports and collector)")
    parser.add_argument("--parts", action="store_true", help="also run (e), the event loop's time per part while streaming")
    parser.add_argument("--child", choices=("ctxtui", "peer", "parts"), help=argparse.SUPPRESS)  # in_child's processes
    parser.add_argument("--young", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        print(json.dumps(asyncio.run(child_rounds(options.child, options.rounds, options.chunks, options.young))))
    else:
        asyncio.run(main(options.rounds, options.chunks, options.history, options.collector, not options.shared,
                         options.frames, options.parts))
