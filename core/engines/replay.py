"""`ctxtui replay`: real trajectories replayed through every engine, with what each saves and loses.

Each trajectory's calls (its assistant messages) are replayed under each engine by compare.py's loops,
priced by the prefix cache of pricing.py at the file's own times (30 s apart where it has none).
Beside the bill, each request is watched: which tool results it no longer carries whole (the first call
that lacks one is when the engine took it), whether the agent used what that result introduced from
that call on (anchors.py: the regret), and at the end where every anchor is: in the last request
(`kept`), only on disk in the replay's archive or, for a server engine, only in the client's history
(`recoverable`), or nowhere (`lost`).

Across trajectories, `saved_vs_none.share` = 1 - billed(engine) / billed(none), with a 95% interval from
1,000 bootstrap resamples of the trajectories (seeded). Deterministic: the offline model summarises,
files are read in sorted order, and each trajectory replays in a scratch folder of its own.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from core.config import Settings
from core.engines import REPLAY_ENGINES
from core.engines.anchors import AnchorIndex, ResultAnchors, analyse, result_blocks
from core.engines.compare import Replay, run_engine
from core.engines.pricing import Memo
from core.engines.sources import Recorded
from core.history.tokens import TokenCounter
from core.jsonlines import parse_json

Message = dict[str, Any]
ENGINES = REPLAY_ENGINES
DEFAULT_GAP = 30.0  # seconds between calls where the file has no times
SUFFIXES = (".json", ".jsonl", ".traj", ".json.gz", ".jsonl.gz", ".traj.gz")
BOOTSTRAP = 1_000


class ReplayError(ValueError):
    """A file that cannot be replayed: one line naming it and why."""


# --- one trajectory ----------------------------------------------------------------------------------


def load(path: Path) -> Recorded:
    """The calls of the file at `path`: any file `ctxtui inspect` reads, another agent's trajectory
    included; ReplayError (one line) when it is none."""
    from core.engines.sources import recorded_calls
    from core.sessions.inspection import InspectError

    try:
        recorded = recorded_calls(path)
    except InspectError as error:
        raise ReplayError(str(error)) from None
    recorded.times = timed(recorded.times)
    return recorded


def timed(times: Sequence[float | None]) -> list[float | None]:
    """Each call's time: the file's where it has one (never before the call before it), else the
    previous call's + DEFAULT_GAP; None throughout when the file has no time at all."""
    known = [index for index, value in enumerate(times) if isinstance(value, (int, float))]
    if not known:
        return []
    first = known[0]
    start = times[first]
    assert start is not None
    last = float(start) - DEFAULT_GAP * first  # calls before the first time: DEFAULT_GAP apart, up to it
    result: list[float | None] = []
    for index, value in enumerate(times):
        if index >= first and isinstance(value, (int, float)) and value >= last:
            last = float(value)
        elif index > 0:
            last += DEFAULT_GAP
        result.append(last)
    return result


class Watch:
    """What one engine's requests carried: when each tool result first went missing, and the last request."""

    def __init__(
        self, results: ResultAnchors, intact: Callable[[Message], frozenset[str]] | None = None
    ) -> None:
        self.results = results
        self.intact = intact or _intact_function(results)
        self.removed_at: dict[str, int] = {}
        self.last: Sequence[Message] = []

    def __call__(self, number: int, messages: Sequence[Message]) -> None:
        self.last = messages
        produced = (
            self.results.order[: self.results.produced_before[number - 1]]
            if number - 1 < len(self.results.produced_before)
            else self.results.order
        )
        if len(produced) == len(self.removed_at):
            return
        carried: set[str] = set()
        for message in messages:
            carried |= self.intact(message)
        for use_id in produced:
            if use_id not in carried and use_id not in self.removed_at:
                self.removed_at[use_id] = number


def _intact_function(results: ResultAnchors) -> Callable[[Message], frozenset[str]]:
    """The tool results a message carries exactly as recorded (memoised per message object)."""
    memo: dict[int, tuple[Message, frozenset[str]]] = {}
    original = results.original

    def intact(message: Message) -> frozenset[str]:
        found = memo.get(id(message))
        if found is None or found[0] is not message:
            ids = frozenset(
                str(block.get("tool_use_id"))
                for block in result_blocks(message)
                if str(block.get("tool_use_id")) in original
                and (
                    block.get("content") is original[str(block.get("tool_use_id"))]
                    or block.get("content") == original[str(block.get("tool_use_id"))]
                )
            )
            found = memo[id(message)] = (message, ids)
        return found[1]

    return intact


def archive_anchors(scratch: Path, index: AnchorIndex) -> set[str]:
    """The anchors held by the files the replay's archive wrote (read back from disk)."""
    from core.engines.anchors import anchors_of_text

    found: set[str] = set()
    results = scratch / ".task_outputs" / "tool-results"
    for path in sorted(results.glob("[!.]*")) if results.is_dir() else []:  # not the manifest
        found |= anchors_of_text(path.read_text(encoding="utf-8", errors="replace"))
    transcripts = scratch / ".transcripts"
    for path in sorted(transcripts.glob("*.jsonl")) if transcripts.is_dir() else []:
        for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
            message = (
                parse_json(line) if line.strip() else None
            )  # core/jsonlines.py: a bad line costs that line
            found |= index.of_message(message) if isinstance(message, dict) else set()
    return found


