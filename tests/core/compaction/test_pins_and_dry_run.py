"""Steering the pipeline: pins and the dry run.

A pinned tool result survives every step byte-exact and stays in a valid pair: snip keeps its pair
(right after the marker), micro and fit skip it, compact_history and reactive_compact carry it after
the summary. `Compactor.dry_run` reports the steps `prepare` would take, with the same figures,
writing nothing and calling no model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.compaction import CompactionSettings
from core.history import pairing_problems
from tests.support.histories import (
    PLACEHOLDER_RE,
    SNIP_RE,
    assistant,
    big_text,
    make_compactor,
    steps,
    tool_result,
    tool_use,
    user,
)

Message = dict[str, Any]


def reads(sizes: list[int], answered: bool = True) -> list[Message]:
    messages: list[Message] = [user("study the files")]
    for number, size in enumerate(sizes):
        tool_id = f"toolu_{number}"
        messages += [assistant([tool_use(tool_id)]), user([tool_result(tool_id, big_text(size, tool_id))])]
    if answered:
        messages.append(assistant([{"type": "text", "text": "read them all"}]))
    return messages


def result_of(messages: list[Message], tool_id: str) -> Any:
    (content,) = [
        block["content"] for message in messages if isinstance(message["content"], list)
        for block in message["content"] if block.get("type") == "tool_result" and block["tool_use_id"] == tool_id
    ]
    return content


def files(workdir: Path) -> list[str]:
    return sorted(str(path.relative_to(workdir)) for path in workdir.rglob("*") if path.is_file())


async def test_micro_and_fit_leave_a_pinned_result_alone(tmp_path: Path) -> None:
    messages = reads([15_000] * 6)
    compactor, events, summarizer = make_compactor(tmp_path)
    compactor.pinned = frozenset({"toolu_0", "toolu_5"})

    result = await compactor.prepare(messages, "study the files")

    assert result_of(result, "toolu_0") == result_of(messages, "toolu_0")
    assert result_of(result, "toolu_5") == result_of(messages, "toolu_5")
    assert PLACEHOLDER_RE.match(result_of(result, "toolu_1"))
    assert steps(events)[0] == "micro_compact"
    assert summarizer.calls == []
    assert pairing_problems(result) == []


async def test_snip_keeps_a_pinned_pair_right_after_its_marker(tmp_path: Path) -> None:
    settings = CompactionSettings(snip_trigger_messages=12, snip_target_messages=8)
    messages = reads([10] * 7)
    compactor, _, _ = make_compactor(tmp_path, settings)
    compactor.pinned = frozenset({"toolu_2"})

    result = await compactor.prepare(messages, "study the files")

    assert result[:3] == messages[:3]
    marker_at = next(i for i, m in enumerate(result) if isinstance(m["content"], str) and SNIP_RE.match(m["content"]))
    assert result[marker_at + 1] == messages[5] and result[marker_at + 2] == messages[6]
    assert result_of(result, "toolu_2") == result_of(messages, "toolu_2")
    assert pairing_problems(result) == []


async def test_compact_history_and_reactive_carry_pinned_pairs_after_the_summary_and_the_request_last(
    tmp_path: Path,
) -> None:
    messages = reads([3_000, 200, 300, 400])
    messages.append(user("now summarise"))
    compactor, _, _ = make_compactor(tmp_path)
    compactor.pinned = frozenset({"toolu_1", "toolu_2"})

    compacted = await compactor.compact_history(messages, "now summarise")
    reactive = await compactor.reactive_compact(messages, "now summarise")

    def pair(number: int, size: int) -> list[Message]:
        tool_id = f"toolu_{number}"
        return [assistant([tool_use(tool_id)]), user([tool_result(tool_id, big_text(size, tool_id))])]

    assert compacted[0]["content"].startswith("[Compacted]")
    # the request comes again after what was carried: it is the last thing the model reads
    assert compacted[1:] == [*pair(1, 200), *pair(2, 300), user("now summarise")]
    # reactive keeps the newest five messages (from toolu_2's pair on, the request last among them),
    # summarises the rest (toolu_0's long result) and carries toolu_1's pair
    assert reactive[0]["content"].startswith("[Reactive compact]")
    assert reactive[1:3] == pair(1, 200)
    assert reactive[3:] == messages[5:]
    assert pairing_problems(compacted) == [] and pairing_problems(reactive) == []


async def test_a_history_held_by_pins_is_not_summarised_upward(tmp_path: Path) -> None:
    messages = reads([60_000])
    compactor, events, _ = make_compactor(tmp_path)
    compactor.pinned = frozenset({"toolu_0"})

    result = await compactor.prepare(messages, "study the files")

    assert result == messages
    (event,) = events
    assert event.step == "compact_history" and event.chars_after == event.chars_before
    assert "1 pinned result(s)" in event.detail and "unpin" in event.detail


async def test_dry_run_reports_prepares_steps_and_writes_nothing(tmp_path: Path) -> None:
    messages = reads([150_000, 60_000], answered=False)
    messages[-1] = user([tool_result("toolu_0", big_text(150_000, "a")), tool_result("toolu_1", big_text(60_000, "b"))])
    messages[-2] = assistant([tool_use("toolu_0"), tool_use("toolu_1")])
    del messages[1:3]
    compactor, events, summarizer = make_compactor(tmp_path)

    preview = await compactor.dry_run(messages, "study the files")
    assert files(tmp_path) == []
    assert events == []
    result = await compactor.prepare(messages, "study the files")

    assert steps(events) == ["tool_result_budget", "fit_tool_results"]
    assert preview == events
    assert summarizer.calls == []
    assert result != messages


async def test_dry_run_says_the_summary_would_run_without_calling_the_model(tmp_path: Path) -> None:
    messages = [user("go"), assistant([{"type": "text", "text": big_text(60_000, "answer")}]), user("go on")]
    compactor, events, summarizer = make_compactor(tmp_path)

    (step,) = await compactor.dry_run(messages, "go on")

    assert step.step == "compact_history" and step.chars_before == step.chars_after
    assert step.detail.startswith("would run next")
    assert summarizer.calls == [] and events == [] and files(tmp_path) == []
    await compactor.prepare(messages, "go on")
    assert steps(events) == ["compact_history"] and events[0].chars_before == step.chars_before
