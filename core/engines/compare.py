"""`ctxtui inspect FILE --compare`: one session's sequence of requests replayed under every engine.

Each engine sees the same calls (sources.py): before call k the conversation gains what the session
added, the engine does what it does, the request is priced against a prompt cache modelled by prefix
(pricing.py), and the call's recorded reply joins the history. Deterministic: summaries are the
offline model's, in a temporary archive; nothing in the workdir is written.

- "client": the pipeline with the current settings before every call (eager timing), and the compact
  tool where the session's model called it;
- "client cache-aware": only tool_result_budget while the cache is warm (the replay's calls always
  are), everything once the request reaches the ceiling (`cache_ceiling_tokens`, else 80% of the window);
- "server-clear": tool_result_budget on the client, the API's clearing as documented (policies.py);
- "server-compact": tool_result_budget on the client; past the trigger the request is summarised (the
  offline summarizer stands in for the server's) into a compaction block that later requests start from.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from core.archive import Archive
from core.compaction import Compactor
from core.compaction.run import Outcome
from core.config import Settings
from core.engines.edits import server_engine
from core.engines.policies import clear_candidates, result_of, seen_from
from core.engines.pricing import Bill, Memo, PrefixCache, Running, same_prefix
from core.engines.sources import Recorded
from core.events import CompactionStep
from core.facts.extract import facts_of
from core.facts.index import escaped
from core.history.blocks import is_compaction
from core.history.messages import current_request
from core.history.sizes import dumps, estimate_chars, list_chars
from core.history.tokens import TokenCounter
from core.model.edits import ServerEngine
from core.model.offline import OfflineModel
from core.text import visible
from core.tools.note import NOTE_TOOL, edit_notes
from core.usage.payback import expected_calls, multipliers, pays_back
from core.usage.prices import Usage, price_for, window_for

Message = dict[str, Any]
Observer = Callable[[int, Sequence[Message]], None]
"""Told each call's number (1-based) and the messages its request sends (replay.py's regret)."""
ENGINES = ("client", "client cache-aware", "server-clear", "server-compact")
REPLAY_STAMP = "20000101-000000-1000"  # a replay's transcripts are named alike every time (Archive.stamp)
CLEARED = "[tool result cleared by context management]"
CLEAR_STEP = "server:clear_tool_uses_20250919"
COMPACT_STEP = "server:compact_20260112"  # the API's placeholder is its own; this stands in


@dataclass
class EngineRun:
    """One engine's replay: the contract's figures, and per call what the model read and where it cut."""

    engine: str
    bill: Bill = field(default_factory=Bill)
    summaries: int = 0
    facts_not_visible: int = 0
    cuts: list[int] = field(default_factory=list)  # calls (1-based) before which the engine cut
    final_chars: int = 0
    next_steps: list[str] = field(default_factory=list)
    priced: bool = True
    peak: int = 0
    chars: list[int] = field(default_factory=list)  # estimate_chars of each request's messages
    steps: dict[str, int] = field(default_factory=dict)  # step -> calls before which it saved something

    def record(self) -> dict[str, Any]:
        sizes = self.bill.sizes
        return {
            "engine": self.engine,
            "calls": len(sizes),
            "peak_tokens": max([self.peak, *sizes]),
            "mean_tokens": round(sum(sizes) / len(sizes)) if sizes else 0,
            "input_tokens": self.bill.input_tokens,
            "cache_read_tokens": self.bill.cache_read_tokens,
            "cache_write_tokens": self.bill.cache_write_tokens,
            "output_tokens": self.bill.output_tokens,
            "cost": round(self.bill.cost, 6) if self.priced else None,
            "summaries": self.summaries,
            "facts_not_visible": self.facts_not_visible,
            "cuts": self.cuts,
            "sizes": sizes,
            "chars": self.chars,
            "final_chars": self.final_chars,
            "next_steps": self.next_steps,
        }


class Replay:
    """The shared state of one engine's replay: the history it keeps, its cache, its compactor."""

    def __init__(
        self,
        name: str,
        recorded: Recorded,
        settings: Settings,
        scratch: Path,
        counter: TokenCounter,
        memo: Memo | None = None,
        observe: Observer | None = None,
    ) -> None:
        self.run = EngineRun(name)
        self.recorded = recorded
        self.settings = settings
        self.scratch = scratch
        self.observe = observe
        model = priced_model(recorded, settings)
        price = price_for(model)
        self.run.priced = price is not None
        self.cache = PrefixCache(counter, price, settings.cache_ttl, memo)
        self._tokens = Running(self.cache.memo.tokens)
        self._chars = Running(lambda message: len(self.cache.memo.text(message)))  # what each call sends
        self._history_chars = Running(lambda message: len(self.cache.memo.text(message)))
        self._cleared: dict[int, tuple[Message, tuple[int, ...], Message]] = {}
        self._request_items: list[Message] = []
        self._request = ""
        self.run.bill = self.cache.bill
        self.history: list[Message] = []
        self.offline = OfflineModel()
        archive = Archive(scratch)
        archive.stamp = lambda: REPLAY_STAMP
        self.compactor = Compactor(archive, summarize=self._summarize, settings=settings.compaction)
        self.window = window_for(model).tokens
        self.ceiling = settings.cache_ceiling_tokens or (int(self.window * 0.8) if self.window else 0)

    async def _summarize(self, text: str, focus: str | None) -> str:
        """The offline summarizer, its call counted and priced (uncached input, the summary as output)."""
        summary = await self.offline.summarize(text, focus)
        self.run.summaries += 1
        self.cache.charge(
            Usage(input_tokens=self.cache.tokens_of(text), output_tokens=self.cache.tokens_of(summary))
        )
        return summary

    def request(self) -> str:
        """`current_request(self.history)`, reading only what was added since the last time when
        nothing before it changed."""
        kept = same_prefix(self._request_items, self.history)
        if kept < len(self._request_items) or not self._request_items:
            self._request = request_of(self.history)
        else:
            newer = request_of(self.history[kept:])
            self._request = newer or self._request
        self._request_items = list(self.history)
        return self._request

    async def prepare(self, number: int, hold: bool, masking: bool = False) -> None:
        """The client pipeline on the history (only tool_result_budget with `hold`; with `masking`,
        tool_result_budget and micro_compact only)."""
        await self._apply(number, self.compactor.prepare_events(self.history, self.request(), hold, masking))

    async def compact_tool(self, number: int, reply: Message | None) -> None:
        """The compact tool, as the agent runs it once its results are in: compact_history now."""
        content = reply.get("content") if reply is not None else None
        uses = (
            [
                block
                for block in content
                if isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") == "compact"
            ]
            if isinstance(content, list)
            else []
        )
        if uses:
            focus = (
                uses[-1].get("input", {}).get("focus") if isinstance(uses[-1].get("input"), dict) else None
            )
            await self._apply(
                number,
                self.compactor.compact_events(
                    self.history, current_request(self.history), str(focus) if focus else None
                ),
            )

    def note_tool(self, reply: Message | None) -> None:
        """The note tool, as the agent applies it while it runs the reply's calls: the notes the
        compactor carries change with each call, in order."""
        content = reply.get("content") if reply is not None else None
        for block in content if isinstance(content, list) else ():
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") == NOTE_TOOL
                and isinstance(block.get("input"), dict)
            ):
                notebook = self.compactor.notebook
                limit = self.settings.compaction.notes_char_limit
                notebook.notes = edit_notes(notebook.notes, block["input"], limit).notes

    async def _apply(self, number: int, events: AsyncIterator[Any]) -> None:
        outcome: Outcome | None = None
        fired = False
        async for event in events:
            if isinstance(event, Outcome):
                outcome = event
            elif isinstance(event, CompactionStep) and event.saved > 0:
                fired = True
                self.run.steps[event.step] = self.run.steps.get(event.step, 0) + 1
        if outcome is not None and outcome.changes:
            self.history = list(outcome.messages)
            if fired:
                self.run.cuts.append(number)

    async def holds(self, number: int) -> bool:
        """The cache-aware timing before call `number`: the steps wait while the cache is warm, the
        request is under the ceiling and what they would save does not pay for the cached prefix they
        rewrite within the calls the session is likely to make (core/usage/payback.py)."""
        if not self.cache.warm(self.at(number)):
            return False  # a cold cache is written again whatever the steps do: they cost nothing extra
        if self.ceiling and self.tokens(self.history) >= self.ceiling:
            return False
        steps = await self.compactor.dry_run(self.history, self.request())
        changes = [step for step in steps if step.step != "tool_result_budget" and step.saved > 0]
        if not changes:
            return True  # nothing but the summary (or nothing) would run: it waits for the ceiling
        first = min((step.changed_at[0] for step in changes if step.changed_at is not None), default=0)
        cached = max(0, self.cache.cached_messages())
        invalidated = sum(self.cache.tokens_of(message) for message in self.history[first:cached])
        chars = list_chars_of(self._history_chars.sums(self.history))
        saved = sum(step.saved for step in changes) * (self.tokens(self.history) / chars if chars else 0.25)
        write, read = multipliers(self.cache.price, self.settings.cache_ttl)
        return not pays_back(invalidated, saved, expected_calls(number - 1), write, read)

    def cleared_copy(self, message: Message, positions: tuple[int, ...]) -> Message:
        """`message` with the results at `positions` cleared: the same copy every call that clears the
        same (so the next request shares it, by identity, with the last)."""
        found = self._cleared.get(id(message))
        if found is not None and found[0] is message and found[1] == positions:
            return found[2]
        content = list(message["content"])
        for position in positions:
            content[position] = {**content[position], "content": CLEARED}
        copy = {**message, "content": content}
        self._cleared[id(message)] = (message, positions, copy)
        return copy

    def tokens(self, messages: Sequence[Message]) -> int:
        """The tokens of a request sending `messages` (its tools and system included)."""
        memo = self.cache.memo
        return (
            memo.tokens(self.recorded.tools)
            + memo.tokens(self.recorded.system)
            + self._tokens.total(messages)
        )

    def at(self, number: int) -> float | None:
        """When call `number` (1-based) was made, as the recording says (None: not recorded)."""
        times = self.recorded.times
        return times[number - 1] if number - 1 < len(times) else None

    def send(self, number: int, messages: Sequence[Message], reply: Message | None) -> None:
        """A call's request (what the model reads) priced, with its recorded reply as output."""
        self.run.chars.append(list_chars_of(self._chars.sums(messages)))
        self.cache.request(
            self.recorded.system, self.recorded.tools, messages, self.output(reply), at=self.at(number)
        )
        if self.observe is not None:
            self.observe(number, messages)

    def output(self, reply: Message | None) -> int:
        return self.cache.tokens_of(reply.get("content")) if reply is not None else 0