def _engine_record(
    replay: Replay, watch: Watch, results: ResultAnchors, index: AnchorIndex, recoverable: set[str]
) -> dict[str, Any]:
    bill = replay.run.bill
    sizes = bill.sizes
    referenced = sum(1 for use_id, call in watch.removed_at.items() if results.referenced_from(use_id, call))
    kept_set = index.of_request(watch.last)
    kept = recovered = lost = 0
    for anchors in results.anchors.values():
        for anchor in anchors:
            if anchor in kept_set:
                kept += 1
            elif anchor in recoverable:
                recovered += 1
            else:
                lost += 1
    return {
        "calls": len(sizes),
        "input_chars": sum(replay.run.chars),
        "input_tokens": bill.input_tokens + bill.cache_read_tokens + bill.cache_write_tokens,
        "billed_input_tokens": round(bill.billed_input(replay.settings.cache_ttl), 1),
        "cost_usd": round(bill.cost, 6) if replay.run.priced else None,
        "peak_tokens": max([replay.run.peak, *sizes]) if sizes else 0,
        "sum_tokens": sum(sizes),
        "steps": dict(sorted(replay.run.steps.items())),
        "summaries": replay.run.summaries,
        "removed": len(watch.removed_at),
        "referenced_later": referenced,
        "anchors": {"kept": kept, "recoverable": recovered, "lost": lost},
    }


Variant = tuple[str, str, Settings]
"""(label, engine, settings): one row of a replay; a sweep replays one engine under many settings."""


def variants_of(engines: Sequence[str], settings: Settings) -> list[Variant]:
    """Each engine under the same settings, labelled by its name."""
    return [(name, name, settings) for name in engines]


async def replay_recorded(
    recorded: Recorded,
    settings: Settings,
    engines: Sequence[str] = ENGINES,
    counter: TokenCounter | None = None,
    variants: Sequence[Variant] | None = None,
) -> dict[str, Any]:
    """One file's calls under each engine (or each variant): its per-trajectory record (with each
    engine's regret and anchors, which the totals add up)."""
    counter = counter or TokenCounter()
    memo = Memo(counter)
    conversation = [
        message
        for call in recorded.calls
        for message in (*call.added, *([call.reply] if call.reply is not None else []))
    ]
    results = analyse(conversation)
    intact = _intact_function(results)
    index = AnchorIndex()
    if not recorded.times and recorded.calls:
        recorded.times = [DEFAULT_GAP * number for number in range(len(recorded.calls))]
    records: dict[str, Any] = {}
    for label, name, chosen in variants or variants_of(engines, settings):
        with tempfile.TemporaryDirectory(prefix="ctxtui-replay-") as scratch:
            watch = Watch(results, intact)
            replay = Replay(name, recorded, chosen, Path(scratch), counter, memo, observe=watch)
            await run_engine(name, replay)
            recoverable = archive_anchors(Path(scratch), index)
            if name.startswith("server"):
                recoverable |= index.of_request(replay.history)
            records[label] = _engine_record(replay, watch, results, index, recoverable)
    return {
        "file": str(recorded.inspected.path),
        "kind": recorded.inspected.kind,
        "model": recorded.model,
        "calls": len(recorded.calls),
        "results": len(results.order),
        "engines": records,
    }


def replay_file(
    path: Path,
    settings: Settings,
    engines: Sequence[str] = ENGINES,
    variants: Sequence[Variant] | None = None,
) -> dict[str, Any]:
    """`replay_recorded` of the file at `path` (ReplayError, one line, when it cannot be read)."""
    return asyncio.run(replay_recorded(load(path), settings, engines, variants=variants))


def _worker(task: tuple[Path, Settings, tuple[str, ...], tuple[Variant, ...] | None]) -> dict[str, Any] | str:
    path, settings, engines, variants = task
    try:
        return replay_file(path, settings, engines, variants)
    except ReplayError as error:
        return str(error)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return f"{path}: cannot be replayed: {error}"


# --- many trajectories ---------------------------------------------------------------------------------


def find_files(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """The files to replay (folders searched for .json, .jsonl and .traj files, sorted), and one line for
    each path that is neither a file nor a folder."""
    found: list[Path] = []
    problems: list[str] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    child
                    for child in path.rglob("*")
                    if child.is_file() and child.name.endswith(SUFFIXES) and ".ctxtui" not in child.parts
                )
            )
        elif path.is_file():
            found.append(path)
        else:
            problems.append(f"{path}: no such file or folder")
    return list(dict.fromkeys(found)), problems


