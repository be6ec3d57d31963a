"""How much faster `Compactor.prepare` is than the seed's pipeline, on the same histories.

(a) `core.compaction.Compactor.prepare`: incremental sizes, copy-on-write edits, async archive.
(b) `SeedPipeline.prepare` below: a direct port of the seed 003 code (its fit_tool_results as in the
    upstream reference, shareAI-lab/learn-claude-code s08: every result, largest first), which
    measures the history with `len(json.dumps(messages, default=str, ensure_ascii=False))` at every
    check, including inside the micro_compact and fit_tool_results loops, and writes files
    synchronously.

Cases:
  A  2,000 messages (~3 MB), limits raised so that nothing fires: 20 turns, each appending a tool
     call and its result and then running prepare, as the agent does before every model call.
  B  ~200 messages (~1.5 MB) over the 50,000 limit, snip raised out of the way, so micro_compact
     and fit_tool_results do all the work (fresh copy of the history and fresh workdir per run).

Both pipelines must produce the same history (checked). Run: .venv/bin/python bench/bench_prepare.py
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.archive import Archive, SavedTranscript
from core.compaction import CompactionSettings, Compactor

Message = dict[str, Any]
STUB_SUMMARY = "stub summary"
REQUEST = "Compare every module and list what each one exports."


# --- (b) the seed 003 pipeline, ported ---------------------------------------------------------------


class SeedPipeline:
    """The seed's compactor: whole-history json.dumps at every check, in-place block edits, sync files."""

    def __init__(self, workdir: Path, settings: CompactionSettings) -> None:
        self.workdir = workdir
        self.CONTEXT_CHAR_LIMIT = settings.context_char_limit
        self.TOOL_RESULT_BATCH_CHAR_LIMIT = settings.tool_result_batch_char_limit
        self.LARGE_RESULT_CHAR_LIMIT = settings.large_result_char_limit
        self.PERSISTED_PREVIEW_CHARS = settings.persisted_preview_chars
        self.FIT_PREVIEW_CHARS = settings.fit_preview_chars
        self.KEEP_RECENT_RESULTS = settings.keep_recent_results
        self.MICRO_MIN_CHARS = settings.micro_min_chars
        self.SNIP_TRIGGER_MESSAGES = settings.snip_trigger_messages
        self.SNIP_TARGET_MESSAGES = settings.snip_target_messages
        self.micro_target_ratio = settings.micro_target_ratio
        self._counter = itertools.count(1)
        self.io_seconds = 0.0  # time spent writing files (reported apart)

    # measuring and predicates

    @staticmethod
    def estimate_chars(messages: list[Message]) -> int:
        return len(json.dumps(messages, default=str, ensure_ascii=False))

    @staticmethod
    def has_tool_use(message: Message) -> bool:
        content = message.get("content")
        return (
            message.get("role") == "assistant"
            and isinstance(content, list)
            and any(isinstance(block, dict) and block.get("type") == "tool_use" for block in content)
        )

    @staticmethod
    def is_tool_result(message: Message) -> bool:
        content = message.get("content")
        return (
            message.get("role") == "user"
            and isinstance(content, list)
            and any(isinstance(block, dict) and block.get("type") == "tool_result" for block in content)
        )

    # files

    def save_output(self, tool_use_id: str, content: str) -> str:
        start = time.perf_counter()
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool_use_id) or "unknown"
        path = self.workdir / ".task_outputs" / "tool-results" / f"{safe}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        self.io_seconds += time.perf_counter() - start
        return path.relative_to(self.workdir).as_posix()

    def persist_large_output(self, tool_use_id: str, output: str, preview_chars: int) -> str:
        path = self.save_output(tool_use_id, output)
        return f"<persisted-output>\nFull output: {path}\nPreview:\n{output[:preview_chars]}\n</persisted-output>"

    def persisted_output_path(self, content: str) -> str | None:
        match = re.match(r"<persisted-output>\nFull output: ([^\n]+)\n", content)
        if match and (self.workdir / match.group(1)).is_file():
            return match.group(1)
        return None

    def write_transcript(self, messages: list[Message]) -> str:
        start = time.perf_counter()
        path = self.workdir / ".transcripts" / f"transcript_{time.time_ns()}_{next(self._counter)}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for message in messages:
                handle.write(json.dumps(message, default=str, ensure_ascii=False) + "\n")
        self.io_seconds += time.perf_counter() - start
        return path.relative_to(self.workdir).as_posix()

    # the steps

    def tool_result_budget(self, messages: list[Message]) -> list[Message]:
        last = messages[-1] if messages else None
        if not last or last.get("role") != "user" or not isinstance(last.get("content"), list):
            return messages
        blocks = [
            block
            for block in last["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        total = sum(len(str(block.get("content", ""))) for block in blocks)
        ranked = sorted(blocks, key=lambda block: len(str(block.get("content", ""))), reverse=True)
        for block in ranked:
            if total <= self.TOOL_RESULT_BATCH_CHAR_LIMIT:
                break
            content = str(block.get("content", ""))
            if len(content) <= self.LARGE_RESULT_CHAR_LIMIT:
                continue
            block["content"] = self.persist_large_output(
                block.get("tool_use_id", "unknown"), content, self.PERSISTED_PREVIEW_CHARS
            )
            total = sum(len(str(item.get("content", ""))) for item in blocks)
        return messages

    def snip_compact(self, messages: list[Message]) -> list[Message]:
        if len(messages) < self.SNIP_TRIGGER_MESSAGES:
            return messages
        head_end = 3
        tail_start = len(messages) - (self.SNIP_TARGET_MESSAGES - head_end - 1)
        if self.has_tool_use(messages[head_end - 1]):
            while head_end < tail_start and self.is_tool_result(messages[head_end]):
                head_end += 1
        if (
            tail_start > 0
            and self.is_tool_result(messages[tail_start])
            and self.has_tool_use(messages[tail_start - 1])
        ):
            tail_start -= 1
        transcript = self.write_transcript(messages)
        marker = {"role": "user", "content": f"[{tail_start - head_end} messages archived at {transcript}]"}
        return [*messages[:head_end], marker, *messages[tail_start:]]

    @staticmethod
    def tool_results(messages: list[Message]) -> list[tuple[int, int, dict[str, Any]]]:
        found = []
        for index, message in enumerate(messages):
            if message.get("role") == "user" and isinstance(message.get("content"), list):
                for block_index, block in enumerate(message["content"]):
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found.append((index, block_index, block))
        return found

    def unseen_tool_result_positions(self, messages: list[Message]) -> set[tuple[int, int]]:
        last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        return {(i, b) for i, b, _ in self.tool_results(messages) if i > last_assistant}

    def micro_compact(self, messages: list[Message], target_chars: int) -> list[Message]:
        results = self.tool_results(messages)
        unseen = self.unseen_tool_result_positions(messages)
        consumed = [entry for entry in results if entry[:2] not in unseen]
        for _, _, block in consumed[: -self.KEEP_RECENT_RESULTS]:
            if self.estimate_chars(messages) <= target_chars:
                break
            content = str(block.get("content", ""))
            if len(content) <= self.MICRO_MIN_CHARS:
                continue
            saved_path = self.persisted_output_path(content)
            if not saved_path:
                saved_path = self.save_output(block["tool_use_id"], content)
            block["content"] = f"[Earlier tool result saved at {saved_path}]"
        return messages

    def fit_tool_results(self, messages: list[Message], target_chars: int) -> list[Message]:
        """The reference's fit: every tool result, unseen or read, largest first."""
        blocks = [block for _, _, block in self.tool_results(messages)]
        for block in sorted(blocks, key=lambda item: len(str(item.get("content", ""))), reverse=True):
            if self.estimate_chars(messages) <= target_chars:
                break
            output = str(block.get("content", ""))
            replacement = self.persisted_preview(block["tool_use_id"], output, self.FIT_PREVIEW_CHARS)
            if len(replacement) < len(output):
                block["content"] = replacement
        return messages

    def persisted_preview(self, tool_use_id: str, output: str, preview_chars: int) -> str:
        """A <persisted-output> block; an output that already names its file keeps it (preview from the file)."""
        saved = self.persisted_output_path(output)
        if saved is None:
            return self.persist_large_output(tool_use_id, output, preview_chars)
        start = time.perf_counter()
        with (self.workdir / saved).open(encoding="utf-8") as handle:
            preview = handle.read(preview_chars)
        self.io_seconds += time.perf_counter() - start
        return f"<persisted-output>\nFull output: {saved}\nPreview:\n{preview}\n</persisted-output>"

    def compact_history(self, messages: list[Message], active_request: str) -> list[Message]:
        transcript = self.write_transcript(messages)
        summary = STUB_SUMMARY
        return [
            {
                "role": "user",
                "content": (
                    f"[Compacted]\n\nCurrent user request:\n{active_request}\n\n"
                    f"Conversation summary (reference only):\n{json.dumps(summary, ensure_ascii=False)}\n\n"
                    f"Full transcript: {transcript}"
                ),
            }
        ]

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        messages = self.tool_result_budget(messages)
        before_snip = messages
        messages = self.snip_compact(messages)
        marker = f"Current user request:\n{active_request}\n\nConversation summary (reference only):"
        if messages is not before_snip and not any(
            message.get("role") == "user"
            and isinstance(message.get("content"), str)
            and (message["content"] == active_request or marker in message["content"])
            for message in messages
        ):
            messages.append({"role": "user", "content": active_request})
        if self.estimate_chars(messages) > self.CONTEXT_CHAR_LIMIT:
            target = int(self.CONTEXT_CHAR_LIMIT * self.micro_target_ratio)
            messages = self.micro_compact(messages, target)
            if self.estimate_chars(messages) > self.CONTEXT_CHAR_LIMIT:
                messages = self.fit_tool_results(messages, target)
            if self.estimate_chars(messages) > self.CONTEXT_CHAR_LIMIT:
                messages = self.compact_history(messages, active_request)
        return messages


# --- histories -------------------------------------------------------------------------------------


def result_text(tag: str, size: int) -> str:
    line = f"{tag}: def handler(request): return render(request, '模板.html')  # ✓\n"
    return (line * (size // len(line) + 1))[:size]


def tool_pair(tool_id: str, size: int) -> list[Message]:
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the next file."},
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": "read_file",
                    "input": {"path": f"src/{tool_id}.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": result_text(tool_id, size)}
            ],
        },
    ]


def history_a() -> list[Message]:
    """2,000 messages, about 3 MB: a request and 999 read calls with ~3,000-char results, plus one more."""
    messages: list[Message] = [{"role": "user", "content": REQUEST}]
    for number in range(999):
        messages.extend(tool_pair(f"toolu_a_{number:04d}", 2_960))
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Still reading."}]})
    return messages


def history_b() -> list[Message]:
    """199 messages, about 1.5 MB: 98 read results and an unseen batch of two 30,000-char results.

    The 95 older read results have 15,500 chars; the 3 newest (which micro_compact keeps) 2,000,
    so that micro_compact and fit_tool_results bring it under the limit without a summary.
    """
    messages: list[Message] = [{"role": "user", "content": REQUEST}]
    for number in range(98):
        messages.extend(tool_pair(f"toolu_b_{number:04d}", 15_500 if number < 95 else 2_000))
    messages.append(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_b_last_1",
                    "name": "read_file",
                    "input": {"path": "big1.py"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_b_last_2",
                    "name": "read_file",
                    "input": {"path": "big2.py"},
                },
            ],
        }
    )
    messages.append(
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b_last_1",
                    "content": result_text("last1", 30_000),
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b_last_2",
                    "content": result_text("last2", 30_000),
                },
            ],
        }
    )
    return messages


