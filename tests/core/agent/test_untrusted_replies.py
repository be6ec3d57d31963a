"""What the API and old session files send is made fit for the history.

Over the real SDK against tests/support/fakeapi.py:
- tool_use ids the API would refuse back (duplicates, characters outside `[a-zA-Z0-9_-]`) are renamed
  where the reply enters the history, consistently: each result still answers its own call, and
  every later request carries only ids the API accepts, so the session can go on;
- a session written with such ids is repaired the same way when it is resumed;
- a lone surrogate in a reply, in the person's prompt or in a session file never reaches a request
  or the session log: text is valid UTF-8 (a visible escape where a byte was not UTF-8);
- headless `-p` with a byte that is not UTF-8 (argv or stdin), and `--resume` after it, finish
  without a traceback on the offline model.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import Agent
from core.events import TurnFinished
from core.history import pairing_problems
from core.sessions.log import SessionLog
from tests.support.agents import Build, sdk_agents
from tests.support.cli import ctxtui, env_without_key
from tests.support.fakeapi import FakeAnthropicServer, settings_for, text_reply, tool_reply
from tests.support.permission import run

Message = dict[str, Any]
API_ID = re.compile(r"[a-zA-Z0-9_-]+")


@pytest.fixture
async def build(anthropic_env: FakeAnthropicServer, tmp_path: Path) -> AsyncIterator[Build]:
    async with sdk_agents(tmp_path) as make:
        yield make


def sendable(messages: list[Message]) -> None:
    """Every tool_use id is one the API accepts, no two alike, and the pairing holds."""
    ids = [block["id"] for message in messages if isinstance(message["content"], list)
           for block in message["content"] if block.get("type") == "tool_use"]
    assert all(API_ID.fullmatch(tool_id) for tool_id in ids), ids
    assert len(ids) == len(set(ids)), ids
    assert pairing_problems(messages) == []


def answers(messages: list[Message]) -> dict[str, str]:
    """The path each read_file call read -> the text of the result that answers that very call."""
    paths = {block["id"]: block["input"]["path"] for message in messages if isinstance(message["content"], list)
             for block in message["content"] if block.get("type") == "tool_use"}
    return {paths[block["tool_use_id"]]: block["content"] for message in messages
            if isinstance(message["content"], list) for block in message["content"]
            if block.get("type") == "tool_result"}


def strict_utf8(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # raises on anything that is not valid UTF-8


def session_file(workdir: Path) -> Path:
    (found,) = sorted((workdir / ".ctxtui" / "sessions").glob("session_*.jsonl"))[-1:]
    return found


def write_files(workdir: Path) -> None:
    for name in ("a", "b", "c", "d"):
        (workdir / f"{name}.txt").write_text(f"contents of {name}\n", encoding="utf-8")


# --------------------------------------------------------------------------- tool ids


async def test_refused_and_duplicate_ids_are_renamed_where_the_reply_enters(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    write_files(tmp_path)
    anthropic_env.script(
        tool_reply([("toolu_dup", "read_file", {"path": "a.txt"}), ("toolu_dup", "read_file", {"path": "b.txt"}),
                    ("toolu bad/id.1!", "read_file", {"path": "c.txt"}), ("", "read_file", {"path": "d.txt"})]),
        text_reply("read them"),
        tool_reply([("toolu_dup", "read_file", {"path": "a.txt"})]),  # an id from an earlier reply, again
        text_reply("again"),
    )
    agent = build()

    first = await run(agent, "read four files")
    second = await run(agent, "and a.txt again")

    assert isinstance(first[-1], TurnFinished) and first[-1].error is None
    assert isinstance(second[-1], TurnFinished) and second[-1].error is None
    requests = [body["messages"] for body in anthropic_env.message_requests()]
    assert len(requests) == 4
    for messages in [*requests, list(agent.messages)]:
        sendable(messages)
    assert answers(requests[1]) == {f"{name}.txt": f"contents of {name}\n" for name in "abcd"}
    reread = [block for block in agent.messages[-2]["content"] if block.get("type") == "tool_result"]
    assert reread[0]["content"] == "contents of a\n"
    sendable(SessionLog.load(session_file(tmp_path)))


async def test_a_session_with_refused_ids_is_repaired_when_it_is_resumed(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    def use(tool_id: str, path: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": path}}

    def result(tool_id: str, text: str) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": tool_id, "content": text}

    history = [
        {"role": "user", "content": "read"},
        {"role": "assistant", "content": [use("toolu_x", "a.txt"), use("toolu_x", "b.txt")]},
        {"role": "user", "content": [result("toolu_x", "A"), result("toolu_x", "B")]},
        {"role": "assistant", "content": [use("toolu.x", "c.txt")]},
        {"role": "user", "content": [result("toolu.x", "C")]},
        {"role": "assistant", "content": [use("toolu_x", "d.txt")]},
        {"role": "user", "content": [result("toolu_x", "D")]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    folder = tmp_path / ".ctxtui" / "sessions"
    folder.mkdir(parents=True)
    lines = [{"type": "meta", "created": 1.0}, *({"type": "message", "message": m} for m in history)]
    (folder / "session_20240101-000000-1-abcdef.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    anthropic_env.script(text_reply("resumed"))

    agent = build(resume=True)
    events = await run(agent, "go on")

    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    (body,) = anthropic_env.message_requests()
    sendable(body["messages"])
    assert answers(body["messages"]) == {"a.txt": "A", "b.txt": "B", "c.txt": "C", "d.txt": "D"}


# --------------------------------------------------------------------------- text that is not UTF-8


async def test_a_lone_surrogate_in_a_reply_never_reaches_a_request_or_the_log(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    write_files(tmp_path)
    anthropic_env.script(
        tool_reply([("toolu_1", "read_file", {"path": "a.txt"})], text="look \udcff here"),
        text_reply("done \ud800 and a pair split in two: \ud83d\ude00"),
    )
    agent = build()

    events = await run(agent, "read a.txt")

    finish = events[-1]
    assert isinstance(finish, TurnFinished) and finish.error is None
    assert finish.text == "done \\ud800 and a pair split in two: 😀"
    second = anthropic_env.message_requests()[1]["messages"]
    assert second[1]["content"][0]["text"] == "look \\xff here"
    json.dumps(list(agent.messages), ensure_ascii=False).encode("utf-8")
    await agent.aclose()
    assert "\\xff" in strict_utf8(session_file(tmp_path))


async def test_a_lone_surrogate_in_the_prompt_is_made_visible_and_the_turn_goes_on(
    build: Build, anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    anthropic_env.script(text_reply("fine"), text_reply("still fine"))
    agent = build()

    first = await run(agent, os.fsdecode(b"name \xff.txt"))  # how argv gives a byte that is not UTF-8
    second = await run(agent, "next")

    assert [event.error for event in (first[-1], second[-1]) if isinstance(event, TurnFinished)] == [None, None]
    assert anthropic_env.message_requests()[0]["messages"] == [{"role": "user", "content": "name \\xff.txt"}]


async def test_a_workdir_whose_name_is_not_utf8_does_not_break_the_requests(
    anthropic_env: FakeAnthropicServer, tmp_path: Path
) -> None:
    workdir = tmp_path / os.fsdecode(b"project-\xff")
    workdir.mkdir()
    anthropic_env.script(text_reply("fine"))
    agent = Agent.from_settings(settings_for(workdir))

    events = await run(agent, "hello")
    await agent.aclose()

    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    assert "project-\\xff" in anthropic_env.message_requests()[0]["system"]


def test_replay_makes_an_old_session_valid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "session_old.jsonl"
    lines = [
        '{"type": "meta", "created": 1.0}',
        # as the log wrote lone surrogates before: JSON escapes, which decode back to them
        '{"type": "message", "message": {"role": "user", "content": "a \\udcff b"}}',
        '{"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "x \\ud800"}]}}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")

    messages = SessionLog.load(path)

    assert messages == [{"role": "user", "content": "a \\xff b"},
                        {"role": "assistant", "content": [{"type": "text", "text": "x \\ud800"}]}]


@pytest.mark.parametrize("via", ["argv", "stdin"])
def test_headless_with_a_byte_that_is_not_utf8_finishes_and_resumes(tmp_path: Path, via: str) -> None:
    import subprocess

    from tests.support.cli import command

    prompt = b"hello \xff there"
    args = [*command(), "-p", os.fsdecode(prompt) if via == "argv" else "-", "--workdir", str(tmp_path)]
    done = subprocess.run(args, input=prompt if via == "stdin" else b"", env=env_without_key(),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"\\xff" in done.stdout
    strict_utf8(session_file(tmp_path))

    again = ctxtui("--resume", "-p", "help", "--workdir", str(tmp_path), timeout=60)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