async def _client(replay: Replay, cache_aware: bool, masking: bool = False) -> list[Message]:
    previous: Message | None = None
    for number, call in enumerate(replay.recorded.calls, 1):
        replay.history.extend(call.added)
        replay.note_tool(previous)
        await replay.compact_tool(number, previous)
        previous = call.reply
        hold = cache_aware and await replay.holds(number)
        await replay.prepare(number, hold, masking)
        replay.send(number, replay.history, call.reply)
        if call.reply is not None:
            replay.history.append(call.reply)
    steps = await replay.compactor.dry_run(replay.history, current_request(replay.history))
    replay.run.next_steps = list(
        dict.fromkeys(step.step for step in steps if step.saved > 0 or step.step == "compact_history")
    )
    return replay.history


async def _none(replay: Replay) -> list[Message]:
    """Every call as recorded: the whole conversation so far, nothing managed (the baseline)."""
    for number, call in enumerate(replay.recorded.calls, 1):
        replay.history.extend(call.added)
        replay.send(number, replay.history, call.reply)
        if call.reply is not None:
            replay.history.append(call.reply)
    return replay.history


def cleared_view(replay: Replay, engine: ServerEngine, messages: list[Message]) -> list[Message]:
    """What the API shows the model of `messages` with clear_tool_uses (as documented)."""
    if replay.tokens(messages) < engine.clear_trigger_tokens:
        return messages
    found = []
    for index, _, use in clear_candidates(messages, engine.clear_keep_tool_uses, engine.clear_exclude_tools):
        where = result_of(messages, str(use.get("id")), index)
        if where is not None and messages[where[0]]["content"][where[1]].get("content") != CLEARED:
            found.append(where)
    freed = sum(replay.cache.tokens_of(messages[i]["content"][j].get("content", "")) for i, j in found)
    if not found or freed < engine.clear_at_least_tokens:
        return messages
    positions: dict[int, list[int]] = {}
    for index, position in found:
        positions.setdefault(index, []).append(position)
    view = list(messages)
    for index, cleared in positions.items():
        view[index] = replay.cleared_copy(messages[index], tuple(cleared))
    return view