SETTINGS_A = CompactionSettings(
    context_char_limit=1_000_000_000,
    snip_trigger_messages=1_000_000,
    tool_result_batch_char_limit=1_000_000_000,
)
SETTINGS_B = CompactionSettings(snip_trigger_messages=1_000_000)
TURNS_A = 20


class TimedArchive(Archive):
    """The real Archive, timing its writes so that the table can show them apart."""

    io_seconds = 0.0
    files = 0

    async def save_tool_result(self, tool_use_id: str, text: str) -> str:
        start = time.perf_counter()
        try:
            return await super().save_tool_result(tool_use_id, text)
        finally:
            self.io_seconds += time.perf_counter() - start
            self.files += 1

    async def save_tool_results(self, items: list[tuple[str, str]]) -> list[str]:
        start = time.perf_counter()
        try:
            return await super().save_tool_results(items)
        finally:
            self.io_seconds += time.perf_counter() - start
            self.files += len(items)

    async def save_transcript(self, messages: Sequence[Any]) -> SavedTranscript:  # write_transcript comes here too
        start = time.perf_counter()
        try:
            return await super().save_transcript(messages)
        finally:
            self.io_seconds += time.perf_counter() - start
            self.files += 1


async def stub_summarize(conversation_text: str, focus: str | None) -> str:
    return STUB_SUMMARY


