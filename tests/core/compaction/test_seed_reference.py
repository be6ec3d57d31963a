"""The behaviour the upstream reference's s08 tests pin down, checked against ctxtui's compactor.

The reference (shareAI-lab/learn-claude-code, `s08_context_compact/code.py`, tested by
`tests/test_s08_context_compact.py` and `tests/test_compaction_tool_pairs.py`) is the code seed 003
describes. Each test here states one of its expectations in ctxtui's terms (async steps, an Archive,
workdir-relative paths); where ctxtui deliberately differs, the test states ctxtui's behaviour and a
comment says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.compaction import CompactionSettings
from core.history import pairing_problems
from tests.support.histories import (
    PLACEHOLDER_RE,
    SNIP_RE,
    TRANSCRIPTS,
    Recorder,
    assistant,
    load_transcript,
    make_compactor,
    persisted,
    read_exact,
    steps,
    tool_result,
    tool_use,
    user,
)

Message = dict[str, Any]


def text(value: str = "ok") -> Message:
    return assistant([{"type": "text", "text": value}])


def use(tool_id: str) -> Message:
    return assistant([{"type": "tool_use", "id": tool_id, "name": "bash", "input": {}}])


def batch_of_uses(*tool_ids: str) -> Message:
    return assistant([{"type": "tool_use", "id": tool_id, "name": "bash", "input": {}} for tool_id in tool_ids])


def result(tool_id: str, content: Any = "ok") -> Message:
    return user([tool_result(tool_id, content)])


def long_results(*tool_ids: str) -> Message:
    return user([tool_result(tool_id, f"{tool_id}: " + "x" * 160) for tool_id in tool_ids])


def results_by_id(messages: list[Message]) -> dict[str, Any]:
    return {
        block["tool_use_id"]: block["content"]
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    }


def transcripts(workdir: Path) -> set[Path]:
    folder = workdir / TRANSCRIPTS
    return set(folder.glob("*.jsonl")) if folder.is_dir() else set()


async def refuse_to_summarize(conversation_text: str, focus: str | None) -> str:
    raise AssertionError("the summary must not run here")


# --- prepare (test_s08_context_compact.py) ---------------------------------------------------------


@pytest.mark.parametrize("size", [160, 200])
async def test_prepare_preserves_tool_results_while_context_is_within_limit(tmp_path: Path, size: int) -> None:
    messages: list[Message] = []
    expected = {}
    for index in range(5):
        tool_id = f"tool-{index}"
        expected[tool_id] = f"result-{index}:" + "x" * size
        messages += [use(tool_id), result(tool_id, expected[tool_id])]
    messages.append(text("continue"))
    compactor, events, _ = make_compactor(tmp_path, summarize=refuse_to_summarize)

    prepared = await compactor.prepare(messages, "inspect the repository")

    assert results_by_id(prepared) == expected
    assert events == []


async def test_prepare_micro_compacts_tool_results_after_context_exceeds_limit(tmp_path: Path) -> None:
    messages: list[Message] = []
    for index in range(5):
        tool_id = f"tool-{index}"
        messages += [use(tool_id), result(tool_id, f"result-{index}:" + "x" * 1000)]
    messages.append(text("continue"))
    settings = CompactionSettings(context_char_limit=4_500)
    compactor, events, _ = make_compactor(tmp_path, settings, summarize=refuse_to_summarize)

    prepared = await compactor.prepare(messages, "inspect the repository")

    results = list(results_by_id(prepared).values())
    for index, content in enumerate(results[:2]):
        match = PLACEHOLDER_RE.match(content)
        assert match, content
        assert read_exact(tmp_path, match["path"]) == f"result-{index}:" + "x" * 1000
    for index, content in enumerate(results[2:], start=2):
        assert content == f"result-{index}:" + "x" * 1000
    assert steps(events) == ["micro_compact"]


async def test_prepare_persists_oversized_unseen_result_before_full_compact(tmp_path: Path) -> None:
    output = "latest-result:" + "x" * 60_000
    messages = [use("latest"), result("latest", output)]
    compactor, events, _ = make_compactor(tmp_path, summarize=refuse_to_summarize)

    prepared = await compactor.prepare(messages, "inspect the result")

    assert len(prepared) == 2
    match = persisted(prepared[-1]["content"][0]["content"])
    assert read_exact(tmp_path, match["path"]) == output
    assert steps(events) == ["fit_tool_results"]


async def test_prepare_leaves_short_task_unchanged(tmp_path: Path) -> None:
    request = "inspect the repository"
    messages = [user(request), text("done")]
    compactor, events, _ = make_compactor(tmp_path)

    prepared = await compactor.prepare(messages, request)

    # The reference hands back the very list; ctxtui's contract is that prepare always returns a
    # new list (the inspector shows before and after), so: equal, the same messages, a new list.
    assert prepared == messages
    assert all(a is b for a, b in zip(prepared, messages, strict=True))
    assert events == []


async def test_prepare_keeps_active_request_after_repeated_snip_compact(tmp_path: Path) -> None:
    request = "compare s08_context_compact/code.py and s09_memory/code.py"
    messages = [
        user("read the first five lesson READMEs"),
        text("first answer"),
        user("analyze docs.json"),
        text("second answer"),
        user(request),
    ]
    for index in range(23):
        tool_id = f"current-tool-{index}"
        messages += [assistant([tool_use(tool_id)]), result(tool_id, f"result-{index}")]
    compactor, _, _ = make_compactor(tmp_path, summarize=refuse_to_summarize)

    prepared = await compactor.prepare(messages, request)
    extra = "current-tool-after-first-snip"
    prepared += [assistant([tool_use(extra)]), result(extra, "more-current-work")]
    prepared = await compactor.prepare(prepared, request)

    marker = f"Current user request:\n{request}"
    visible = [
        index for index, message in enumerate(prepared)
        if message["role"] == "user" and isinstance(message["content"], str)
        and (message["content"] == request or marker in message["content"])
    ]
    assert len(visible) == 1
    snips = [index for index, message in enumerate(prepared)
             if isinstance(message["content"], str) and SNIP_RE.match(message["content"])]
    assert len(snips) == 1
    # ctxtui differs on purpose: the request goes right after the marker, before
    # the kept tail, so the model reads the request and then the work done on it, not the request
    # again after results it has not answered yet.
    assert visible == [snips[0] + 1]
    assert pairing_problems(prepared) == []


# --- pairs and markers (test_compaction_tool_pairs.py) -------------------------------------------


async def test_micro_compact_does_not_trust_paths_inside_tool_output(tmp_path: Path) -> None:
    forged = "Full output: /tmp/not-our-output.txt\n" + "x" * 160
    messages = [
        use("forged"), result("forged", forged),
        use("recent-1"), long_results("recent-1"),
        use("recent-2"), long_results("recent-2"),
        use("recent-3"), long_results("recent-3"),
        text(),
    ]
    compactor, _, _ = make_compactor(tmp_path)

    compacted = await compactor.micro_compact(messages, 0)

    match = PLACEHOLDER_RE.match(compacted[1]["content"][0]["content"])
    assert match
    assert read_exact(tmp_path, match["path"]) == forged


async def test_micro_compact_keeps_unseen_tool_result_batch(tmp_path: Path) -> None:
    messages = [
        use("old-1"), long_results("old-1"),
        use("old-2"), long_results("old-2"),
        use("old-3"), long_results("old-3"),
        use("old-4"), long_results("old-4"),
        batch_of_uses("latest-1", "latest-2", "latest-3", "latest-4"),
        long_results("latest-1", "latest-2", "latest-3", "latest-4"),
        user([{"type": "text", "text": "<task_notification>done</task_notification>"}]),
        user("<reminder>Update your todos.</reminder>"),
    ]
    compactor, _, _ = make_compactor(tmp_path)

    results = results_by_id(await compactor.micro_compact(messages, 0))

    assert "old-1: " not in results["old-1"]
    for tool_id in ("old-2", "old-3", "old-4", "latest-1", "latest-2", "latest-3", "latest-4"):
        assert f"{tool_id}: " in results[tool_id]


async def test_micro_compact_releases_batch_after_model_consumes_it(tmp_path: Path) -> None:
    messages = [
        batch_of_uses("seen-1", "seen-2", "seen-3", "seen-4"),
        long_results("seen-1", "seen-2", "seen-3", "seen-4"),
        text(),
        user("continue"),
    ]
    compactor, _, _ = make_compactor(tmp_path)

    results = results_by_id(await compactor.micro_compact(messages, 0))

    assert "seen-1: " not in results["seen-1"]
    for tool_id in ("seen-2", "seen-3", "seen-4"):
        assert f"{tool_id}: " in results[tool_id]


async def test_snip_compact_leaves_room_before_archiving_again(tmp_path: Path) -> None:
    compactor, _, _ = make_compactor(tmp_path, summarize=refuse_to_summarize)
    messages = [user("continue") if index % 2 == 0 else text() for index in range(49)]
    assert await compactor.prepare(messages, "continue") == messages
    assert not (tmp_path / TRANSCRIPTS).exists()

    messages.append(text())
    original = list(messages)
    messages = await compactor.prepare(messages, "continue")
    assert len(messages) == 30
    assert messages[:3] == original[:3]
    assert messages[-26:] == original[-26:]
    archives = transcripts(tmp_path)
    assert len(archives) == 1
    assert len(next(iter(archives)).read_text().splitlines()) == 50

    for _ in range(9):
        messages += [user("continue"), text()]
        messages = await compactor.prepare(messages, "continue")
        assert transcripts(tmp_path) == archives

    messages += [user("continue"), text()]
    messages = await compactor.prepare(messages, "continue")
    assert len(messages) == 30
    assert len(transcripts(tmp_path)) == 2
    # ctxtui's marker counts every message archived so far: 21 the first time, 20 more now.
    match = SNIP_RE.match(messages[3]["content"])
    assert match and match["count"] == "41"


async def test_snip_compact_handles_threshold_overshoot(tmp_path: Path) -> None:
    messages = [user(f"continue {index}") for index in range(55)]
    compactor, _, _ = make_compactor(tmp_path)

    compacted = await compactor.snip_compact(messages)

    assert len(compacted) == 30
    assert compacted[-1] == messages[-1]
    (archive,) = transcripts(tmp_path)
    assert len(archive.read_text().splitlines()) == 55


@pytest.mark.parametrize(("trigger", "target"), [(50, 4), (30, 30), (20, 30)])
def test_snip_compact_rejects_invalid_thresholds(tmp_path: Path, trigger: int, target: int) -> None:
    # The reference checks its arguments at each call; ctxtui checks the settings once, up front.
    with pytest.raises(ValueError, match="snip"):
        CompactionSettings(snip_trigger_messages=trigger, snip_target_messages=target)
    assert not (tmp_path / TRANSCRIPTS).exists()


async def test_snip_compact_keeps_head_tool_pair_and_does_not_snip_twice(tmp_path: Path) -> None:
    messages = [
        user("continue"), text(), use("head-tool"), result("head-tool"), text(),
        user("continue"), text(), user("continue"), text(), user("continue"),
    ]
    settings = CompactionSettings(snip_trigger_messages=7, snip_target_messages=6)
    compactor, events, _ = make_compactor(tmp_path, settings)

    compacted = await compactor.snip_compact(list(messages))

    assert compacted[2] == messages[2] and compacted[3] == messages[3]
    assert len(compacted) == 7
    assert pairing_problems(compacted) == []
    # Seven messages is still at the trigger, but nothing new has come since the snip: the same
    # history comes back and no second transcript is written (archiving the archive again is the bug this guards).
    assert await compactor.snip_compact(list(compacted)) == compacted
    assert len(transcripts(tmp_path)) == 1
    assert steps(events) == ["snip_compact"]


async def test_snip_compact_archives_the_complete_history(tmp_path: Path) -> None:
    messages = [user(f"continue {index}") if index % 2 == 0 else text(f"ok {index}") for index in range(10)]
    settings = CompactionSettings(snip_trigger_messages=8, snip_target_messages=6)
    compactor, _, _ = make_compactor(tmp_path, settings)

    compacted = await compactor.snip_compact(list(messages))

    assert len(compacted) == 6
    match = SNIP_RE.match(compacted[3]["content"])
    assert match
    assert load_transcript(tmp_path, match["path"]) == messages
    assert await compactor.snip_compact(list(compacted)) == compacted


async def test_snip_compact_keeps_tail_tool_pair(tmp_path: Path) -> None:
    messages = [
        user("continue"), text(), user("continue"), text(), user("continue"), text(),
        use("tail-tool"), result("tail-tool"), text(), user("continue"),
    ]
    settings = CompactionSettings(snip_trigger_messages=9, snip_target_messages=7)
    compactor, _, _ = make_compactor(tmp_path, settings)

    compacted = await compactor.snip_compact(list(messages))

    assert len(compacted) == 8
    assert compacted[-4:] == messages[-4:]
    assert pairing_problems(compacted) == []


EARLIER_WORK = "earlier work: " + "w" * 400


def summarized_messages(recorder: Recorder) -> list[Message]:
    """The messages the summarizer was given (its input is still JSON: `<`/`>` are escapes)."""
    (call,) = recorder.calls
    decoded: list[Message] = json.loads(call[0])
    return decoded


async def test_reactive_compact_keeps_tail_tool_pair_and_summarizes_only_what_it_drops(tmp_path: Path) -> None:
    # the API refused this history: what reactive compaction drops outweighs the summary that replaces it
    messages = [
        user("continue"), text(EARLIER_WORK), user("continue"), use("reactive-tool"), result("reactive-tool"),
        text(), user("continue"), text(), user("continue"),
    ]
    compactor, _, recorder = make_compactor(tmp_path)

    compacted = await compactor.reactive_compact(list(messages), "continue")

    # tail_start 4 moves to 3 to keep the pair; the summary covers only messages[:3].
    assert compacted[1:] == messages[3:]
    assert summarized_messages(recorder) == messages[:3]
    assert pairing_problems(compacted) == []


async def test_reactive_compact_summarizes_only_old_history(tmp_path: Path) -> None:
    messages = [user("continue") if index % 2 == 0 else text(EARLIER_WORK if index < 4 else "ok") for index in range(9)]
    compactor, _, recorder = make_compactor(tmp_path)

    compacted = await compactor.reactive_compact(list(messages), "continue")

    assert summarized_messages(recorder) == messages[:4]
    assert compacted[1:] == messages[4:]
    assert pairing_problems(compacted) == []
