"""Property tests: generated agent sessions run through `Compactor.prepare` after every turn.

A session starts from a user request; each turn the assistant calls 1..4 tools, their results (of
sizes around every threshold, in random unicode with emoji and CJK) come back in one user message,
and sometimes the assistant answers and the user asks something new. After every prepare:

1. every tool_use is answered in the very next message and no tool_result is orphaned;
2. the current request is visible;
3. every marker path exists, is workdir-relative POSIX, and its file holds exactly the replaced text;
4. every message that left the context is in a transcript that reloads to plain messages;
5. the history is within the char limit;
6. the input list is unchanged;
and, from the seed: unseen results (after the last assistant message) are never micro-compacted.
Lossless before lossy:
7. no step returns a larger history than it was given (nor does prepare as a whole);
8. compact_history runs only when every result fit_tool_results could shorten already is shortened;
9. the current request is visible and comes before the tail of work done on it;
10. every message that ever was in the session is, exactly once and in order, in the current
    history or in the transcript part its marker stands for (nothing archived twice, nothing lost).
Steering: `dry_run` reports the steps prepare then takes, with the same figures, and
writes nothing; a pinned result stays in the history byte-exact, in a valid pair, whatever runs.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime
import json
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.archive import Archive
from core.compaction import CompactionSettings, Compactor
from core.events import CompactionStep
from core.history import estimate_chars
from core.history.messages import result_text
from core.markers import persisted_output

Message = dict[str, Any]

SIZES = (0, 1, 119, 120, 121, 500, 2_000, 30_000, 30_001, 60_000, 150_000)
SMALL_SIZES = (0, 1, 119, 120, 121, 500, 2_000)

PERSISTED_RE = re.compile(
    r"\A<persisted-output>\nFull output: (?P<path>[^\n]+)\nPreview:\n(?P<preview>.*)\n</persisted-output>\Z",
    re.DOTALL,
)
PLACEHOLDER_RE = re.compile(r"\A\[Earlier tool result saved at (?P<path>[^\n\]]+)\]\Z")
SNIP_RE = re.compile(r"\A\[(?P<count>\d+) messages archived at (?P<path>[^\n\]]+)\]\Z")
SUMMARY_RE = re.compile(r"\A\[(?:Compacted|Reactive compact)\]\n\nCurrent user request:\n", re.DOTALL)
TRANSCRIPT_PATH_RE = re.compile(r"\A\.transcripts/transcript_[^/]+\.jsonl\Z")
TOOL_RESULT_PATH_RE = re.compile(r"\A\.task_outputs/tool-results/[^/]+\.txt\Z")

HYPOTHESIS_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- strategies ------------------------------------------------------------------------------------

SPICE = list('汉字中文压缩测试😀🎉🙂👍🏽\n\t"\\é\u2028\x85 ')
characters = st.one_of(st.characters(codec="utf-8"), st.sampled_from(SPICE))
seed_strings = st.text(alphabet=characters, min_size=1, max_size=6)
requests = st.text(alphabet=characters, min_size=1, max_size=60).map(lambda text: "request: " + text)


@dataclass(frozen=True)
class Turn:
    """One tool batch; then, when `new_request` is set, the user asks something new.

    With `reply` the assistant answers first; without it the new request follows the tool results
    directly (two user messages in a row), which shifts where the snip cut points land.
    """

    results: tuple[tuple[int, str], ...]
    note: str | None
    reply: str | None
    new_request: str | None


@st.composite
def turns(draw: st.DrawFn, sizes: st.SearchStrategy[int]) -> Turn:
    count = draw(st.integers(1, 4))
    results = tuple((draw(sizes), draw(seed_strings)) for _ in range(count))
    note = draw(st.none() | st.text(alphabet=characters, max_size=30))
    new_request = draw(st.none() | st.none() | requests)
    reply = None
    if new_request is not None:
        reply = draw(st.none() | st.text(alphabet=characters, max_size=40))
    return Turn(results, note, reply, new_request)


def sized_text(seed: str, size: int) -> str:
    return (seed * (size // len(seed) + 1))[:size]


def chars(messages: list[Any]) -> int:
    return len(json.dumps(messages, default=str, ensure_ascii=False))


async def fake_summarize(conversation_text: str, focus: str | None) -> str:
    return f"Summary of {len(conversation_text)} chars of conversation; focus: {focus}."


# --- the checker -------------------------------------------------------------------------------------


def blocks_of(message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def check_pairs(messages: list[Message]) -> None:
    for index, message in enumerate(messages):
        uses = [b["id"] for b in blocks_of(message) if b.get("type") == "tool_use"]
        if uses:
            assert message["role"] == "assistant"
            assert index + 1 < len(messages), f"tool_use {uses} at the end is unanswered"
            following = messages[index + 1]
            assert following["role"] == "user"
            answered = {b.get("tool_use_id") for b in blocks_of(following) if b.get("type") == "tool_result"}
            assert set(uses) <= answered, f"message {index}: {set(uses) - answered} unanswered"
        results = [b.get("tool_use_id") for b in blocks_of(message) if b.get("type") == "tool_result"]
        if results:
            assert message["role"] == "user"
            assert index > 0, "a tool_result opens the history"
            previous = messages[index - 1]
            asked = {b.get("id") for b in blocks_of(previous) if b.get("type") == "tool_use"}
            assert previous["role"] == "assistant" and set(results) <= asked, (
                f"message {index}: orphan {results}"
            )


def check_unseen_not_micro_compacted(messages: list[Message]) -> None:
    last_assistant = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    for message in messages[last_assistant + 1 :]:
        for block in blocks_of(message):
            if block.get("type") == "tool_result":
                value = block.get("content")
                assert not (isinstance(value, str) and PLACEHOLDER_RE.match(value)), (
                    f"unseen {block['tool_use_id']}"
                )


def check_request(messages: list[Message], request: str) -> None:
    marker = "Current user request:\n" + request
    assert any(
        message["role"] == "user"
        and isinstance(message["content"], str)
        and (message["content"] == request or marker in message["content"])
        for message in messages
    ), f"request {request!r} is not visible"


class Checker:
    """Remembers every original tool result and every transcript seen so far in one session."""

    def __init__(self, workdir: Path, settings: CompactionSettings) -> None:
        self.workdir = workdir
        self.settings = settings
        self.originals: dict[str, str] = {}
        self.verified: set[tuple[str, str]] = set()
        self.transcripts: dict[str, list[Message]] = {}
        self.archived_keys: set[str] = set()
        self.events: list[CompactionStep] = []
        self.session: list[Message] = []  # every message ever added, in order
        self.requests: set[str] = set()
        self.work_keys: set[str] = set()  # tool messages added since the current request
        self.pinned: frozenset[str] = frozenset()
        self.dry = False

    # files

    def read_exact(self, path: str) -> str:
        assert "\\" not in path, path
        pure = PurePosixPath(path)
        assert not pure.is_absolute() and ".." not in pure.parts, path
        target = self.workdir / path
        assert target.is_file(), f"{path} does not exist"
        assert self.workdir.resolve() in target.resolve().parents, path
        return target.read_bytes().decode("utf-8")

    def check_saved(self, path: str, tool_use_id: str) -> None:
        if (path, tool_use_id) in self.verified:
            return
        assert TOOL_RESULT_PATH_RE.match(path), path
        assert self.read_exact(path) == self.originals[tool_use_id], f"{path} differs from {tool_use_id}"
        self.verified.add((path, tool_use_id))

    def load_transcript(self, path: str) -> list[Message]:
        if path not in self.transcripts:
            assert TRANSCRIPT_PATH_RE.match(path), path
            text = self.read_exact(path)
            assert text == "" or text.endswith("\n")
            messages = [json.loads(line) for line in text.split("\n")[:-1]]
            for message in messages:
                assert isinstance(message, dict) and message.get("role") in ("user", "assistant")
                assert isinstance(message.get("content"), str | list)
            self.transcripts[path] = messages
            self.check_markers(messages)
            self.archived_keys.update(self.key(message) for message in messages)
        return self.transcripts[path]

    def load_new_transcripts(self) -> None:
        folder = self.workdir / ".transcripts"
        if folder.is_dir():
            for entry in sorted(folder.iterdir()):
                if entry.suffix == ".jsonl" and not entry.name.startswith("."):
                    self.load_transcript(f".transcripts/{entry.name}")

    # markers

    def check_markers(self, messages: list[Message]) -> None:
        largest_preview = max(self.settings.persisted_preview_chars, self.settings.fit_preview_chars)
        for message in messages:
            content = message["content"]
            if isinstance(content, str):
                if match := SNIP_RE.match(content):
                    self.load_transcript(match["path"])
                elif SUMMARY_RE.match(content):
                    self.load_transcript(content.rsplit("\n\nFull transcript: ", 1)[1])
                continue
            for block in blocks_of(message):
                if block.get("type") != "tool_result":
                    continue
                tool_use_id = block["tool_use_id"]
                original = self.originals[tool_use_id]
                value = block.get("content")
                if value == original:
                    continue
                assert isinstance(value, str), value
                if match := PLACEHOLDER_RE.match(value):
                    self.check_saved(match["path"], tool_use_id)
                elif match := PERSISTED_RE.match(value):
                    self.check_saved(match["path"], tool_use_id)
                    preview = match["preview"]
                    assert original.startswith(preview) and len(preview) <= largest_preview
                else:
                    raise AssertionError(f"{tool_use_id} changed without a marker: {value[:200]!r}")

    # whole messages

    def key(self, message: Message) -> str:
        """A message with every tool result put back to its original text."""
        content = message.get("content")
        if isinstance(content, list):
            content = [
                {**block, "content": self.originals.get(str(block.get("tool_use_id")), block.get("content"))}
                if isinstance(block, dict) and block.get("type") == "tool_result"
                else block
                for block in content
            ]
        return json.dumps({**message, "content": content}, sort_keys=True, ensure_ascii=False, default=str)

    def files(self) -> dict[str, bytes]:
        return {
            str(path.relative_to(self.workdir)): path.read_bytes()
            for path in sorted(self.workdir.rglob("*")) if path.is_file()
        }

    async def prepare(self, compactor: Compactor, messages: list[Message], request: str) -> list[Message]:
        snapshot = copy.deepcopy(messages)
        compactor.pinned = self.pinned
        if self.dry:
            files = self.files()
            preview = await compactor.dry_run(messages, request)
            assert self.files() == files, "dry_run wrote to the archive"
            assert messages == snapshot, "dry_run mutated its input"
        result = await compactor.prepare(messages, request)
        if self.dry:
            self.check_preview(preview, self.events)
        assert messages == snapshot, "prepare mutated its input"  # (6)
        check_pairs(result)  # (1)
        check_request(result, request)  # (2)
        check_unseen_not_micro_compacted(result)
        self.check_markers(result)  # (3)
        self.load_new_transcripts()
        if self.pinned:
            self.check_pins(result)
            self.events.clear()
            return result
        kept = Counter(self.key(message) for message in result)
        for index, message in enumerate(messages):  # (4)
            key = self.key(message)
            if kept[key] > 0:
                kept[key] -= 1
            else:
                assert key in self.archived_keys, f"message {index} left the context without a transcript"
        assert chars(result) <= self.settings.context_char_limit, chars(result)  # (5)
        assert estimate_chars(result) == chars(result)
        assert chars(result) <= chars(messages), "prepare grew the history"  # (7)
        for event in self.events:
            assert event.chars_after <= event.chars_before, event
            if event.step == "compact_history" and event.files_written:
                self.check_nothing_left_for_fit(self.load_transcript(event.files_written[0]))  # (8)
        self.events.clear()
        self.check_request_before_its_work(result, request)  # (9)
        self.check_expands_to_the_session(result)  # (10)
        return result

    def check_preview(self, preview: list[CompactionStep], events: list[CompactionStep]) -> None:
        """The dry run's steps are prepare's, figures and files included, up to a summary.

        A transcript's name holds the time and a digest of what it holds, so only its place is
        compared; tool-result paths are compared exactly.
        """
        def name(path: str | None) -> str | None:
            return ".transcripts/(a transcript)" if path and TRANSCRIPT_PATH_RE.match(path) else path

        def named(steps: list[CompactionStep]) -> list[CompactionStep]:
            return [
                dataclasses.replace(
                    step, files_written=tuple(name(path) or path for path in step.files_written),
                    ledger=tuple(dataclasses.replace(entry, path=name(entry.path)) for entry in step.ledger))
                for step in steps
            ]

        preview, events = named(preview), named(events)
        if preview and preview[-1].step == "compact_history":
            *lossless, summary = preview
            assert len(events) > len(lossless), (preview, events)
            assert events[len(lossless)].step == "compact_history"
            assert events[len(lossless)].chars_before == summary.chars_before
            assert events[: len(lossless)] == lossless
        else:
            assert events == preview

    def check_pins(self, messages: list[Message]) -> None:
        """Every pinned result of the session is in the history, byte-exact, right after its tool_use."""
        found: dict[str, int] = {}
        for index, message in enumerate(messages):
            for block in blocks_of(message):
                if block.get("type") == "tool_result" and block.get("tool_use_id") in self.pinned:
                    assert block["content"] == self.originals[block["tool_use_id"]], f"pinned {block['tool_use_id']} changed"
                    found[block["tool_use_id"]] = index
        present = {tool_id for tool_id in self.pinned if tool_id in self.originals}
        assert set(found) == present, f"pinned results gone: {present - set(found)}"

    def check_nothing_left_for_fit(self, history: list[Message]) -> None:
        """No tool result in the input of compact_history could still be shortened by fit."""
        preview_chars = self.settings.fit_preview_chars
        for message in history:
            for block in blocks_of(message):
                if block.get("type") != "tool_result":
                    continue
                content = block.get("content", "")
                if isinstance(content, str) and PLACEHOLDER_RE.match(content):
                    continue
                if isinstance(content, str) and (match := PERSISTED_RE.match(content)):
                    assert len(match["preview"]) <= preview_chars, f"{block['tool_use_id']} kept a long preview"
                    continue
                text = result_text(content)
                if len(text) <= preview_chars:
                    continue
                path = f".task_outputs/tool-results/{block['tool_use_id']}.txt"
                shorter = len(json.dumps(persisted_output(path, text[:preview_chars]), ensure_ascii=False))
                assert shorter >= len(json.dumps(content, ensure_ascii=False)), (
                    f"compact_history ran while fit could still shorten {block['tool_use_id']}"
                )

    def check_request_before_its_work(self, messages: list[Message], request: str) -> None:
        marker = "Current user request:\n" + request
        shown = [
            index for index, message in enumerate(messages)
            if message["role"] == "user" and isinstance(message["content"], str)
            and (message["content"] == request or marker in message["content"])
        ]
        for index, message in enumerate(messages):
            if self.key(message) in self.work_keys:
                assert shown[0] < index, f"message {index} of the current work comes before the request"

    def expand(self, messages: list[Message]) -> list[Message]:
        """Every marker replaced, recursively, by the messages its transcript part holds."""
        out: list[Message] = []
        for index, message in enumerate(messages):
            content = message["content"]
            if isinstance(content, str) and (match := SNIP_RE.match(content)):
                out += self.stands_for(match["path"], int(match["count"]), index)
            elif isinstance(content, str) and SUMMARY_RE.match(content):
                out += self.expand(self.load_transcript(content.rsplit("\n\nFull transcript: ", 1)[1]))
            else:
                out.append(message)
        return out

    def stands_for(self, path: str, count: int, index: int) -> list[Message]:
        whole = self.load_transcript(path)
        middle: list[Message] = []
        position = index
        while len(middle) < count:
            assert position < len(whole), f"{path} holds fewer messages than its marker counts"
            item = whole[position]
            nested = SNIP_RE.match(item["content"]) if isinstance(item["content"], str) else None
            middle += [item] if nested is None else self.stands_for(nested["path"], int(nested["count"]), position)
            position += 1
        assert len(middle) == count, f"the marker of {path} counts {count}, stands for {len(middle)}"
        return middle

    def check_expands_to_the_session(self, messages: list[Message]) -> None:
        expanded = [self.key(message) for message in self.expand(messages)]
        originals = [self.key(message) for message in self.session]
        copies = {self.key({"role": "user", "content": request}) for request in self.requests}
        position = 0
        for key in expanded:
            if position < len(originals) and key == originals[position]:
                position += 1
            else:
                assert key in copies, "a message is archived twice or out of order"
        assert position == len(originals), f"message {position} of the session is lost"


async def run_session(
    session: list[Turn], first_request: str, compaction: CompactionSettings, *, pin_every: int = 0, dry: bool = False
) -> None:
    """Run the session; with `pin_every` every n-th tool result is pinned; with `dry` each prepare is
    preceded by a dry run that must predict it."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        checker = Checker(workdir, compaction)
        checker.dry = dry
        compactor = Compactor(Archive(workdir), summarize=fake_summarize, settings=compaction,
                              on_event=checker.events.append)
        request = first_request
        messages: list[Message] = [{"role": "user", "content": request}]
        checker.session.append(messages[0])
        checker.requests.add(request)
        counter = 0
        for turn in session:
            messages = await checker.prepare(compactor, messages, request)
            uses: list[dict[str, Any]] = []
            results: list[dict[str, Any]] = []
            for size, seed in turn.results:
                counter += 1
                tool_use_id = f"toolu_{counter:04d}"
                if pin_every and counter % pin_every == 0:
                    checker.pinned = checker.pinned | {tool_use_id}
                text = sized_text(seed, size)
                checker.originals[tool_use_id] = text
                uses.append(
                    {"type": "tool_use", "id": tool_use_id, "name": "read_file", "input": {"path": seed}}
                )
                results.append({"type": "tool_result", "tool_use_id": tool_use_id, "content": text})
            content = ([{"type": "text", "text": turn.note}] if turn.note else []) + uses
            added: list[Message] = [{"role": "assistant", "content": content}, {"role": "user", "content": results}]
            checker.work_keys.update(checker.key(message) for message in added)
            if turn.new_request is not None:
                if turn.reply is not None:
                    added.append({"role": "assistant", "content": [{"type": "text", "text": turn.reply or "done"}]})
                added.append({"role": "user", "content": turn.new_request})
                request = turn.new_request
                checker.requests.add(request)
                checker.work_keys.clear()
            checker.session += added
            messages = [*messages, *added]
        await checker.prepare(compactor, messages, request)