def size_of(messages: list[Message]) -> int:
    return len(json.dumps(messages, default=str, ensure_ascii=False))


# --- runs -------------------------------------------------------------------------------------------


def turn_messages(turn: int) -> list[Message]:
    return tool_pair(f"toolu_turn_{turn:02d}", 1_500)


def run_a_seed(base: list[Message], workdir: Path) -> tuple[list[float], list[Message]]:
    pipeline = SeedPipeline(workdir, SETTINGS_A)
    messages = copy.deepcopy(base)
    times = []
    for turn in range(TURNS_A):
        messages = [*messages, *copy.deepcopy(turn_messages(turn))]
        start = time.perf_counter()
        messages = pipeline.prepare(messages, REQUEST)
        times.append(time.perf_counter() - start)
    return times, messages


async def run_a_core(base: list[Message], workdir: Path) -> tuple[list[float], list[Message]]:
    compactor = Compactor(Archive(workdir), summarize=stub_summarize, settings=SETTINGS_A)
    messages = copy.deepcopy(base)  # new message objects: nothing is cached for them yet
    times = []
    for turn in range(TURNS_A):
        messages = [*messages, *copy.deepcopy(turn_messages(turn))]
        start = time.perf_counter()
        messages = await compactor.prepare(messages, REQUEST)
        times.append(time.perf_counter() - start)
    return times, messages


