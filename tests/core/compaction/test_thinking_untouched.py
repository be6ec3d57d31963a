"""Property: no compaction step and no steering action ever edits a thinking block.

The API refuses a `thinking` or `redacted_thinking` block that differs from what it returned (its
text, signature or data), or that sits outside an assistant message. Over random histories with
signed thinking blocks, every step of the pipeline (prepare, compact_history, reactive_compact) and
every steering action (drop, restore, undo) leaves each thinking block it keeps byte-equal, in an
assistant message, in its order, and the thinking ledger finds nothing to refuse.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.archive import Archive
from core.compaction import CompactionError, CompactionSettings, Compactor
from core.compaction.steering import Compaction, drop_result, restore_result, undo
from core.history import pairing_problems
from core.history.thinking import ThinkingLedger, thinking_positions
from tests.support.fake_cache import ThinkingSigner

Message = dict[str, Any]
SIGNER = ThinkingSigner()
MODEL = "claude-sonnet-5-5"
SETTINGS = CompactionSettings(context_char_limit=6_000, keep_recent_results=1, micro_min_chars=50,
                              fit_preview_chars=300, persisted_preview_chars=400, large_result_char_limit=2_000,
                              tool_result_batch_char_limit=5_000, snip_trigger_messages=12, snip_target_messages=8,
                              reactive_keep_messages=3)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "start the work"}]
    for turn in range(draw(st.integers(1, 9))):
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append(SIGNER.sign(MODEL, {"type": "redacted_thinking", "seed": f"r{turn}"}))
        if draw(st.booleans()):
            blocks.append(SIGNER.sign(MODEL, {"type": "thinking", "thinking": draw(st.text(max_size=300))}))
        calls = draw(st.integers(0, 2))
        ids = [f"toolu_{turn}_{n}" for n in range(calls)]
        blocks += [{"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": f"f{turn}"}}
                   for tool_id in ids]
        if not blocks or not calls:
            blocks.append({"type": "text", "text": f"step {turn}"})
        messages.append({"role": "assistant", "content": blocks})
        if ids:
            sizes = [draw(st.sampled_from([100, 1_500, 3_000])) for _ in ids]
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": f"{tool_id} " * (size // 12)}
                for tool_id, size in zip(ids, sizes, strict=True)]})
        else:
            messages.append({"role": "user", "content": f"next {turn}"})
    return messages


def assert_thinking_kept(before: list[Message], after: list[Message]) -> None:
    kept = [block for _, _, block in thinking_positions(after)]
    original = [block for _, _, block in thinking_positions(before)]
    position = 0
    for block in kept:  # each kept block equals one of the originals, in their order
        while position < len(original) and original[position] != block:
            position += 1
        assert position < len(original), f"a thinking block was changed: {block}"
        position += 1
    for index, _, _ in thinking_positions(after):
        assert after[index]["role"] == "assistant"
    ledger = ThinkingLedger()
    ledger.adopt(before, MODEL)
    assert ledger.problem(after, MODEL) is None
    assert pairing_problems(after) == []


async def summarize(text: str, focus: str | None) -> str:
    return "A short factual summary."


async def exercise(messages: list[Message], actions: list[int], pins: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        archive = Archive(Path(scratch))
        compactor = Compactor(archive, summarize=summarize, settings=SETTINGS)
        uses = [block["id"] for message in messages if message["role"] == "assistant"
                for block in message["content"] if block.get("type") == "tool_use"]
        compactor.pinned = frozenset(uses[::pins]) if pins and uses else frozenset()  # summaries carry these
        request = "start the work"
        prepared = await compactor.prepare(messages, request)
        assert_thinking_kept(messages, prepared)
        undone = undo(prepared, Compaction(("prepare",), tuple(messages), tuple(prepared)))
        assert undone == messages
        assert_thinking_kept(messages, undone)
        for chosen in actions:
            ids = [block["tool_use_id"] for message in prepared if message["role"] == "user"
                   and isinstance(message["content"], list) for block in message["content"]]
            if ids:
                tool_use_id = ids[chosen % len(ids)]
                try:
                    dropped, path = await drop_result(prepared, archive, tool_use_id)
                except Exception:  # already a placeholder: refused, nothing changed
                    continue
                assert_thinking_kept(prepared, dropped)
                restored, _ = await restore_result(dropped, archive, path, 1_000_000)
                assert_thinking_kept(dropped, restored)
                prepared = restored
        for step in (compactor.compact_history, compactor.reactive_compact):
            try:
                result = await step(prepared, request)
            except CompactionError:  # refused (the summary would not be smaller): nothing was changed
                continue
            assert_thinking_kept(prepared, result)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.lists(st.integers(0, 20), max_size=3), st.integers(0, 3))
def test_no_step_or_steering_action_edits_a_thinking_block(messages: list[Message], actions: list[int],
                                                           pins: int) -> None:
    asyncio.run(exercise(messages, actions, pins))


def test_the_ledger_names_each_kind_of_refusal() -> None:
    block = SIGNER.sign(MODEL, {"type": "thinking", "thinking": "a thought"})
    reply: list[dict[str, Any]] = [block, {"type": "text", "text": "x"}]
    history: list[Message] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": reply}]
    ledger = ThinkingLedger()
    ledger.received(reply, MODEL)
    assert ledger.problem(history, MODEL) is None
    changed = [history[0], {"role": "assistant", "content": [{**block, "thinking": "another"}]}]
    assert "changed since the API returned it" in (ledger.problem(changed, MODEL) or "")
    moved = [{"role": "user", "content": [block]}]
    assert "in a user message" in (ledger.problem(moved, MODEL) or "")
    assert "written by claude-sonnet-5-5" in (ledger.problem(history, "claude-opus-5-5") or "")
    unknown = [history[0], {"role": "assistant", "content": [SIGNER.sign(MODEL, {"type": "thinking", "thinking": "z"})]}]
    assert "did not return in this session" in (ledger.problem(unknown, MODEL) or "")