@HYPOTHESIS_SETTINGS
@given(session=st.lists(turns(st.sampled_from(SIZES)), min_size=1, max_size=8), first_request=requests)
def test_sessions_with_default_settings(session: list[Turn], first_request: str) -> None:
    asyncio.run(run_session(session, first_request, CompactionSettings()))


@HYPOTHESIS_SETTINGS
@given(
    session=st.lists(
        turns(st.one_of(st.sampled_from(SMALL_SIZES), st.sampled_from(SMALL_SIZES), st.sampled_from(SIZES))),
        min_size=4,
        max_size=14,
    ),
    first_request=requests,
    limit=st.sampled_from([50_000, 150_000, 400_000]),
    keep_head=st.sampled_from([2, 3]),
)
@pytest.mark.slow
def test_sessions_with_small_snip_settings(
    session: list[Turn], first_request: str, limit: int, keep_head: int
) -> None:
    """Snip fires every few turns here, so pair protection and the re-added request get exercised."""
    compaction = CompactionSettings(
        context_char_limit=limit, snip_trigger_messages=12, snip_target_messages=8, snip_keep_head=keep_head
    )
    asyncio.run(run_session(session, first_request, compaction))


@HYPOTHESIS_SETTINGS
@given(
    session=st.lists(turns(st.sampled_from((0, 500, 1_500, 5_000, 12_000, 20_000))), min_size=2, max_size=10),
    first_request=requests,
    limit=st.sampled_from([6_000, 12_000, 30_000]),
    keep=st.sampled_from([0, 1, 3]),
)
def test_sessions_with_small_limits(session: list[Turn], first_request: str, limit: int, keep: int) -> None:
    """Reads overflow the limit often: fit must shorten the kept reads before any summary runs."""
    compaction = CompactionSettings(
        context_char_limit=limit, keep_recent_results=keep, snip_trigger_messages=16, snip_target_messages=10
    )
    asyncio.run(run_session(session, first_request, compaction))


