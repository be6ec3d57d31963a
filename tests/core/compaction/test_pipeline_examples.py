"""Worked examples and fault cases of the compaction pipeline, against the DESIGN.md contract.

The examples come from the seed texts (003 wins over 000): the 60-message snip, the oversized
tool-result batch, the section 6.7 pair protection, micro_compact's placeholders, compact_history,
reactive_compact, and what must happen when the disk, a marker or the summarizer cannot be trusted.
Every expectation is written from the contract (marker formats, settings, file layout), not from
the implementation.
"""

from __future__ import annotations

import builtins
import copy
import json
from pathlib import Path
from typing import Any

import aiofiles
import pytest

from core.archive import Archive
from core.compaction import CompactionSettings
from core.history import estimate_chars
from tests.support.histories import (
    PERSISTED_RE,
    SNIP_RE,
    TOOL_RESULTS,
    TRANSCRIPT_PATH_RE,
    TRANSCRIPTS,
    Recorder,
    assistant,
    big_text,
    chars,
    entries,
    failing_summarizer,
    load_transcript,
    make_compactor,
    marker_paths,
    one_line_error,
    persisted,
    placeholder_path,
    read_exact,
    same_file,
    steps,
    summary_prefix,
    tool_result,
    tool_use,
    user,
)

Message = dict[str, Any]

# --- the seed's worked examples -----------------------------------------------------------------


def alternating(count: int, size: int = 40) -> list[Message]:
    messages = []
    for index in range(count):
        text = f"message {index}: " + "x" * size
        messages.append(user(text) if index % 2 == 0 else assistant([{"type": "text", "text": text}]))
    return messages


async def test_snip_sixty_plain_messages_keeps_head_marker_and_tail(tmp_path: Path) -> None:
    messages = alternating(60)
    active = messages[58]["content"]
    original = copy.deepcopy(messages)
    compactor, events, summarizer = make_compactor(tmp_path)
    assert chars(messages) < CompactionSettings().context_char_limit

    result = await compactor.prepare(messages, active)

    assert messages == original
    assert len(result) == 30
    assert result[:3] == original[:3]
    assert result[4:] == original[34:]
    marker = result[3]
    assert marker["role"] == "user"
    match = SNIP_RE.match(marker["content"])
    assert match, marker
    assert match["count"] == "31"
    assert TRANSCRIPT_PATH_RE.match(match["path"])
    assert load_transcript(tmp_path, match["path"]) == original
    assert steps(events) == ["snip_compact"]
    assert summarizer.calls == []
    assert estimate_chars(result) == chars(result)


async def test_snip_below_trigger_changes_nothing(tmp_path: Path) -> None:
    messages = alternating(49)
    compactor, events, _ = make_compactor(tmp_path)
    result = await compactor.prepare(messages, messages[48]["content"])
    assert result == messages
    assert events == []
    assert not (tmp_path / TRANSCRIPTS).exists()


async def test_section_6_7_pair_protection(tmp_path: Path) -> None:
    """Seed 000 section 6.7, with seed 003's cut points: head_end 3 -> 4, tail_start 7 -> 6."""
    messages = [
        user("0 user text: please read two files"),
        assistant([{"type": "text", "text": "1 assistant text"}]),
        assistant([tool_use("toolu_first")]),
        user([tool_result("toolu_first", "3 first file contents")]),
        user("4 user text"),
        assistant([{"type": "text", "text": "5 assistant text"}]),
        assistant([tool_use("toolu_second")]),
        user([tool_result("toolu_second", "7 second file contents")]),
        user("8 user text"),
        assistant([{"type": "text", "text": "9 assistant text"}]),
        user("10 user text: the current request"),
        assistant([{"type": "text", "text": "11 assistant text"}]),
    ]
    original = copy.deepcopy(messages)
    # tail_start = 12 - (9 - 3 - 1) = 7 before protection; trigger 10 <= 12.
    settings = CompactionSettings(snip_trigger_messages=10, snip_target_messages=9)
    compactor, events, _ = make_compactor(tmp_path, settings)

    result = await compactor.prepare(messages, "10 user text: the current request")

    assert messages == original
    assert result[:4] == original[:4]
    assert result[5:] == original[6:]
    assert len(result) == 11
    match = SNIP_RE.match(result[4]["content"])
    assert match and match["count"] == "2", result[4]
    assert load_transcript(tmp_path, match["path"]) == original
    assert steps(events) == ["snip_compact"]


