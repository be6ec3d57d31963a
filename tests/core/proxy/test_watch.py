"""The model of what the proxy saw: conversations kept apart, diffs per conversation, events for a view."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from pathlib import Path

from core.client_markers import CC_SUMMARY_PREFIX
from core.proxy.calls import CallFinished, CallStarted, ProxyNotice, describe_call
from core.proxy.diff import apply_splices
from core.proxy.record import Recorder
from core.proxy.watch import Watch
from tests.support.proxy import Driver, body, read_record, turn, until_finished


async def test_conversations_are_keyed_by_system_prompt_and_first_message(tmp_path: Path) -> None:
    watch = Watch(Recorder(tmp_path))
    drive = Driver(watch)
    drive.call(body(turn("fix the bug")))
    drive.call(body(turn("fix the bug"), system="another agent"))
    drive.call(body(turn("write docs")))
    drive.call(body(turn("fix the bug", "done", "thanks")))
    await watch.aclose()
    assert [(call.conversation, call.turn) for call in watch.calls] == [(1, 1), (2, 1), (3, 1), (1, 2)]
    assert [conversation.label for conversation in watch.conversations] == ["fix the bug", "fix the bug", "write docs"]
    last = watch.calls[-1]
    assert last.diff.previous == watch.calls[0].id and last.diff.added == (1, 2)
    assert apply_splices(watch.calls[0].messages, last.diff.changes) == last.messages
    assert last.messages[0] is watch.calls[0].messages[0], "calls of a conversation share equal messages"
    assert last.system is watch.calls[0].system
    assert watch.conversations[0].latest is last


async def test_the_first_message_as_a_string_or_as_blocks_with_a_breakpoint_is_one_conversation(
    tmp_path: Path,
) -> None:
    """Clients respell the same request from call to call: content as a string or as one text block, a
    cache breakpoint added to the first message or the system prompt; it stays one conversation."""
    watch = Watch(Recorder(tmp_path))
    drive = Driver(watch)
    drive.call(body(turn("fix the bug"), system="You are a coding agent."))
    blocks = [{"role": "user", "content": [{"type": "text", "text": "fix the bug",
                                             "cache_control": {"type": "ephemeral"}}]},
              {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    system = [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}]
    drive.call(body(blocks, system=system))
    drive.call(body(turn("fix the bug"), system="You are a coding agent, version 2"))
    await watch.aclose()
    assert [(call.conversation, call.turn) for call in watch.calls] == [(1, 1), (1, 2), (2, 1)]


async def test_a_compacted_history_continues_the_conversation_that_wrote_its_summary(tmp_path: Path) -> None:
    watch = Watch(Recorder(tmp_path))
    drive = Driver(watch)
    written = "The bug is in parse(): it fails on empty input.\nNext: add a guard and a test for it."
    drive.call(body(turn("fix the bug", "reading files", "summarize the conversation")), reply=written)
    drive.call(body(turn("other work")))  # the latest conversation with the same system prompt
    summary = f"{CC_SUMMARY_PREFIX} The conversation is summarized below:\n{written}"
    drive.call(body(turn(summary, "ok", "go on")))
    await watch.aclose()
    compacted = watch.calls[-1]
    assert (compacted.conversation, compacted.turn) == (1, 2)
    assert compacted.diff.compacted and compacted.diff.describe().startswith("compacted")
    assert compacted.diff.first_change == "messages.0" and compacted.diff.previous == watch.calls[0].id
    assert [found.marker.kind for found in compacted.markers] == ["compaction_summary"]
    assert compacted.conversation_key == watch.conversations[0].key
    assert len(watch.conversations) == 2 and len(watch.conversations[0].aliases) == 1


async def test_a_summary_nobody_wrote_here_continues_the_latest_conversation_of_its_system(tmp_path: Path) -> None:
    watch = Watch(None)
    drive = Driver(watch)
    drive.call(body(turn("fix the bug")))
    drive.call(body(turn("other work")))
    drive.call(body(turn("elsewhere"), system="another agent"))
    drive.call(body(turn(f"{CC_SUMMARY_PREFIX} summary of earlier work", "ok", "go on")))
    await watch.aclose()
    assert [call.conversation for call in watch.calls] == [1, 2, 3, 2]


async def test_usage_cost_and_the_headless_line(tmp_path: Path) -> None:
    watch = Watch(Recorder(tmp_path))
    drive = Driver(watch)
    drive.call(body(turn("fix the bug")), usage={"input": 1_000, "output": 200, "read": 20_000, "write": 500})
    drive.call(body(turn("fix the bug", "done", "thanks"), model="claude-unknown-9"))
    await watch.aclose()
    priced, unpriced = watch.calls
    assert priced.usage is not None and priced.usage.cache_read_tokens == 20_000
    # claude-sonnet-5-5: $2 in, $10 out, $2.50 cache write, $0.10 cache read per million tokens
    expected = (1_000 * 2.0 + 200 * 10.0 + 500 * 2.50 + 20_000 * 0.10) / 1_000_000
    assert priced.cost is not None and abs(priced.cost - expected) < 1e-12
    line = describe_call(priced, clock="12:00:00")
    assert line == ("12:00:00 · #1 · claude-sonnet-5-5 · conv 1.1 · 1 msgs · in 1,000 cache r 20,000 w 500 out 200"
                    f" · ${expected:.4f} · first call, 1 message(s)")
    assert unpriced.cost is None and "$?" in describe_call(unpriced)
    assert "model changed, +2 added" in describe_call(unpriced)


async def test_a_view_that_subscribes_late_gets_every_call_then_the_new_ones(tmp_path: Path) -> None:
    watch = Watch(None)
    drive = Driver(watch)
    drive.call(body(turn("first")))
    seen: list[tuple[str, int]] = []

    async def view() -> None:
        async with aclosing(watch.events()) as events:
            async for event in events:
                assert isinstance(event, CallStarted | CallFinished)
                seen.append((type(event).__name__, event.call.number))
                if len(seen) == 4:
                    return

    await until_finished(watch, 1)
    task = asyncio.create_task(view())
    await asyncio.sleep(0)  # one step of the loop, not a wait: the view subscribes before the next call
    drive.call(body(turn("second")))
    await asyncio.wait_for(task, 10)
    await watch.aclose()
    assert seen == [("CallStarted", 1), ("CallFinished", 1), ("CallStarted", 2), ("CallFinished", 2)]


async def test_a_body_that_is_not_json_is_forwarded_and_recorded_as_text(tmp_path: Path) -> None:
    watch = Watch(Recorder(tmp_path))
    Driver(watch).call(b"{not json", status=400)
    await watch.aclose()
    (call,) = watch.calls
    assert call.body_error is not None and call.messages == []
    request, response = read_record(Path(call.record or ""))
    assert request["body_text"] == "{not json" and "body" not in request
    assert response["status"] == 400


async def test_a_record_that_cannot_be_written_is_said_and_the_calls_go_on(tmp_path: Path) -> None:
    (tmp_path / ".ctxtui").mkdir()
    (tmp_path / ".ctxtui" / "proxy").write_text("a file where the folder should be")
    watch = Watch(Recorder(tmp_path))
    notices: list[str] = []
    finished: list[int] = []

    async def view() -> None:
        async with aclosing(watch.events()) as events:
            async for event in events:
                if isinstance(event, ProxyNotice):
                    notices.append(event.message)
                elif isinstance(event, CallFinished):
                    finished.append(event.call.number)

    task = asyncio.create_task(view())
    await asyncio.sleep(0)  # one step of the loop, not a wait: the view subscribes before the first call
    drive = Driver(watch)
    drive.call(body(turn("one")))
    drive.call(body(turn("one", "two", "three")))
    await watch.aclose()
    await asyncio.wait_for(task, 10)
    assert finished == [1, 2]
    assert len(notices) == 2 and all("not recorded" in notice and "proxy" in notice for notice in notices)
    assert watch.calls[1].diff.added == (1, 2)
