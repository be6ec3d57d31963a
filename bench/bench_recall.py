"""Can the model find again what compaction took? search_context on the regret sets of real agent work.

The trajectories of bench_replay.py (99 SWE-bench Verified runs of mini-swe-agent, bench/data/swe100/;
see that script's docstring to get them) are replayed under the `client` and `masking` engines
(core/engines/compare.py), each in a scratch folder whose archive has a recall index (core/recall/).
The regret set is replay's: the tool results an engine took out of a call that the original agent
referenced later (an anchor of the result, core/engines/anchors.py, in the reply to that call or a
later one). For each, at the first such later call (the archive and its index as they were then), the
index is asked for that reference's anchor (the one the reply names first; an error line without its
`E:`), and the hit is right when its file holds the result's text: the tool result's own file (the
manifest records its tool_use id) or a transcript with the result whole in it. Printed per engine:
recall@1 and recall@3 with counts (and by anchor kind), the index's size against the archive's, the
query latency (median, p95; the index caught up first, so this is the query alone) and the indexing
time against the archive's write time, measured in the same run: the time the archive's writes spent
handing batches over (what indexing adds to a write), and the index's own work on its thread.

A second probe asks for a part of each anchor (a path's file name; the middle half of an identifier):
what a model that remembers only part of a name gets.

Run: python bench/bench_recall.py [--data DIR] [--files N] [--tokenizer trigram|unicode61|both]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_replay import DEFAULT_DATA, settings, verified
from core.archive import Archive
from core.engines.anchors import AnchorIndex, ResultAnchors, analyse, strings
from core.engines.compare import Replay, run_engine
from core.engines.pricing import Memo
from core.engines.replay import Watch, load
from core.history.tokens import TokenCounter
from core.jsonlines import BadLine, parse_json
from core.markers import parse_marker
from core.recall import TOKENIZER, RecallIndex

ENGINES = ("client", "masking")
Message = dict[str, Any]


@dataclass
class Figures:
    """One engine's measurements over every trajectory."""

    queries: int = 0
    top1: int = 0
    top3: int = 0
    unarchived: int = 0  # regret results no archive file holds whole (none expected)
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [queries, top1, top3]
    parts: list[int] = field(default_factory=lambda: [0, 0, 0])  # the part probe: [queries, top1, top3]
    latencies: list[float] = field(default_factory=list)
    write_seconds: float = 0.0  # the archive's writes (wall), without the hand-over to the index
    write_cpu: float = 0.0  # the same in the writing threads' CPU time
    taken_seconds: float = 0.0  # the hand-over, in the archive's writing thread (wall)
    taken_cpu: float = 0.0  # the same in that thread's CPU time
    indexed_seconds: float = 0.0  # the index's thread's CPU time: batches, and catching up at a search
    index_bytes: int = 0
    archive_bytes: int = 0
    files: int = 0
    misses: list[str] = field(default_factory=list)


def kind_of(anchor: str) -> str:
    if anchor.startswith("E:"):
        return "error line"
    return "path" if "/" in anchor else "identifier"


def query_of(anchor: str) -> str:
    return anchor[2:] if anchor.startswith("E:") else anchor


def part_of(anchor: str) -> str | None:
    """What a model that remembers part of the anchor would type: a path's last part, an identifier's
    middle half (None for an error line)."""
    if anchor.startswith("E:"):
        return None
    if "/" in anchor:
        name = anchor.rstrip("/").rsplit("/", 1)[-1]
        return name if len(name) >= 3 and name != anchor else None
    quarter = len(anchor) // 4
    middle = anchor[quarter : len(anchor) - quarter]
    return middle if len(middle) >= 4 else None


def first_named(reply: Message, anchors: frozenset[str]) -> str:
    """Of `anchors`, the one the reply names first (the longer on a tie)."""
    text = "\n".join(strings(reply.get("content")))
    return min(anchors, key=lambda anchor: (_position(text, query_of(anchor)), -len(anchor), anchor))


def _position(text: str, needle: str) -> int:
    found = text.find(needle)
    return found if found >= 0 else len(text)