@HYPOTHESIS_SETTINGS
@given(
    session=st.lists(turns(st.sampled_from(SIZES)), min_size=1, max_size=8),
    first_request=requests,
    small=st.booleans(),
)
@pytest.mark.slow
def test_dry_run_predicts_every_prepare(session: list[Turn], first_request: str, small: bool) -> None:
    compaction = (
        CompactionSettings(context_char_limit=12_000, snip_trigger_messages=12, snip_target_messages=8)
        if small else CompactionSettings()
    )
    asyncio.run(run_session(session, first_request, compaction, dry=True))


@HYPOTHESIS_SETTINGS
@given(
    session=st.lists(turns(st.sampled_from((0, 121, 2_000, 12_000, 30_001, 60_000))), min_size=2, max_size=10),
    first_request=requests,
    pin_every=st.sampled_from([1, 2, 3, 5]),
    limit=st.sampled_from([12_000, 50_000]),
)
@pytest.mark.slow
def test_pinned_results_survive_every_step(
    session: list[Turn], first_request: str, pin_every: int, limit: int
) -> None:
    compaction = CompactionSettings(context_char_limit=limit, snip_trigger_messages=12, snip_target_messages=8)
    asyncio.run(run_session(session, first_request, compaction, pin_every=pin_every, dry=True))


