"""`ctxtui inspect`: every file kind it reads, the exact breakdown, and the dry run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.archive import Archive
from core.compaction import CompactionSettings, Compactor
from core.events import CompactionStep
from core.history import estimate_chars
from core.history.tokens import TokenCounter
from core.markers import persisted_output, placeholder
from core.sessions.claude_code import read_claude_code
from core.sessions.inspection import CATEGORIES, breakdown, dry_run, load_file, report
from core.sessions.log import SessionLog
from tests.support.cli import ctxtui


def big_history(results: int = 8, size: int = 9_000) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read every file"}]
    for n in range(results):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"reading f{n}"},
            {"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"path": f"f{n}.txt"}},
        ]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"line {n}\n" * (size // 7)},
        ]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    return messages


def write_transcript(folder: Path, messages: list[dict[str, Any]]) -> Path:
    path = folder / "transcript.jsonl"
    path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the breakdown


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.one_of(text, st.just(placeholder("a/b.txt")))}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": text, "signature": text}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": text, "name": text,
                           "input": st.dictionaries(text, st.one_of(text, st.integers()), max_size=3)}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": text, "content": st.one_of(
        text, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": text}), max_size=2))}),
    st.fixed_dictionaries({"type": st.just("image"), "source": st.fixed_dictionaries(
        {"type": st.just("base64"), "media_type": st.just("image/png"), "data": text})}),
)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                 "content": st.one_of(text, st.lists(block, max_size=4))})


@settings(max_examples=150, deadline=None)
@given(messages=st.lists(message, max_size=8))
def test_breakdown_adds_up_exactly_to_estimate_chars(messages: list[dict[str, Any]]) -> None:
    counts = breakdown(messages)
    assert set(counts) == set(CATEGORIES)
    assert all(value >= 0 for value in counts.values())
    assert sum(counts.values()) == estimate_chars(messages)


async def test_breakdown_puts_each_kind_of_text_in_its_category(tmp_path: Path) -> None:
    saved = await Archive(tmp_path).save_tool_result("t", "the full output")
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "text", "text": "hi!"},
                                          {"type": "tool_use", "id": "t", "name": "bash", "input": {"c": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "out"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": placeholder(saved)}]},
    ]
    counts = breakdown(messages, tmp_path)
    assert counts["user"] == len("hello")
    assert counts["assistant"] == len("hi!")
    assert counts["tool_use"] == len("bash") + len('{"c": 1}')
    assert counts["tool_result"] == len("out")
    assert counts["markers"] == len(json.dumps(placeholder(saved))) - 2


# a text that only looks like a marker is plain text in the report
async def test_report_counts_only_markers_whose_path_resolves_in_the_archive(tmp_path: Path) -> None:
    saved = await Archive(tmp_path).save_tool_result("toolu_real", "the full output " * 20)
    forged = [placeholder(".task_outputs/tool-results/nothing-here.txt"), placeholder("../../etc/passwd"),
              persisted_output("/etc/passwd", "preview"), "[3 messages archived at .transcripts/none.jsonl]"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number, text in enumerate([placeholder(saved), *forged]):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{number}", "name": "bash",
                                                        "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{number}", "content": text}]}]
    path = write_transcript(tmp_path, messages)

    data = await report(load_file(path), CompactionSettings())

    assert data["breakdown"]["markers"] == len(json.dumps(placeholder(saved))) - 2
    assert data["breakdown"]["tool_result"] == sum(len(json.dumps(text)) - 2 for text in forged)
    assert sum(data["breakdown"].values()) == data["chars"]


# --------------------------------------------------------------------------- the report and the dry run


async def test_report_on_a_transcript_matches_estimate_chars_tokens_and_prepare(tmp_path: Path) -> None:
    messages = big_history()
    path = write_transcript(tmp_path, messages)
    before = sorted(os.listdir(tmp_path))
    data = await report(load_file(path), CompactionSettings())
    assert data["kind"] == "transcript"
    assert data["messages"] == len(messages)
    assert data["chars"] == estimate_chars(messages)
    assert data["tokens"] == TokenCounter().count(messages)
    assert sum(data["breakdown"].values()) == data["chars"]
    assert sorted(os.listdir(tmp_path)) == before  # the dry run wrote nothing beside the file
    # the same decisions as the real pipeline on the same history, run in another directory
    steps: list[CompactionStep] = []
    archive_dir = tmp_path.parent / f"{tmp_path.name}-real"
    archive_dir.mkdir()
    compactor = Compactor(Archive(archive_dir), summarize=None, settings=CompactionSettings(), on_event=steps.append)
    real = await compactor.prepare(messages, "read every file")
    run = data["dry_run"]
    assert [(s["step"], s["before"], s["after"]) for s in run["steps"]] == [
        (s.step, s.chars_before, s.chars_after) for s in steps]
    assert run["steps"] and run["chars_after"] == estimate_chars(real)
    assert run["needs_model"] is False


async def test_a_dry_run_that_would_summarize_says_so_and_calls_no_model(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "x" * 60_000}]
    run = await dry_run(messages, "x", CompactionSettings())
    assert run.needs_model and run.chars_after == run.chars_before


def test_report_json_on_a_request_body_counts_system_and_tools(tmp_path: Path) -> None:
    system = "You are terse." * 10
    tools = [{"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}]
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"model": "m", "system": system, "tools": tools, "messages": messages}))
    result = ctxtui("inspect", str(path), "--report", "--output-format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["kind"] == "request"
    assert data["breakdown"]["system"] == len(json.dumps(system)) and data["breakdown"]["tools"] == len(json.dumps(tools))
    assert data["chars"] == estimate_chars(messages) + data["breakdown"]["system"] + data["breakdown"]["tools"]
    assert sum(data["breakdown"].values()) == data["chars"]


def test_report_text_and_set_overrides(tmp_path: Path) -> None:
    path = write_transcript(tmp_path, big_history(results=6, size=3_000))
    quiet = ctxtui("inspect", str(path), "--report")
    assert quiet.returncode == 0, quiet.stderr
    assert "no step would fire" in quiet.stdout and "breakdown" in quiet.stdout
    tight = ctxtui("inspect", str(path), "--report", "--set", "context_char_limit=15000")
    assert tight.returncode == 0, tight.stderr
    assert "micro_compact" in tight.stdout and "limit 15,000" in tight.stdout
    assert "would run next" not in tight.stdout


async def test_a_session_file_is_read_by_replaying_it(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / ".ctxtui", {"model": "offline", "workdir": str(tmp_path)})
    for item in big_history(results=2, size=100):
        log.message(item)
    await log.close()
    inspected = load_file(log.path)
    assert inspected.kind == "session" and inspected.messages == big_history(results=2, size=100)
    assert inspected.workdir == tmp_path


@pytest.mark.parametrize(
    ("content", "expected"),
    [("{not json", "not valid JSON"), ('{"a": 1}', "expected a list of messages"),
     ('[{"role": "robot", "content": "x"}]', "message 0 is not a Messages API message")],
)
def test_unreadable_files_are_one_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    result = ctxtui("inspect", str(path), "--report")
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr


# --------------------------------------------------------------------------- Claude Code session files


def claude_code_records() -> list[dict[str, Any]]:
    """A session in the shape the format's public descriptions give (one record per content block)."""
    base = {"sessionId": "s1", "cwd": "/home/u/project", "version": "2.0.0", "userType": "external"}
    records: list[dict[str, Any]] = []

    def add(uuid: str, parent: str | None, kind: str, message: dict[str, Any] | None = None, **extra: Any) -> None:
        record = {**base, "uuid": uuid, "parentUuid": parent, "type": kind, "isSidechain": False, **extra}
        if message is not None:
            record["message"] = message
        records.append(record)

    records.append({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}})
    add("u1", None, "user", {"role": "user", "content": "old question"})
    add("a1", "u1", "assistant", {"id": "msg_old", "role": "assistant", "model": "claude",
                                  "content": [{"type": "text", "text": "old answer"}]})
    add("b1", None, "system", subtype="compact_boundary", content="Conversation compacted",
        logicalParentUuid="a1", compactMetadata={"trigger": "auto", "preTokens": 150000})
    add("s1", "b1", "user", {"role": "user", "content": "This session is being continued. Summary: we fixed X."},
        isCompactSummary=True)
    add("u2", "s1", "user", {"role": "user", "content": [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]})
    # one API message written as three records (thinking, text, tool_use) sharing message.id
    add("a2", "u2", "assistant", {"id": "msg_2", "role": "assistant", "content": [
        {"type": "thinking", "thinking": "look at it", "signature": "sig"}]})
    add("a3", "a2", "assistant", {"id": "msg_2", "role": "assistant", "content": [
        {"type": "text", "text": "Let me check two files."}]})
    add("a4", "a3", "assistant", {"id": "msg_2", "role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"file_path": "/a"}}]})
    add("a5", "a4", "assistant", {"id": "msg_2", "role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_b", "name": "Task", "input": {"prompt": "look around"}}]})
    add("r1", "a5", "user", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "file a"}]}, toolUseResult={"x": 1})
    # a sub-agent's conversation (side chain): not part of the main context
    records.append({**base, "uuid": "side1", "parentUuid": None, "type": "user", "isSidechain": True,
                    "message": {"role": "user", "content": "look around"}})
    records.append({**base, "uuid": "side2", "parentUuid": "side1", "type": "assistant", "isSidechain": True,
                    "message": {"id": "msg_side", "role": "assistant", "content": [{"type": "text", "text": "x"}]}})
    add("r2", "r1", "user", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": [{"type": "text", "text": "found y"}]}]})
    add("a6", "r2", "assistant", {"id": "msg_3", "role": "assistant", "content": [
        {"type": "text", "text": "It is a tiny PNG."}]})
    # an abandoned branch (the user edited a message): not on the chain to the last record
    add("dead", "u2", "assistant", {"id": "msg_dead", "role": "assistant", "content": [
        {"type": "text", "text": "abandoned"}]})
    records.append({"type": "summary", "summary": "Picture question", "leafUuid": "a6"})
    # the leaf must be the last conversation record: move the abandoned branch before it
    records.insert(len(records) - 3, records.pop(-2))
    return records


def write_claude_code(folder: Path, records: list[dict[str, Any]]) -> Path:
    path = folder / "0b7e5a2c-session.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records) + '{"type": "user", "mess', encoding="utf-8")
    return path


def test_claude_code_session_is_merged_per_message_without_side_chains(tmp_path: Path) -> None:
    session = read_claude_code(write_claude_code(tmp_path, claude_code_records()))
    assert session.archived == [
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": [{"type": "text", "text": "old answer"}]},
    ]
    assert session.summary == "This session is being continued. Summary: we fixed X."
    assert session.boundaries == 1 and session.sidechain_records == 2 and session.skipped == 1
    assert session.cwd == "/home/u/project"
    roles = [message["role"] for message in session.messages]
    assert roles == ["user", "user", "assistant", "user", "assistant"]
    merged = session.messages[2]["content"]
    assert [block["type"] for block in merged] == ["thinking", "text", "tool_use", "tool_use"]
    results = session.messages[3]["content"]
    assert [block["tool_use_id"] for block in results] == ["toolu_a", "toolu_b"]
    assert session.messages[1]["content"][1]["type"] == "image"
    text = json.dumps(session.messages)
    assert "abandoned" not in text and "msg_side" not in text and '"x"' not in text


def test_claude_code_session_report(tmp_path: Path) -> None:
    path = write_claude_code(tmp_path, claude_code_records())
    result = ctxtui("inspect", str(path), "--report", "--output-format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    session = read_claude_code(path)
    assert data["kind"] == "claude-code"
    assert data["messages"] == 5 and data["chars"] == estimate_chars(session.messages)
    assert data["archived_messages"] == 2 and data["summary"].startswith("This session")
    assert sum(data["breakdown"].values()) == data["chars"]
    text = ctxtui("inspect", str(path), "--report")
    assert "archived before the last compaction: 2 messages" in text.stdout
    assert "2 side-chain records left out" in text.stdout


def test_a_claude_code_file_with_a_broken_chain_is_read_in_file_order(tmp_path: Path) -> None:
    records = claude_code_records()
    for record in records:
        if record.get("uuid") == "a6":
            record["parentUuid"] = "never-written"
    session = read_claude_code(write_claude_code(tmp_path, records))
    assert session.messages[-1]["content"][-1]["text"] == "It is a tiny PNG."
    assert "abandoned" in json.dumps(session.messages)  # file order keeps the dead branch: said, not hidden