class Holders:
    """Which archive files hold a tool result whole: its own file (by the manifest's id), or a transcript
    line whose tool_result block is the original content."""

    def __init__(self, archive: Archive, results: ResultAnchors) -> None:
        self.archive = archive
        self.results = results
        self._transcripts: dict[str, set[str]] = {}

    def of(self, use_id: str) -> set[str]:
        found = set()
        manifest = self.archive.tool_results_dir / ".manifest"
        if manifest.exists():
            for raw in manifest.read_bytes().split(b"\n"):
                entry = parse_json(raw) if raw.strip() else None
                if isinstance(entry, dict) and entry.get("tool_use_id") == use_id:
                    found.add(f"{self.archive.relative(self.archive.tool_results_dir)}/{entry['name']}")
        for item in self.archive.vouched():
            if item.kind == "transcript":
                if item.path not in self._transcripts:
                    self._transcripts[item.path] = self._whole_results(item.path)
                if use_id in self._transcripts[item.path]:
                    found.add(item.path)
        return found

    def _whole_results(self, path: str) -> set[str]:
        held = set()
        for line in (self.archive.workdir / path).read_text(encoding="utf-8", errors="replace").split("\n"):
            message = parse_json(line) if line.strip() else None
            if isinstance(message, BadLine) or not isinstance(message, dict):
                continue
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                use_id = str(block.get("tool_use_id"))
                original = self.results.original.get(use_id)
                if (
                    original is not None
                    and block.get("content") == original
                    and parse_marker(original) is None
                ):
                    held.add(use_id)
        return held


class Asker:
    """The replay's observer: the Watch of replay.py, then at each call the queries it makes due."""

    def __init__(
        self,
        results: ResultAnchors,
        replies: list[Message],
        index: RecallIndex,
        holders: Holders,
        figures: Figures,
        name: str,
    ) -> None:
        self.watch = Watch(results)
        self.results = results
        self.replies = replies
        self.anchors = AnchorIndex()
        self.index = index
        self.holders = holders
        self.figures = figures
        self.name = name
        self.asked: set[str] = set()

    def __call__(self, number: int, messages: Sequence[Message]) -> None:
        self.watch(number, messages)
        if number > len(self.replies):
            return
        reply = self.replies[number - 1]
        named = self.anchors.of_message(reply)
        for use_id, removed in self.watch.removed_at.items():
            if use_id in self.asked or removed > number:
                continue
            used = self.results.anchors.get(use_id, frozenset()) & named
            if not used:
                continue
            self.asked.add(use_id)
            self.ask(use_id, first_named(reply, frozenset(used)))

    def ask(self, use_id: str, anchor: str) -> None:
        figures = self.figures
        right = self.holders.of(use_id)
        if not right:
            figures.unarchived += 1
            return
        self.index.flush()  # the index caught up: what follows is the query alone
        started = time.perf_counter()
        result = self.index.search_now(query_of(anchor), 3)
        figures.latencies.append(time.perf_counter() - started)
        paths = [hit.path for hit in result.hits]
        kind = figures.by_kind.setdefault(kind_of(anchor), [0, 0, 0])
        top1, top3 = bool(paths[:1]) and paths[0] in right, any(path in right for path in paths[:3])
        figures.queries += 1
        figures.top1 += top1
        figures.top3 += top3
        kind[0] += 1
        kind[1] += top1
        kind[2] += top3
        if not top3 and len(figures.misses) < 400:
            figures.misses.append(
                f"{self.name} {use_id} {anchor[:100]!r} -> {paths} (right: {sorted(right)})"
            )
        part = part_of(anchor)
        if part is not None:
            paths = [hit.path for hit in self.index.search_now(part, 3).hits]
            figures.parts[0] += 1
            figures.parts[1] += bool(paths[:1]) and paths[0] in right
            figures.parts[2] += any(path in right for path in paths[:3])