def _cleared_count(messages: Sequence[Message]) -> int:
    return sum(
        1
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("content") == CLEARED
    )


class ClearedView:
    """server-clear's view of the replay's history, kept up to date call by call: the same as
    `cleared_view`, at a cost per call of what the history gained (the history only grows, but for
    tool_result_budget's copy of its last message), not of its length."""

    def __init__(self, replay: Replay, engine: ServerEngine) -> None:
        self.replay, self.engine = replay, engine
        self.items: list[Message] = []  # the history as last seen
        self.uses: list[tuple[int, str, str]] = []  # (message index, tool_use id, tool name), oldest first
        self.results: dict[str, tuple[int, int]] = {}  # tool_use id -> (message, block) of its result
        self.view: list[Message] | None = None  # the cleared view of `items` (None: nothing cleared)
        self.compacted = False  # a compaction block came: the general rule from then on
        self.found: dict[int, list[int]] = {}  # message index -> positions of the results cleared there
        self.freed = 0  # tokens of those results
        self.counted = 0  # the uses (oldest first) already weighed

    @property
    def cleared(self) -> int:
        """How many results the view clears."""
        return sum(map(len, self.found.values())) if self.view is not None else 0

    def _scan(self, start: int, before: int) -> None:
        """Forget what was read of messages from `start` on (of `before` read) and read them again."""
        if start < before:
            self.uses = [use for use in self.uses if use[0] < start]
            self.results = {key: where for key, where in self.results.items() if where[0] < start}
        for index in range(start, len(self.items)):
            message = self.items[index]
            content = message.get("content")
            if not isinstance(content, list):
                continue
            self.compacted = self.compacted or any(is_compaction(block) for block in content)
            if message.get("role") == "assistant":
                self.uses.extend(
                    (index, str(block.get("id")), str(block.get("name")))
                    for block in content
                    if isinstance(block, dict) and block.get("type") == "tool_use"
                )
            else:
                for position, block in enumerate(content):
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        self.results.setdefault(str(block.get("tool_use_id")), (index, position))

    def __call__(self, messages: list[Message]) -> list[Message]:
        kept = same_prefix(self.items, messages)
        if kept < len(self.items):  # a message was replaced: count what is cleared again from the start
            self.found, self.freed, self.counted = {}, 0, 0
        before = len(self.items)
        self.items = list(messages)
        self._scan(kept, before)
        if self.compacted:  # the server reads from the newest compaction block on: the general rule
            self.view = None
            return cleared_view(self.replay, self.engine, messages)
        if self.view is not None:
            del self.view[kept:]
        engine = self.engine
        if self.replay.tokens(messages) < engine.clear_trigger_tokens:
            self.view = None
            return messages
        older = max(0, len(self.uses) - engine.clear_keep_tool_uses)
        changed: set[int] = set()
        for index, use_id, name in self.uses[self.counted : older]:  # the uses that became clearable
            where = self.results.get(use_id)
            if name in engine.clear_exclude_tools or where is None or where[0] != index + 1:
                continue
            block = messages[where[0]]["content"][where[1]]
            if block.get("content") == CLEARED:
                continue
            self.found.setdefault(where[0], []).append(where[1])
            self.freed += self.replay.cache.tokens_of(block.get("content", ""))
            changed.add(where[0])
        self.counted = max(self.counted, older)
        if not self.found or self.freed < engine.clear_at_least_tokens:
            self.view = None
            return messages
        if self.view is None:
            self.view, changed = [], set(self.found)
        view = self.view
        view.extend(messages[len(view) :])
        for index in changed | {index for index in self.found if index >= kept}:
            view[index] = self.replay.cleared_copy(messages[index], tuple(self.found[index]))
        return list(view)