async def test_oversized_batch_budget_then_fit(tmp_path: Path) -> None:
    first = big_text(150_000, "first")
    second = big_text(100_000, "second")
    messages = [
        user("read both logs"),
        assistant([tool_use("toolu_big_a", "a.log"), tool_use("toolu_big_b", "b.log")]),
        user([tool_result("toolu_big_a", first), tool_result("toolu_big_b", second)]),
    ]
    original = copy.deepcopy(messages)
    compactor, events, summarizer = make_compactor(tmp_path)

    result = await compactor.prepare(messages, "read both logs")

    assert messages == original
    assert result[:2] == original[:2]
    blocks = result[2]["content"]
    assert [block["tool_use_id"] for block in blocks] == ["toolu_big_a", "toolu_big_b"]

    match_a = persisted(blocks[0]["content"])
    assert match_a["preview"] == first[:2_000]
    assert read_exact(tmp_path, match_a["path"]) == first

    match_b = persisted(blocks[1]["content"])
    assert match_b["preview"] == second[:1_000]
    assert read_exact(tmp_path, match_b["path"]) == second
    assert match_a["path"] != match_b["path"]

    assert steps(events) == ["tool_result_budget", "fit_tool_results"]
    budget, fit = events
    assert budget.chars_before == chars(original)
    assert fit.chars_after == chars(result)
    assert budget.chars_after == fit.chars_before
    assert budget.chars_before > budget.chars_after > fit.chars_after
    assert budget.messages_affected == fit.messages_affected == 1
    assert any(str(path).endswith(match_a["path"]) for path in budget.files_written)
    assert any(str(path).endswith(match_b["path"]) for path in fit.files_written)
    assert chars(result) <= 50_000
    assert summarizer.calls == []


async def test_budget_under_batch_limit_does_nothing(tmp_path: Path) -> None:
    """A batch at most 200,000 chars is left to the later steps (here: nothing is over the limit)."""
    settings = CompactionSettings(context_char_limit=1_000_000)
    messages = [
        user("read"),
        assistant([tool_use("toolu_1"), tool_use("toolu_2")]),
        user(
            [tool_result("toolu_1", big_text(100_000, "a")), tool_result("toolu_2", big_text(100_000, "b"))]
        ),
    ]
    compactor, events, _ = make_compactor(tmp_path, settings)
    result = await compactor.prepare(messages, "read")
    assert result == messages
    assert events == []


def read_session(sizes: list[Any]) -> tuple[list[Message], dict[str, str]]:
    """A request, then one read per entry of `sizes` (an int, or ("blocks", n) for list content).

    Every result but the last is followed by another assistant message, so it has been read;
    the last one is unseen. Returns the messages and each tool_use_id's original text.
    """
    messages: list[Message] = [user("summarise the repository")]
    originals: dict[str, str] = {}
    for number, size in enumerate(sizes):
        tool_id = f"toolu_read_{number:02d}"
        messages.append(assistant([{"type": "text", "text": f"reading {number}"}, tool_use(tool_id)]))
        if isinstance(size, tuple):
            text = big_text(size[1], tool_id)
            content: Any = [{"type": "text", "text": text}]
        else:
            text = big_text(size, tool_id)
            content = text
        originals[tool_id] = text
        messages.append(user([tool_result(tool_id, content)]))
    return messages, originals