def replay_many(
    files: Sequence[Path],
    settings: Settings,
    engines: Sequence[str] = ENGINES,
    workers: int = 0,
    progress: Callable[[int, int], None] | None = None,
    variants: Sequence[Variant] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every file replayed (in `workers` processes; 0: one per core, 1: in this process); the
    per-trajectory records in file order and one line per file that could not be read."""
    chosen = tuple(variants) if variants is not None else None
    tasks = [(path, settings, tuple(engines), chosen) for path in files]
    workers = workers or min(len(tasks), os.cpu_count() or 1)
    outcomes: list[dict[str, Any] | str] = []
    if workers <= 1 or len(tasks) <= 1:
        for done, task in enumerate(tasks, 1):
            outcomes.append(_worker(task))
            if progress is not None:
                progress(done, len(tasks))
    else:
        import multiprocessing

        context = multiprocessing.get_context(
            "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        )
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            # the largest first, so that no worker is left with a big one at the end
            order = sorted(range(len(tasks)), key=lambda i: -_size(tasks[i][0]))
            futures = {pool.submit(_worker, tasks[i]): i for i in order}
            results: dict[int, dict[str, Any] | str] = {}
            from concurrent.futures import as_completed

            for done, future in enumerate(as_completed(futures), 1):
                results[futures[future]] = future.result()
                if progress is not None:
                    progress(done, len(tasks))
            outcomes = [results[i] for i in range(len(tasks))]
    records = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    problems = [outcome for outcome in outcomes if isinstance(outcome, str)]
    return records, problems


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


SUMMED = (
    "calls",
    "input_chars",
    "input_tokens",
    "billed_input_tokens",
    "cost_usd",
    "sum_tokens",
    "removed",
    "referenced_later",
    "summaries",
)


def _share(engine: Sequence[float], none: Sequence[float]) -> float:
    base = sum(none)
    return 1 - sum(engine) / base if base else 0.0


def interval(
    engine: Sequence[float], none: Sequence[float], seed: int, resamples: int = BOOTSTRAP
) -> list[float]:
    """The 2.5th and 97.5th percentiles of the saved share over bootstrap resamples of the trajectories."""
    count = len(none)
    if count == 0:
        return [0.0, 0.0]
    rng = random.Random(seed)
    shares = []
    for _ in range(resamples):
        picks = [rng.randrange(count) for _ in range(count)]
        shares.append(_share([engine[i] for i in picks], [none[i] for i in picks]))
    shares.sort()
    return [round(shares[int(0.025 * (resamples - 1))], 4), round(shares[int(0.975 * (resamples - 1))], 4)]


def summarise(records: Sequence[dict[str, Any]], engines: Sequence[str], seed: int = 0) -> dict[str, Any]:
    """The contract's JSON from the per-trajectory records."""
    out: dict[str, Any] = {}
    base = (
        [record["engines"]["none"]["billed_input_tokens"] for record in records]
        if "none" in engines
        else None
    )
    for name in engines:
        rows = [record["engines"][name] for record in records]
        totals = {key: sum(row[key] or 0 for row in rows) for key in SUMMED}
        steps: dict[str, int] = {}
        anchors = {"kept": 0, "recoverable": 0, "lost": 0}
        for row in rows:
            for step, count in row["steps"].items():
                steps[step] = steps.get(step, 0) + count
            for key in anchors:
                anchors[key] += row["anchors"][key]
        billed = [row["billed_input_tokens"] for row in rows]
        saved: dict[str, Any] = {"share": None, "ci95": None}
        if base is not None:
            saved = {"share": round(_share(billed, base), 4), "ci95": interval(billed, base, seed)}
        priced = all(row["cost_usd"] is not None for row in rows)
        out[name] = {
            "calls": int(totals["calls"]),
            "input_chars": int(totals["input_chars"]),
            "input_tokens": int(totals["input_tokens"]),
            "billed_input_tokens": round(totals["billed_input_tokens"]),
            "cost_usd": round(totals["cost_usd"], 4) if priced else None,
            "peak_tokens": max((row["peak_tokens"] for row in rows), default=0),
            "mean_tokens": round(totals["sum_tokens"] / totals["calls"]) if totals["calls"] else 0,
            "steps": dict(sorted(steps.items())),
            "summaries": int(totals["summaries"]),
            "saved_vs_none": saved,
            "regret": {
                "removed": int(totals["removed"]),
                "referenced_later": int(totals["referenced_later"]),
                "share": round(totals["referenced_later"] / totals["removed"], 4)
                if totals["removed"]
                else 0.0,
            },
            "anchors": anchors,
        }
    return {
        "trajectories": len(records),
        "calls": sum(record["calls"] for record in records),
        "engines": out,
        "per_trajectory": [
            {
                "file": record["file"],
                "calls": record["calls"],
                "engines": {
                    name: {
                        key: record["engines"][name][key]
                        for key in ("input_chars", "billed_input_tokens", "cost_usd", "peak_tokens")
                    }
                    for name in engines
                },
            }
            for record in records
        ],
    }