async def _server_clear(replay: Replay, engine: ServerEngine) -> list[Message]:
    view: list[Message] = []
    cleared = 0
    clear = ClearedView(replay, engine)
    for number, call in enumerate(replay.recorded.calls, 1):
        replay.history.extend(call.added)
        await replay.prepare(number, True)
        view = clear(replay.history)
        if view is not replay.history and (not replay.run.cuts or replay.run.cuts[-1] != number):
            replay.run.cuts.append(number)
        now = (
            (_cleared_count(view) if clear.compacted else clear.cleared) if view is not replay.history else 0
        )
        if now > cleared:  # a step is a call at which the server cleared results it had not cleared before
            replay.run.steps[CLEAR_STEP] = replay.run.steps.get(CLEAR_STEP, 0) + 1
        cleared = now
        replay.send(number, view, call.reply)
        if call.reply is not None:
            replay.history.append(call.reply)
            view = [*view, call.reply]
    return view


async def _server_compact(replay: Replay, engine: ServerEngine) -> list[Message]:
    system, tools = replay.recorded.system, replay.recorded.tools
    for number, call in enumerate(replay.recorded.calls, 1):
        replay.history.extend(call.added)
        await replay.prepare(number, True)
        seen = replay.history[seen_from(replay.history) :]
        reply = call.reply
        if replay.tokens(seen) >= engine.compact_trigger_tokens:
            summary = await replay.offline.summarize(dumps(seen), engine.compact_instructions or None)
            replay.run.summaries += 1
            replay.run.cuts.append(number)
            replay.run.steps[COMPACT_STEP] = replay.run.steps.get(COMPACT_STEP, 0) + 1
            block = {"type": "compaction", "content": summary}
            replay.run.peak = max(
                replay.run.peak,
                replay.cache.request(
                    system, tools, seen, replay.cache.tokens_of(summary), sampled=False, at=replay.at(number)
                ),
            )
            seen = [{"role": "assistant", "content": [block]}, *call.added]
            reply = {"role": "assistant", "content": [block, *(call.reply or {}).get("content", [])]}
        replay.send(number, seen, call.reply)
        if reply is not None:
            replay.history.append(reply)
    return replay.history[seen_from(replay.history) :]