async def test_micro_compact_replaces_oldest_read_results(tmp_path: Path) -> None:
    sizes: list[Any] = [100, 120, 6_000, ("blocks", 6_000), *[6_000] * 8, 6_000]
    messages, originals = read_session(sizes)
    original = copy.deepcopy(messages)
    ids = list(originals)
    unseen_id = ids[-1]
    newest_consumed = ids[-4:-1]
    small = ids[:2]
    candidates = ids[2:-4]
    assert chars(messages) > 50_000
    compactor, events, summarizer = make_compactor(tmp_path)

    result = await compactor.prepare(messages, "summarise the repository")

    assert messages == original
    assert steps(events) == ["micro_compact"]
    assert summarizer.calls == []
    contents = {
        block["tool_use_id"]: block["content"]
        for message in result
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    before = {
        block["tool_use_id"]: block["content"]
        for message in original
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    for tool_id in [*small, *newest_consumed, unseen_id]:
        assert contents[tool_id] == before[tool_id], tool_id

    replaced = [tool_id for tool_id in candidates if contents[tool_id] != before[tool_id]]
    assert replaced, "nothing was replaced"
    assert replaced == candidates[: len(replaced)], "micro_compact must go oldest first"
    for tool_id in replaced:
        path = placeholder_path(contents[tool_id])
        assert read_exact(tmp_path, path) == originals[tool_id]

    target = int(50_000 * 0.8)
    assert chars(result) <= target
    # It stopped as soon as it reached the target: without the last replacement it was above.
    undone = copy.deepcopy(result)
    last = replaced[-1]
    for message in undone:
        if isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result" and block["tool_use_id"] == last:
                    block["content"] = before[last]
    assert chars(undone) > target
    # Only the messages whose result changed were touched; everything else is the same object.
    for old, new in zip(messages, result, strict=True):
        if old is not new:
            assert old["role"] == "user" and isinstance(old["content"], list)


async def test_micro_never_shortens_unseen_results(tmp_path: Path) -> None:
    """Old read results go first; the unseen 45k result is only ever fitted (persisted-output)."""
    messages, originals = read_session([3_000, 3_000, 3_000, 3_000, 45_000])
    ids = list(originals)
    compactor, events, _ = make_compactor(tmp_path)

    result = await compactor.prepare(messages, "summarise the repository")

    assert steps(events) == ["micro_compact", "fit_tool_results"]
    unseen_block = result[-1]["content"][0]
    match = persisted(unseen_block["content"])
    assert match["preview"] == originals[ids[-1]][:1_000]
    assert read_exact(tmp_path, match["path"]) == originals[ids[-1]]
    first_block = result[2]["content"][0]
    assert read_exact(tmp_path, placeholder_path(first_block["content"])) == originals[ids[0]]
    assert chars(result) <= 50_000


async def test_micro_reuses_a_persisted_output_path(tmp_path: Path) -> None:
    """A result persisted by step 1 and later read becomes a placeholder to the same full file."""
    workdir = tmp_path
    compactor, _, _ = make_compactor(workdir)
    full = big_text(250_000, "huge")
    messages: list[Message] = [
        user("look at the dump"),
        assistant([tool_use("toolu_dump")]),
        user([tool_result("toolu_dump", full)]),
    ]
    messages = await compactor.prepare(messages, "look at the dump")
    first = persisted(messages[2]["content"][0]["content"])
    assert read_exact(workdir, first["path"]) == full
    # Later reads push the dump's (now read) persisted block out of the newest three.
    more, _ = read_session([12_000] * 5)
    messages = [*messages, *more[1:]]
    result = await compactor.prepare(messages, "look at the dump")
    content = result[2]["content"][0]["content"]
    assert placeholder_path(content) == first["path"]
    assert chars(result) <= 50_000


async def test_tool_result_list_content_is_persisted_as_its_text(tmp_path: Path) -> None:
    text = big_text(250_000, "blocks")
    messages = [
        user("dump"),
        assistant([tool_use("toolu_list")]),
        user([tool_result("toolu_list", [{"type": "text", "text": text}])]),
    ]
    compactor, _, _ = make_compactor(tmp_path)
    result = await compactor.prepare(messages, "dump")
    match = persisted(result[2]["content"][0]["content"])
    assert read_exact(tmp_path, match["path"]) == text
    assert match["preview"] == text[:2_000]


async def test_tool_result_with_several_text_blocks_keeps_all_text(tmp_path: Path) -> None:
    part_one, part_two = big_text(120_000, "one"), big_text(120_000, "two")
    messages = [
        user("dump"),
        assistant([tool_use("toolu_parts")]),
        user(
            [
                tool_result(
                    "toolu_parts", [{"type": "text", "text": part_one}, {"type": "text", "text": part_two}]
                )
            ]
        ),
    ]
    compactor, _, _ = make_compactor(tmp_path)
    result = await compactor.prepare(messages, "dump")
    match = persisted(result[2]["content"][0]["content"])
    saved = read_exact(tmp_path, match["path"])
    assert saved.startswith(part_one) and saved.endswith(part_two)
    assert len(saved) - len(part_one) - len(part_two) <= 2


async def test_compact_history_when_still_over_the_limit(tmp_path: Path) -> None:
    messages = []
    for index in range(20):
        text = f"turn {index} " + "长文本 long text " * 330
        messages.append(user(text) if index % 2 == 0 else assistant([{"type": "text", "text": text}]))
    active = messages[18]["content"]
    original = copy.deepcopy(messages)
    full_json = json.dumps(messages, default=str, ensure_ascii=False)
    assert len(full_json) > 80_000
    summarizer = Recorder('Facts: "quoted"\nline two; 中文; \\ backslash')
    compactor, events, _ = make_compactor(tmp_path, summarize=summarizer)

    result = await compactor.prepare(messages, active)

    assert messages == original
    assert len(result) == 1
    assert result[0]["role"] == "user"
    content = result[0]["content"]
    prefix = summary_prefix("Compacted", active, summarizer.summary)
    assert content.startswith(prefix), content[:500]
    path = content[len(prefix) :]
    assert load_transcript(tmp_path, path) == original
    assert chars(result) <= 50_000
    assert steps(events) == ["compact_history"]

    assert len(summarizer.calls) == 1
    text, focus = summarizer.calls[0]
    assert focus is None
    # DESIGN.md: head 20,000 + tail 60,000 with a visible omission line between.
    assert text[:20_000] == full_json[:20_000]
    assert text.endswith(full_json[-60_000:])
    omission = text[20_000 : len(text) - 60_000]
    assert f"{len(full_json) - 80_000:,} chars of the conversation omitted here" in omission
    assert path in omission


async def test_compact_history_direct_with_focus_and_short_history(tmp_path: Path) -> None:
    messages = [user("fix the bug"), assistant([{"type": "text", "text": "done"}])]
    summarizer = Recorder("fixed")
    compactor, events, _ = make_compactor(tmp_path, summarize=summarizer)
    result = await compactor.compact_history(messages, "fix the bug", focus="the parser")
    assert summarizer.calls == [(json.dumps(messages, default=str, ensure_ascii=False), "the parser")]
    prefix = summary_prefix("Compacted", "fix the bug", "fixed")
    assert result[0]["content"].startswith(prefix)
    assert load_transcript(tmp_path, result[0]["content"][len(prefix) :]) == messages
    assert steps(events) == ["compact_history"]


async def test_reactive_compact_keeps_last_five_and_the_pair(tmp_path: Path) -> None:
    messages = [
        user("start: " + "background " * 30),  # what it summarises outweighs the summary message
        assistant([{"type": "text", "text": "a"}]),
        user("more"),
        assistant([{"type": "text", "text": "b"}]),
        user("the current request"),
        assistant([{"type": "text", "text": "c"}]),
        assistant([tool_use("toolu_pair")]),
        user([tool_result("toolu_pair", "result")]),
        assistant([{"type": "text", "text": "d"}]),
        user("e"),
        assistant([{"type": "text", "text": "f"}]),
        user("g"),
    ]
    original = copy.deepcopy(messages)
    summarizer = Recorder("reactive summary")
    compactor, events, _ = make_compactor(tmp_path, summarize=summarizer)

    result = await compactor.reactive_compact(messages, "the current request")

    assert messages == original
    assert result[1:] == original[6:]
    assert len(result) == 7
    first = result[0]
    assert first["role"] == "user"
    prefix = summary_prefix("Reactive compact", "the current request", "reactive summary")
    assert first["content"].startswith(prefix)
    assert load_transcript(tmp_path, first["content"][len(prefix) :]) == original
    assert len(summarizer.calls) == 1
    assert steps(events) == ["reactive_compact"]


async def test_reactive_compact_plain_tail(tmp_path: Path) -> None:
    messages = alternating(10)
    compactor, _, _ = make_compactor(tmp_path)
    result = await compactor.reactive_compact(messages, messages[8]["content"])
    assert result[0]["content"].startswith("[Reactive compact]\n\nCurrent user request:\n")
    assert result[1:] == messages[5:]


async def test_prepare_never_mutates_its_input(tmp_path: Path) -> None:
    """Budget, snip, micro and fit all fire; the input list and every message in it stay as they were."""
    messages: list[Message] = [user("the request")]
    for number in range(30):
        tool_id = f"toolu_m{number:02d}"
        messages.append(assistant([tool_use(tool_id)]))
        messages.append(user([tool_result(tool_id, [{"type": "text", "text": big_text(4_000, tool_id)}])]))
    messages.append(assistant([tool_use("toolu_last_a"), tool_use("toolu_last_b")]))
    messages.append(
        user(
            [
                tool_result("toolu_last_a", big_text(160_000, "la")),
                tool_result("toolu_last_b", big_text(60_000, "lb")),
            ]
        )
    )
    snapshot = copy.deepcopy(messages)
    identities = [id(message) for message in messages]
    compactor, events, _ = make_compactor(tmp_path)

    result = await compactor.prepare(messages, "the request")

    assert messages == snapshot
    assert [id(message) for message in messages] == identities
    assert result is not messages
    assert {"tool_result_budget", "snip_compact"} <= set(steps(events))
    for path in marker_paths(result):
        read_exact(tmp_path, path)


async def test_request_in_text_blocks_is_not_duplicated_without_a_snip(tmp_path: Path) -> None:
    """The request is re-added only after a snip removed every copy (seed 003); nothing fired here."""
    messages = [
        user([{"type": "text", "text": "what does main.py do?"}]),
        assistant([{"type": "text", "text": "It starts the app."}]),
    ]
    compactor, events, _ = make_compactor(tmp_path)
    result = await compactor.prepare(messages, "what does main.py do?")
    assert result == messages
    assert events == []


async def test_snip_re_adds_the_request_when_every_copy_was_archived(tmp_path: Path) -> None:
    messages: list[Message] = [user("intro"), assistant([{"type": "text", "text": "hi"}]), user("context")]
    messages.append(user("the real request"))
    for number in range(30):
        tool_id = f"toolu_loop{number:02d}"
        messages.append(assistant([tool_use(tool_id)]))
        messages.append(user([tool_result(tool_id, "ok")]))
    compactor, _, _ = make_compactor(tmp_path)
    result = await compactor.prepare(messages, "the real request")
    assert SNIP_RE.match(result[3]["content"])
    visible = [m for m in result if m["role"] == "user" and m["content"] == "the real request"]
    assert len(visible) == 1


# --- faults --------------------------------------------------------------------------------------


def oversized_batch() -> list[Message]:
    return [
        user("read both logs"),
        assistant([tool_use("toolu_big_a"), tool_use("toolu_big_b")]),
        user(
            [
                tool_result("toolu_big_a", big_text(150_000, "a")),
                tool_result("toolu_big_b", big_text(100_000, "b")),
            ]
        ),
    ]


def assert_markers_are_backed(workdir: Path, result: list[Message]) -> None:
    for path in marker_paths(result):
        read_exact(workdir, path)


async def test_unwritable_tool_results_dir(tmp_path: Path) -> None:
    (tmp_path / ".task_outputs").write_text("I am a file, not a directory")
    messages = oversized_batch()
    original = copy.deepcopy(messages)
    compactor, _, _ = make_compactor(tmp_path)
    try:
        result = await compactor.prepare(messages, "read both logs")
    except Exception as error:
        one_line_error(error)
    else:
        assert_markers_are_backed(tmp_path, result)
        for block in result[-1]["content"] if isinstance(result[-1]["content"], list) else []:
            assert not PERSISTED_RE.match(str(block["content"]))
    assert messages == original


async def test_unwritable_transcripts_dir(tmp_path: Path) -> None:
    (tmp_path / ".transcripts").write_text("not a directory")
    messages = alternating(60)
    original = copy.deepcopy(messages)
    compactor, _, _ = make_compactor(tmp_path)
    try:
        result = await compactor.prepare(messages, messages[58]["content"])
    except Exception as error:
        one_line_error(error)
    else:
        assert_markers_are_backed(tmp_path, result)
        assert not any(SNIP_RE.match(str(message["content"])) for message in result)
    assert messages == original


async def test_existing_file_with_other_content_is_never_overwritten(tmp_path: Path) -> None:
    results = tmp_path / TOOL_RESULTS
    results.mkdir(parents=True)
    old = results / "toolu_big_a.txt"
    old.write_text("a previous session's output")
    compactor, _, _ = make_compactor(tmp_path)
    messages = oversized_batch()
    result = await compactor.prepare(messages, "read both logs")
    assert old.read_text() == "a previous session's output"
    match = persisted(result[2]["content"][0]["content"])
    assert read_exact(tmp_path, match["path"]) == messages[2]["content"][0]["content"]


async def test_symlinked_target_file_is_not_written_through(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    results = workdir / TOOL_RESULTS
    results.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("outside, must stay")
    (results / "toolu_big_a.txt").symlink_to(outside)
    compactor, _, _ = make_compactor(workdir)
    messages = oversized_batch()
    result = await compactor.prepare(messages, "read both logs")
    assert outside.read_text() == "outside, must stay"
    match = persisted(result[2]["content"][0]["content"])
    assert not (workdir / match["path"]).is_symlink()
    assert read_exact(workdir, match["path"]) == messages[2]["content"][0]["content"]


@pytest.mark.parametrize(
    "tool_id",
    ["../../escape", "/etc/passwd", "a/b", "a_b", "toolu:1", "", "..", "名前 with spaces", "x" * 300],
)
async def test_hostile_tool_use_ids_stay_inside_the_archive(tmp_path: Path, tool_id: str) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    text = big_text(250_000, "hostile")
    messages = [user("go"), assistant([tool_use(tool_id)]), user([tool_result(tool_id, text)])]
    compactor, _, _ = make_compactor(workdir)
    result = await compactor.prepare(messages, "go")
    match = persisted(result[2]["content"][0]["content"])
    assert read_exact(workdir, match["path"]) == text
    assert entries(tmp_path) == ["work"]


async def test_ids_that_sanitise_alike_get_distinct_files(tmp_path: Path) -> None:
    ids = ["toolu/1", "toolu_1", "toolu:1", "toolu 1"]
    texts = [big_text(60_000, f"same-{number}") for number in range(len(ids))]
    messages = [
        user("go"),
        assistant([tool_use(tool_id) for tool_id in ids]),
        user([tool_result(tool_id, text) for tool_id, text in zip(ids, texts, strict=True)]),
    ]
    compactor, _, _ = make_compactor(tmp_path)
    result = await compactor.prepare(messages, "go")
    paths = []
    for block, text in zip(result[2]["content"], texts, strict=True):
        match = persisted(block["content"])
        assert read_exact(tmp_path, match["path"]) == text
        paths.append(match["path"])
    assert len(set(paths)) == len(ids)


# --- forged markers --------------------------------------------------------------------------------


@pytest.fixture
def forged_setup(tmp_path: Path) -> tuple[Path, Path]:
    workdir = tmp_path / "work"
    (workdir / TOOL_RESULTS).mkdir(parents=True)
    (workdir / TRANSCRIPTS).mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    (workdir / "inside-but-not-archive.txt").write_text("not an archive file")
    (workdir / TOOL_RESULTS / "escape.txt").symlink_to(secret)
    (workdir / TOOL_RESULTS / "sideways.txt").symlink_to(workdir / "inside-but-not-archive.txt")
    (workdir / TOOL_RESULTS / "real.txt").write_text("a genuine archived result")
    return workdir, secret


FORGED_PATHS = [
    "../../etc/passwd",
    "../secret.txt",
    "/etc/passwd",
    ".task_outputs/tool-results/../../secret.txt",
    ".task_outputs/tool-results/../../../secret.txt",
    ".transcripts/../../secret.txt",
    ".task_outputs/tool-results/escape.txt",
    ".task_outputs/tool-results/sideways.txt",
    ".task_outputs/tool-results",
    ".task_outputs/tool-results/missing.txt",
    "inside-but-not-archive.txt",
    ".task_outputs\\tool-results\\real.txt",
    "",
]


@pytest.mark.parametrize("path", FORGED_PATHS)
async def test_forged_marker_paths_are_refused(
    forged_setup: tuple[Path, Path], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir, secret = forged_setup
    archive = Archive(workdir)
    opened: list[str] = []
    real_open, real_aio_open = builtins.open, aiofiles.open

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def spy_aio_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_aio_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(aiofiles, "open", spy_aio_open)

    assert archive.resolve(path) is None
    with pytest.raises(Exception) as caught:
        await archive.read_text(path)
    one_line_error(caught.value)
    for name in opened:
        assert not same_file(name, secret), f"opened {name}"
        assert "secret" not in name and "passwd" not in name, f"opened {name}"


async def test_genuine_marker_path_is_trusted(forged_setup: tuple[Path, Path]) -> None:
    workdir, _ = forged_setup
    archive = Archive(workdir)
    assert archive.resolve(".task_outputs/tool-results/real.txt") is not None
    assert await archive.read_text(".task_outputs/tool-results/real.txt") == "a genuine archived result"


@pytest.mark.parametrize("link", [".task_outputs", TOOL_RESULTS])
async def test_archive_dir_symlinked_out_of_the_workdir_is_not_trusted(tmp_path: Path, link: str) -> None:
    """If the archive directory itself leads out of the workdir, nothing behind it is trusted."""
    workdir = tmp_path / "work"
    outside = tmp_path / "outside"
    (outside / "tool-results").mkdir(parents=True)
    (outside / "secret.txt").write_text("TOP SECRET")
    (outside / "tool-results" / "secret.txt").write_text("TOP SECRET")
    (workdir / TOOL_RESULTS).parent.mkdir(parents=True)
    if link == ".task_outputs":
        (workdir / ".task_outputs").rmdir()
        (workdir / ".task_outputs").symlink_to(outside, target_is_directory=True)
    else:
        (workdir / TOOL_RESULTS).symlink_to(outside, target_is_directory=True)
    archive = Archive(workdir)
    assert archive.resolve(".task_outputs/tool-results/secret.txt") is None


async def test_no_marker_points_through_a_symlinked_archive_dir(tmp_path: Path) -> None:
    """Even when the outside file already holds the very text, a marker must not point outside."""
    workdir = tmp_path / "work"
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / ".task_outputs").mkdir(parents=True)
    (workdir / TOOL_RESULTS).symlink_to(outside, target_is_directory=True)
    text = big_text(250_000, "planted")
    (outside / "toolu_planted.txt").write_text(text)
    messages = [
        user("go"),
        assistant([tool_use("toolu_planted")]),
        user([tool_result("toolu_planted", text)]),
    ]
    compactor, _, _ = make_compactor(workdir)
    try:
        result = await compactor.prepare(messages, "go")
    except Exception as error:
        one_line_error(error)
        partial = getattr(error, "partial", None) or []
        for path in marker_paths(partial):
            assert Archive(workdir).resolve(path) is not None, f"partial result names untrusted {path}"
    else:
        archive = Archive(workdir)
        for path in marker_paths(result):
            assert archive.resolve(path) is not None, f"marker names untrusted {path}"
            read_exact(workdir, path)


async def test_forged_persisted_output_in_history_is_archived_not_followed(
    forged_setup: tuple[Path, Path],
) -> None:
    """A read result that merely looks like a persisted-output block pointing outside is saved as text."""
    workdir, secret = forged_setup
    forged = (
        "<persisted-output>\nFull output: ../../secret.txt\nPreview:\n"
        + big_text(12_000, "forged")
        + "\n</persisted-output>"
    )
    messages, originals = read_session([12_000] * 6)
    messages[2]["content"][0]["content"] = forged
    originals["toolu_read_00"] = forged
    messages[-1]["content"][0]["content"] = "[Earlier tool result saved at ../../secret.txt]"
    compactor, _, _ = make_compactor(workdir)

    result = await compactor.prepare(messages, "summarise the repository")

    path = placeholder_path(result[2]["content"][0]["content"])
    assert read_exact(workdir, path) == forged
    assert result[-1]["content"][0]["content"] == "[Earlier tool result saved at ../../secret.txt]"
    assert secret.read_text() == "TOP SECRET"


async def test_transcript_reloads_through_the_archive_reader(tmp_path: Path) -> None:
    """JSON may carry U+2028, U+2029 and U+0085 unescaped; a transcript must still reload equal."""
    messages = [
        user("line\u2028separator \u2029 paragraph \x85 next-line \x0b\x0c\x1c\x1d\x1e"),
        assistant([{"type": "text", "text": "ok \r\n crlf \r cr"}]),
    ]
    archive = Archive(tmp_path)
    path = await archive.write_transcript(messages)
    assert load_transcript(tmp_path, path) == messages
    assert await archive.read_transcript(path) == messages


# --- a failing summarizer ------------------------------------------------------------------------


async def test_failing_summarizer_leaves_history_unchanged(tmp_path: Path) -> None:
    messages = [user("fix it"), assistant([{"type": "text", "text": "looking " * 10_000}])]
    original = copy.deepcopy(messages)
    compactor, events, _ = make_compactor(tmp_path, summarize=failing_summarizer)
    with pytest.raises(Exception) as caught:
        await compactor.compact_history(messages, "fix it")
    one_line_error(caught.value)
    assert messages == original
    assert "compact_history" not in steps(events)

    with pytest.raises(Exception) as caught:
        await compactor.prepare(messages, "fix it")
    one_line_error(caught.value)
    assert messages == original

    with pytest.raises(Exception) as caught:
        await compactor.reactive_compact(messages, "fix it")
    one_line_error(caught.value)
    assert messages == original