def timed(method: Callable[..., Any], into: list[float]) -> Callable[..., Any]:
    """`method`, adding its wall time to into[0] and its thread's CPU time to into[1]."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            into[0] += time.perf_counter() - started
            into[1] += time.thread_time() - cpu

    return wrapper


async def replay_one(path: Path, tokenizer: str, figures: dict[str, Figures], counter: TokenCounter) -> None:
    recorded = load(path)
    conversation = [
        message
        for call in recorded.calls
        for message in (*call.added, *([call.reply] if call.reply is not None else []))
    ]
    results = analyse(conversation)
    replies = [message for message in conversation if message.get("role") == "assistant"]
    memo = Memo(counter)
    for name in ENGINES:
        with tempfile.TemporaryDirectory(prefix="ctxtui-recall-") as scratch:
            replay = Replay(name, recorded, settings(), Path(scratch), counter, memo)
            archive = replay.compactor.archive
            index = RecallIndex(archive, tokenizer=tokenizer)
            spent = [0.0, 0.0]
            archive._save_batch_sync = timed(archive._save_batch_sync, spent)  # type: ignore[method-assign]
            archive._save_transcript_sync = timed(archive._save_transcript_sync, spent)  # type: ignore[method-assign]
            row = figures[name]
            replay.observe = Asker(
                results, replies, index, Holders(archive, results), row, f"{path.stem}/{name}"
            )
            await run_engine(name, replay)
            index.flush()
            index.search_now("catch up with the manifests", 1)  # a batch that failed is brought in here
            index.close()
            row.write_seconds += spent[0] - index.stats.taken
            row.write_cpu += spent[1] - index.stats.taken_cpu
            row.taken_cpu += index.stats.taken_cpu
            row.taken_seconds += index.stats.taken
            row.indexed_seconds += index.stats.indexed + index.stats.synced
            row.index_bytes += sum(
                file.stat().st_size
                for file in index.path.parent.glob(index.path.name + "*")
                if file.is_file()
            )
            row.archive_bytes += sum(
                (archive.workdir / item.path).stat().st_size for item in archive.vouched()
            )
            row.files += len(archive.vouched())
            if index.failures:
                print(
                    f"{path.name} {name}: {index.failures} index failures: {index.problem}", file=sys.stderr
                )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * (len(ordered) - 1) + 0.5))] if ordered else 0.0


def report(tokenizer: str, figures: dict[str, Figures], trajectories: int, elapsed: float) -> None:
    def share(hit: int, total: int) -> str:
        return f"{100 * hit / total:5.1f}% {hit:>4}/{total:<4}" if total else "-"

    print(f"\ntokenizer {tokenizer}: {trajectories} trajectories, {elapsed:.0f} s")
    print(
        f"{'engine':<9}{'regret':>7}{'recall@1':>17}{'recall@3':>17}{'part@3':>17}{'index / archive':>24}"
        f"{'query ms p50/p95':>18}"
    )
    for name, row in figures.items():
        latency = (
            f"{1000 * statistics.median(row.latencies):.2f}/{1000 * percentile(row.latencies, 0.95):.2f}"
            if row.latencies
            else "-"
        )
        size = (
            f"{row.index_bytes / 1e6:.1f}/{row.archive_bytes / 1e6:.1f} MB "
            f"{row.index_bytes / max(1, row.archive_bytes):.2f}x"
        )
        print(
            f"{name:<9}{row.queries:>7}{share(row.top1, row.queries):>17}{share(row.top3, row.queries):>17}"
            f"{share(row.parts[2], row.parts[0]):>17}{size:>24}{latency:>18}"
        )
    print(f"{'engine':<9}{'archive writes':>26}{'hand-over (write path)':>34}{'index thread':>22}")
    for name, row in figures.items():
        writes = f"{row.write_seconds:.2f} s, CPU {row.write_cpu:.2f} s"
        handed = (
            f"{1000 * row.taken_seconds:.0f} ms {100 * row.taken_seconds / (row.write_seconds or 1e-9):.1f}%, "
            f"CPU {100 * row.taken_cpu / (row.write_cpu or 1e-9):.2f}%"
        )
        indexed = (
            f"CPU {row.indexed_seconds:.2f} s {100 * row.indexed_seconds / (row.write_cpu or 1e-9):.0f}%"
        )
        print(f"{name:<9}{writes:>26}{handed:>34}{indexed:>22}")
    for name, row in figures.items():
        kinds = ", ".join(
            f"{kind} {100 * top3 / total:.1f}% of {total}"
            for kind, (total, _top1, top3) in sorted(row.by_kind.items())
        )
        print(
            f"  {name}: recall@3 by anchor kind: {kinds}; part probe recall@1 "
            f"{100 * row.parts[1] / max(1, row.parts[0]):.1f}%; {row.files} files archived; "
            f"{row.unarchived} regret results held by no archive file"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--files", type=int, default=0, help="only the first N trajectories (by name)")
    parser.add_argument("--tokenizer", choices=("trigram", "unicode61", "both"), default=TOKENIZER)
    parser.add_argument("--misses", type=Path, help="write the queries that missed the top 3 to this file")
    args = parser.parse_args()
    files = verified(args.data)
    if args.files:
        files = files[: args.files]
    if not files:
        print(f"no trajectories in {args.data}: see bench/bench_replay.py --extract", file=sys.stderr)
        return 2
    counter = TokenCounter()
    for tokenizer in ("trigram", "unicode61") if args.tokenizer == "both" else (args.tokenizer,):
        figures = {name: Figures() for name in ENGINES}
        started = time.perf_counter()
        for path in files:
            asyncio.run(replay_one(path, tokenizer, figures, counter))
        report(tokenizer, figures, len(files), time.perf_counter() - started)
        if args.misses is not None:
            misses = [line for row in figures.values() for line in row.misses]
            Path(f"{args.misses}.{tokenizer}").write_text("\n".join(misses) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