def _hidden(conversation: Sequence[Message], visible: Sequence[Message]) -> int:
    """The facts of the whole conversation whose exact text the model no longer sees."""
    text = dumps(list(visible))
    keys = {key for message in conversation for key, _ in facts_of(message)}
    return sum(1 for _, fact in keys if escaped(fact) not in text)


def priced_model(recorded: Recorded, settings: Settings) -> str:
    """The model the replay is priced and windowed as: the session's, else (no price known for it, as
    for the offline model) the `model` setting."""
    if recorded.model and price_for(recorded.model) is not None:
        return recorded.model
    return settings.model


async def run_engine(name: str, replay: Replay) -> list[Message]:
    """Replay the recorded calls under engine `name` (one of ENGINES or replay.py's names); returns
    what the model sees at the end."""
    if name == "none":
        return await _none(replay)
    if name.startswith("client") or name == "masking":
        return await _client(
            replay, cache_aware=name != "client" and name != "masking", masking=name == "masking"
        )
    kind: Literal["server-clear", "server-compact"] = (
        "server-clear" if name == "server-clear" else "server-compact"
    )
    engine = server_engine(replace(replay.settings, engine=kind))
    assert engine is not None
    if engine.kind == "server-clear":
        return await _server_clear(replay, engine)
    return await _server_compact(replay, engine)


Progress = Callable[[int, int], None]
"""Told (calls replayed, calls to replay) as a replay goes (a bar on stderr for a long one)."""


def request_of(messages: Sequence[Message]) -> str:
    """The current request, as the agent knows it (`current_request`); in another agent's trajectory,
    where the person's turn is a list of text blocks, the newest such turn's text."""
    found = current_request(messages)
    if found:
        return found
    for message in reversed(messages):
        content = message.get("content")
        if (
            message.get("role") == "user"
            and isinstance(content, list)
            and content
            and all(isinstance(block, dict) and block.get("type") == "text" for block in content)
        ):
            return "\n".join(str(block.get("text", "")) for block in content)
    return ""


def list_chars_of(sums: Sequence[int]) -> int:
    """`estimate_chars` of a list whose messages' JSON lengths run to `sums`."""
    return list_chars([sums[-1]] if sums else [], len(sums))


def _ticker(progress: Progress | None, base: int, total: int) -> Observer | None:
    """An observer that tells `progress` each call replayed, counting from `base` of `total`."""
    if progress is None:
        return None
    tell = progress
    return lambda number, _: tell(base + number, total)


async def compare(recorded: Recorded, settings: Settings, progress: Progress | None = None) -> dict[str, Any]:
    """The contract's JSON: one record per engine (ENGINES), over the same calls."""
    conversation = [
        message
        for call in recorded.calls
        for message in (*call.added, *([call.reply] if call.reply is not None else []))
    ]
    counter = TokenCounter()
    memo = Memo(counter)
    records = []
    calls = len(recorded.calls)
    for done, name in enumerate(ENGINES):
        with tempfile.TemporaryDirectory(prefix="ctxtui-compare-") as scratch:
            replay = Replay(
                name,
                recorded,
                settings,
                Path(scratch),
                counter,
                memo,
                observe=_ticker(progress, done * calls, len(ENGINES) * calls),
            )
            visible = await run_engine(name, replay)
            replay.run.final_chars = estimate_chars(replay.history)
            replay.run.facts_not_visible = _hidden(conversation, visible)
            records.append(replay.run.record())
    return {
        "file": str(recorded.inspected.path),
        "kind": recorded.inspected.kind,
        "model": recorded.model or settings.model,
        "priced_as": priced_model(recorded, settings),
        "engines": records,
    }