def run_b_seed(base: list[Message]) -> tuple[float, float, list[Message]]:
    """(wall time, time in file writes, result)"""
    messages = copy.deepcopy(base)
    with tempfile.TemporaryDirectory() as tmp:
        pipeline = SeedPipeline(Path(tmp), SETTINGS_B)
        start = time.perf_counter()
        result = pipeline.prepare(messages, REQUEST)
        return time.perf_counter() - start, pipeline.io_seconds, result


async def run_b_core(
    base: list[Message], warm: bool = False
) -> tuple[float, float, int, list[Message], list[str]]:
    """(wall time, time in archive writes, files written, result, steps fired)

    warm: the compactor has already measured every message but the newest, as it has in the agent,
    where each earlier turn's prepare measured the history as it grew.
    """
    messages = copy.deepcopy(base)
    steps: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        archive = TimedArchive(Path(tmp))
        compactor = Compactor(
            archive, summarize=stub_summarize, settings=SETTINGS_B, on_event=lambda e: steps.append(e.step)
        )
        if warm:
            compactor.estimate_chars(messages[:-1])
        start = time.perf_counter()
        result = await compactor.prepare(messages, REQUEST)
        return time.perf_counter() - start, archive.io_seconds, archive.files, result, steps


def median(values: list[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:10.2f} ms"


LABEL = 52


def row(label: str, seed: float, core: float, goal: str) -> str:
    ratio = seed / core if core > 0 else float("inf")
    return f"| {label:<{LABEL}} | {ms(seed)} | {ms(core)} | {ratio:9.1f}x | {goal:>6} |"


def main(repeats: int = 5) -> None:
    base_a = history_a()
    base_b = history_b()
    print(f"Case A: {len(base_a):,} messages, {size_of(base_a):,} chars; {TURNS_A} turns, nothing fires")
    print(f"Case B: {len(base_b):,} messages, {size_of(base_b):,} chars; limit 50,000, snip out of the way")
    print(f"Median of {repeats} runs each.\n")

    a_seed_totals, a_core_totals, a_seed_steady, a_core_steady, a_core_first = [], [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
            seed_times, seed_result = run_a_seed(base_a, Path(one))
            core_times, core_result = asyncio.run(run_a_core(base_a, Path(two)))
        assert seed_result == core_result, "case A: the two pipelines disagree"
        a_seed_totals.append(sum(seed_times))
        a_core_totals.append(sum(core_times))
        a_seed_steady.append(median(seed_times[1:]))
        a_core_steady.append(median(core_times[1:]))
        a_core_first.append(core_times[0])

    b_seed, b_core, b_seed_io, b_core_io, b_warm = [], [], [], [], []
    b_steps: list[str] = []
    b_files = 0
    for _ in range(repeats):
        seed_time, seed_io, seed_result = run_b_seed(base_b)
        core_time, core_io, b_files, core_result, b_steps = asyncio.run(run_b_core(base_b))
        assert seed_result == core_result, "case B: the two pipelines disagree"
        b_seed.append(seed_time)
        b_core.append(core_time)
        b_seed_io.append(seed_io)
        b_core_io.append(core_io)
        warm_time, _, _, warm_result, _ = asyncio.run(run_b_core(base_b, warm=True))
        assert warm_result == seed_result, "case B (warm): the two pipelines disagree"
        b_warm.append(warm_time)
    after = size_of(core_result)
    b_seed_cpu = [total - io for total, io in zip(b_seed, b_seed_io, strict=True)]
    b_core_cpu = [total - io for total, io in zip(b_core, b_core_io, strict=True)]

    header = f"| {'case':<{LABEL}} | {'seed port':>13} | {'Compactor':>13} | {'ratio':>10} | {'goal':>6} |"
    print(header)
    print("|" + "|".join("-" * len(part) for part in header.split("|")[1:-1]) + "|")
    print(
        row(
            "A  one steady-state turn (median of turns 2-20)",
            median(a_seed_steady),
            median(a_core_steady),
            ">=100x",
        )
    )
    print(
        row(
            f"A  all {TURNS_A} turns, incl. the first (cold)",
            median(a_seed_totals),
            median(a_core_totals),
            "-",
        )
    )
    print(row("B  one prepare (micro + fit), wall time", median(b_seed), median(b_core), ">=10x"))
    print(row("B  same, history measured by earlier turns (agent)", median(b_seed), median(b_warm), "-"))
    print(row("B  same, time in archive file writes excluded", median(b_seed_cpu), median(b_core_cpu), "-"))
    print(row("B  time in archive file writes only", median(b_seed_io), median(b_core_io), "-"))
    print()
    print(f"A: Compactor's first (cold) prepare: {median(a_core_first) * 1000:.2f} ms")
    print(
        f"B: steps fired: {', '.join(b_steps)}; {size_of(base_b):,} -> {after:,} chars; identical results: yes"
    )
    print(
        f"B: files written per run: {b_files} (seed port: plain write_text; Archive: temp file then hard link, one thread hop per batch)"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