# --- estimate_chars ---------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=characters)
    | st.dates(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
messages_lists = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": json_values},
        optional={"extra": json_values},
    ),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(messages=messages_lists)
def test_estimate_chars_is_the_json_length(messages: list[Message]) -> None:
    expected = len(json.dumps(messages, default=str, ensure_ascii=False))
    assert estimate_chars(messages) == expected
    assert estimate_chars(messages) == expected  # again, from the cache


@settings(max_examples=100, deadline=None)
@given(messages=messages_lists, more=messages_lists, new_content=json_values)
def test_estimate_chars_on_shared_and_growing_lists(
    messages: list[Message], more: list[Message], new_content: Any
) -> None:
    estimate_chars(messages)
    grown = [*messages, *more]
    assert estimate_chars(grown) == chars(grown)
    reordered = list(reversed(grown))
    assert estimate_chars(reordered) == chars(reordered)
    if grown:
        grown[0] = {**grown[0], "content": new_content}
        assert estimate_chars(grown) == chars(grown)
        grown[-1]["content"] = new_content
        assert estimate_chars(grown) == chars(grown)


def test_estimate_chars_after_in_place_edits_of_nested_content() -> None:
    """The contract says exactly the JSON length; editing a block in place must not leave it stale."""
    message: Message = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
    }
    messages = [message]
    assert estimate_chars(messages) == chars(messages)
    message["content"].append({"type": "text", "text": "appended later"})
    assert estimate_chars(messages) == chars(messages)
    message["content"][0]["content"] = "y" * 1000
    assert estimate_chars(messages) == chars(messages)
    message["cache_control"] = {"type": "ephemeral"}
    assert estimate_chars(messages) == chars(messages)


def test_estimate_chars_handles_non_json_values_with_str() -> None:
    messages = [{"role": "user", "content": [datetime.date(2024, 1, 2), Path("a/b"), ("t", 1)]}]
    assert estimate_chars(messages) == chars(messages)