COLUMNS = (
    ("engine", -18),
    ("calls", 5),
    ("peak", 7),
    ("mean", 7),
    ("input", 6),
    ("read", 7),
    ("write", 7),
    ("cost", 6),
    ("sum", 3),
    ("lost", 4),
)
"""The table's columns: name and width (negative: left-aligned); a row is its cells joined by spaces."""
NOTES = (
    "peak/mean: tokens read per call; input: uncached; read/write: the prompt cache",
    "sum: summaries; lost: facts (constraints, paths, errors) not visible at the end",
)


def _cells(values: Sequence[Any]) -> list[str]:
    return [
        f"{value:<{-width}}" if width < 0 else f"{value:>{width}}"
        for value, (_, width) in zip(values, COLUMNS, strict=True)
    ]


def header_cells() -> list[str]:
    """The table's header, one padded cell per column."""
    return _cells([name for name, _ in COLUMNS])


def row_cells(row: dict[str, Any]) -> list[str]:
    """One engine's record as the table's padded cells (the figures as the record has them)."""
    cost = f"{row['cost']:.2f}" if row["cost"] is not None else "-"
    return _cells(
        [
            row["engine"],
            row["calls"],
            _k(row["peak_tokens"]),
            _k(row["mean_tokens"]),
            _k(row["input_tokens"]),
            _k(row["cache_read_tokens"]),
            _k(row["cache_write_tokens"]),
            cost,
            row["summaries"],
            row["facts_not_visible"],
        ]
    )


def heading_lines(data: dict[str, Any]) -> list[str]:
    """The two lines above the table: the file and its kind, the model and what it is priced as (the
    session's bytes made visible before the lines are cut to 80 columns, so an escape cannot widen them)."""
    return [
        visible(f"{data['kind']} {data['file']}")[-80:],
        visible(f"model {data['model']}, priced as {data['priced_as']}; tokens, k = 1,000; USD")[:80],
    ]


COST = 7  # the cost column's place in COLUMNS
COST_WIDTH = 6


def cost_texts(costs: Sequence[float | None]) -> list[str]:
    """Each engine's cost in USD, with the fewest decimals (2 to 6) at which costs that differ (to the
    micro-dollar the record keeps) read differently: at cents, engines a few tenths of a cent apart
    looked equal. "-" where no price is known."""
    known = [cost for cost in costs if cost is not None]
    distinct = len({round(cost, 6) for cost in known})
    places = next(
        (places for places in range(2, 7) if len({f"{cost:.{places}f}" for cost in known}) == distinct), 6
    )
    return [f"{cost:.{places}f}" if cost is not None else "-" for cost in costs]


def compare_text(data: dict[str, Any]) -> str:
    """The comparison as a table (80 columns while the costs need at most four decimals): one row per
    engine, each cost with as many decimals as tell the engines apart."""
    costs = cost_texts([row["cost"] for row in data["engines"]])
    width = max([COST_WIDTH, *(len(text) for text in costs)])
    names = header_cells()
    names[COST] = f"{'cost':>{width}}"
    header = " ".join(names)
    lines = [*heading_lines(data), header, "-" * len(header)]
    for row, cost in zip(data["engines"], costs, strict=True):
        cells = row_cells(row)
        cells[COST] = f"{cost:>{width}}"
        lines.append(" ".join(cells))
    lines.extend(NOTES)
    return "\n".join(lines)


def _k(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else str(value)


async def compare_file(
    path: Path, settings: Settings, progress: Progress | None = None, conversation: str | None = None
) -> dict[str, Any]:
    """`compare` of the session file at `path` (InspectError, one line, when it is none); a ctxtui
    session's requests carry ctxtui's own system prompt and tool schemas; `conversation`: which one
    of a proxy recording folder."""
    from core.engines.sources import recorded_calls
    from core.tools import ToolBox, Workspace
    from core.tools.prompt import SYSTEM_PROMPT

    workdir = settings.workdir
    recorded = recorded_calls(
        path, SYSTEM_PROMPT.format(workdir=workdir), ToolBox(Workspace(workdir)).schemas, conversation
    )
    return await compare(recorded, settings, progress)
