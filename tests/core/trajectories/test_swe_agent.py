"""The SWE-agent / mini-swe-agent reader (core/trajectories/swe_agent.py) on the three real
mini-swe-agent runs in tests/fixtures/trajectories/swe-agent, on damaged files of every kind, and on
an original SWE-agent file (`history`, `tool_call_ids`); and HistoryBuilder's promise that what it
builds is a history the Messages API accepts, checked by hypothesis over random event sequences."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.trajectories as trajectories
from core.sessions.inspection import InspectError, load_file
from core.trajectories import Trajectory, TrajectoryError, read_trajectory
from core.trajectories.model import HistoryBuilder

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories" / "swe-agent"
NAMES = sorted(path.name for path in FIXTURES.glob("*.traj.json.gz"))
NO_RESULT = "[no result recorded]"


def raw(name: str) -> dict[str, Any]:
    """The fixture's JSON as mini-swe-agent wrote it."""
    value: dict[str, Any] = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    return value


def unpacked(tmp_path: Path, name: str) -> Path:
    """The fixture as a plain `.traj.json` file in tmp_path."""
    target = tmp_path / name.removesuffix(".gz")
    target.write_bytes(gzip.decompress((FIXTURES / name).read_bytes()))
    return target


def read(path: Path) -> Trajectory:
    trajectory = read_trajectory(path)
    assert trajectory is not None, path
    return trajectory


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def one_line_error(path: Path) -> str:
    """What `ctxtui inspect` gets from the file: InspectError, one line naming the file (any other
    exception fails the test). read_trajectory itself may say None (not recognised) or raise a
    one-line TrajectoryError naming the file."""
    try:
        found = read_trajectory(path)
    except TrajectoryError as error:
        line = str(error)
        assert "\n" not in line and line.startswith(str(path)), line
    else:
        assert found is None, f"{path} was read as a trajectory"
    with pytest.raises(InspectError) as caught:
        load_file(path)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(str(path)), line
    return line


def assert_valid_history(messages: list[dict[str, Any]], open_at_end: bool = True) -> None:
    """Roles alternate starting with user; every tool_use id is unique; every tool_use is answered
    exactly once in the next user message (the last assistant message's calls may stay open); every
    tool_result answers a tool_use of the assistant message right before it; results come first."""
    assert messages and messages[0]["role"] == "user"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"], (before["role"], after["role"])
    uses = [block["id"] for message in messages for block in message["content"] if block.get("type") == "tool_use"]
    assert len(uses) == len(set(uses)), f"duplicate tool_use ids: {uses}"
    for index, message in enumerate(messages):
        assert message["content"], index
        if message["role"] == "assistant":
            ids = [block["id"] for block in message["content"] if block.get("type") == "tool_use"]
            if index + 1 == len(messages):
                assert open_at_end or not ids
                continue
            answers = [block["tool_use_id"] for block in messages[index + 1]["content"]
                       if block.get("type") == "tool_result"]
            assert sorted(answers) == sorted(ids), (index, ids, answers)
        else:
            previous = messages[index - 1] if index else {"content": []}
            asked = {block["id"] for block in previous["content"] if block.get("type") == "tool_use"}
            kinds = [block.get("type") for block in message["content"]]
            results = [block for block in message["content"] if block.get("type") == "tool_result"]
            assert {block["tool_use_id"] for block in results} <= asked
            assert kinds == sorted(kinds, key=lambda kind: kind != "tool_result"), kinds


# --- the real fixtures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("packed", [True, False], ids=["gzip", "plain"])
def test_real_run_converted(name: str, packed: bool, tmp_path: Path) -> None:
    data = raw(name)
    path = FIXTURES / name if packed else unpacked(tmp_path, name)
    trajectory = read(path)
    source = data["messages"]
    assistants = [message for message in source if message["role"] == "assistant"]

    assert trajectory.format == "swe-agent"
    assert trajectory.calls == len(assistants) >= 30
    assert trajectory.model == "deepseek-chat"
    system = [message["content"] for message in source if message["role"] == "system"]
    assert trajectory.system == system[0] and len(system) == 1
    assert [tool["name"] for tool in trajectory.tools] == ["bash"]
    assert trajectory.skipped == 0

    history = trajectory.messages
    assert_valid_history(history)
    assert sum(1 for message in history if message["role"] == "assistant") == trajectory.calls
    # the task is the one user text; each tool message became exactly its tool_result, in order
    texts = [block["text"] for message in history if message["role"] == "user"
             for block in message["content"] if block.get("type") == "text"]
    assert texts == [message["content"] for message in source if message["role"] == "user"]
    results = [block for message in history if message["role"] == "user"
               for block in message["content"] if block.get("type") == "tool_result"]
    tools = [message for message in source if message["role"] == "tool"]
    assert [block["content"] for block in results] == [message["content"] for message in tools]
    assert [block["tool_use_id"] for block in results] == [message["tool_call_id"] for message in tools]
    # each assistant message: its text, then its calls with the arguments parsed
    converted = [message for message in history if message["role"] == "assistant"]
    for mine, theirs in zip(converted, assistants, strict=True):
        uses = [block for block in mine["content"] if block["type"] == "tool_use"]
        assert [use["id"] for use in uses] == [call["id"] for call in theirs["tool_calls"]]
        assert [use["input"] for use in uses] == [json.loads(call["function"]["arguments"])
                                                 for call in theirs["tool_calls"]]
        assert [block["text"] for block in mine["content"] if block["type"] == "text"] == \
            ([theirs["content"]] if theirs["content"] else [])


@pytest.mark.parametrize("name", NAMES)
def test_only_the_last_call_is_left_open(name: str) -> None:
    history = read(FIXTURES / name).messages
    assert history[-1]["role"] == "assistant"
    open_ids = [block["id"] for block in history[-1]["content"] if block["type"] == "tool_use"]
    answered = {block["tool_use_id"] for message in history for block in message["content"]
                if block.get("type") == "tool_result"}
    every = [block["id"] for message in history for block in message["content"] if block.get("type") == "tool_use"]
    assert set(every) - answered == set(open_ids)
    assert NO_RESULT not in json.dumps(history)  # nothing had to be assumed in a complete run
    assert read(FIXTURES / name).notes == []


@pytest.mark.parametrize("name", NAMES)
def test_call_times_come_from_the_file_and_increase(name: str) -> None:
    trajectory = read(FIXTURES / name)
    created = [message["extra"]["response"]["created"] for message in raw(name)["messages"]
               if message["role"] == "assistant"]
    assert trajectory.times == [float(value) for value in created]
    times = [value for value in trajectory.times if isinstance(value, float)]
    assert len(times) == len(trajectory.times)
    assert all(a <= b for a, b in itertools.pairwise(times))
    assert times[0] < times[-1]


@pytest.mark.parametrize("name", NAMES)
def test_extra_and_exit_never_reach_the_history(name: str) -> None:
    data = raw(name)
    history = read(FIXTURES / name).messages
    text = json.dumps(history, ensure_ascii=False)
    for key in ("raw_output", "extra", "response", "system_fingerprint", "returncode", "timestamp",
                "provider_specific_fields", "function_call", "usage", "actions", "exception_info"):
        assert f'"{key}":' not in text, key  # as a JSON key: the words may well be in what the model read
    # each raw output is in the history exactly as often as in what the model read, never again beside it
    read_texts = [block.get("text") or block.get("content") for message in history for block in message["content"]
                  if block["type"] in ("text", "tool_result")]
    sent_texts = [message["content"] for message in data["messages"] if message["role"] in ("user", "assistant", "tool")]
    for message in data["messages"]:
        if message["role"] == "tool" and len(message["extra"]["raw_output"]) > 40:
            output = message["extra"]["raw_output"]
            assert sum(text.count(output) for text in read_texts) == sum(text.count(output) for text in sent_texts)
    exits = [message["content"] for message in data["messages"] if message["role"] == "exit"]
    assert len(exits) == 1
    blocks = [block for message in history for block in message["content"]]
    assert all(block.get("text") != exits[0] and block.get("content") != exits[0] for block in blocks)
    assert set(message["role"] for message in history) == {"user", "assistant"}
    assert all(set(message) == {"role", "content"} for message in history)
    assert {block["type"] for block in blocks} == {"text", "tool_use", "tool_result"}


def test_exit_after_an_unanswered_call_closes_nothing(tmp_path: Path) -> None:
    """The harness's `exit` is not a turn: the last call stays open rather than answered."""
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "Task"},
                {"role": "assistant", "content": "go", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
                {"role": "exit", "content": "the final patch"}]
    trajectory = read(write(tmp_path / "a.traj.json", {"trajectory_format": "mini-swe-agent-1.1",
                                                        "messages": messages}))
    assert [message["role"] for message in trajectory.messages] == ["user", "assistant"]
    assert "the final patch" not in json.dumps(trajectory.messages)


# --- damaged files ----------------------------------------------------------------------------------------


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return unpacked(tmp_path, NAMES[0])


def test_truncated_json_is_one_line(good: Path, tmp_path: Path) -> None:
    data = good.read_bytes()
    for cut in (len(data) // 2, len(data) - 3, 40):
        path = tmp_path / f"cut{cut}.traj.json"
        path.write_bytes(data[:cut])
        assert "JSON" in one_line_error(path)


def test_truncated_json_on_one_line_is_one_line(good: Path, tmp_path: Path) -> None:
    compact = json.dumps(json.loads(good.read_bytes())).encode()
    path = tmp_path / "flat.traj.json"
    path.write_bytes(compact[: len(compact) * 2 // 3])
    one_line_error(path)


def test_truncated_gzip_is_one_line(tmp_path: Path) -> None:
    packed = (FIXTURES / NAMES[0]).read_bytes()
    path = tmp_path / "cut.traj.json.gz"
    path.write_bytes(packed[: len(packed) // 2])
    assert "cut short" in one_line_error(path)
    inner = tmp_path / "inner.traj.json.gz"
    inner.write_bytes(gzip.compress(gzip.decompress(packed)[:5000]))
    one_line_error(inner)


def test_not_utf8_binary_and_empty_files_are_one_line(good: Path, tmp_path: Path) -> None:
    data = good.read_bytes()
    cases = {
        "notutf8.traj.json": data[:2000] + b"\xff\xfe\x80" + data[2000:],
        "binary.traj.json": bytes(range(256)) * 64,
        "empty.traj.json": b"",
        "blank.traj.json": b"\n \n\t\n",
        "binary.traj.json.gz": b"\x1f\x8b" + bytes(range(256)) * 8,
        "empty.traj.json.gz": gzip.compress(b""),
        "notutf8.traj.json.gz": gzip.compress(data[:2000] + b"\xff" + data[2000:]),
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        line = one_line_error(path)
        if "notutf8" in name or name == "binary.traj.json":
            assert "UTF-8" in line, line


def bomb(tmp_path: Path, inflated: int) -> Path:
    """A small .gz that inflates to `inflated` bytes (a valid trajectory's JSON padded with spaces)."""
    body = json.dumps({"trajectory_format": "mini-swe-agent-1.1", "messages": [
        {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}).encode()
    path = tmp_path / "bomb.traj.json.gz"
    path.write_bytes(gzip.compress(body[:-1] + b" " * (inflated - len(body)) + body[-1:], compresslevel=9))
    assert path.stat().st_size < inflated // 100
    return path


def test_gzip_bomb_stopped_by_the_inflate_limit(tmp_path: Path) -> None:
    path = bomb(tmp_path, 4 << 20)
    with pytest.raises(OSError, match="inflates to more than"):
        trajectories.inflate(path.read_bytes(), path, limit=1 << 20)
    assert len(trajectories.inflate(path.read_bytes(), path, limit=8 << 20)) == 4 << 20


def test_gzip_bomb_past_a_lowered_max_inflated_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MAX_INFLATED is the module's limit: lowered, a file inflating past it is refused in one line."""
    path = bomb(tmp_path, 4 << 20)
    assert read(path).calls == 1  # under the real limit it is an ordinary trajectory
    monkeypatch.setattr(trajectories, "MAX_INFLATED", 1 << 20)
    with pytest.raises(TrajectoryError) as caught:
        read_trajectory(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))
    assert "inflates to more than" in str(caught.value)
    assert "inflates to more than" in one_line_error(path)


def test_wrong_typed_entries_are_skipped_and_counted(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "You are helpful."}, 5, "text", None, ["x"], {"content": "no role"},
                {"role": "narrator", "content": "?"}, {"role": "user", "content": "Fix it."},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
                    "not a call", {"id": "c9", "function": "not a dict"}]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.py"}, 3.5,
                {"role": "assistant", "content": "Done."}]
    trajectory = read(write(tmp_path / "typed.traj.json", {"trajectory_format": "mini-swe-agent-1.1",
                                                           "messages": messages}))
    assert trajectory.skipped == 7
    assert any("7 message(s)" in note for note in trajectory.notes), trajectory.notes
    assert trajectory.calls == 2
    assert_valid_history(trajectory.messages)
    uses = [block for block in trajectory.messages[1]["content"] if block["type"] == "tool_use"]
    assert [use["id"] for use in uses] == ["c1"]
    assert trajectory.messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "a.py"}]
    inspected = load_file(tmp_path / "typed.traj.json")
    assert inspected.kind == "swe-agent" and inspected.skipped == 7


def test_a_tool_message_answering_no_call_is_kept_as_text(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "Task"},
                {"role": "assistant", "content": "ls", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "first"},
                {"role": "tool", "tool_call_id": "ghost", "content": "output of nothing asked"},
                {"role": "tool", "content": "no id at all"},
                {"role": "assistant", "content": "ok"}]
    trajectory = read(write(tmp_path / "orphan.traj.json", {"messages": messages}))
    assert_valid_history(trajectory.messages)
    user = trajectory.messages[2]["content"]
    assert user[0] == {"type": "tool_result", "tool_use_id": "c1", "content": "first"}
    assert {"type": "text", "text": "output of nothing asked"} in user
    assert {"type": "text", "text": "no id at all"} in user
    assert any("2 tool output(s) answered no call" in note for note in trajectory.notes), trajectory.notes


def test_a_call_without_result_before_a_user_turn_is_answered(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "Task"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"a\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"b\"}"}}]},
                {"role": "tool", "tool_call_id": "c2", "content": "b out"},
                {"role": "user", "content": "Format error: answer with one call."},
                {"role": "assistant", "content": "Sorry."}]
    trajectory = read(write(tmp_path / "gap.traj.json", {"trajectory_format": "mini-swe-agent-1.0",
                                                         "messages": messages}))
    assert_valid_history(trajectory.messages, open_at_end=False)
    user = trajectory.messages[2]["content"]
    results = {block["tool_use_id"]: block["content"] for block in user if block["type"] == "tool_result"}
    assert results == {"c1": NO_RESULT, "c2": "b out"}
    assert user[-1] == {"type": "text", "text": "Format error: answer with one call."}
    assert any("1 tool call(s) had no recorded result" in note for note in trajectory.notes), trajectory.notes
    assert trajectory.calls == 2


def test_no_assistant_message_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "none.traj.json", {"trajectory_format": "mini-swe-agent-1.1", "messages": [
        {"role": "system", "content": "S"}, {"role": "user", "content": "Task"}]})
    assert "no assistant message" in one_line_error(path)


# --- an original SWE-agent file ---------------------------------------------------------------------------


def swe_agent_file() -> dict[str, Any]:
    return {"environment": "swe_main", "trajectory": [{"action": "ls", "observation": "a.py"}],
            "info": {"exit_status": "submitted"}, "history": [
                {"role": "system", "content": "SETUP", "agent": "main", "message_type": "system_prompt"},
                {"role": "user", "content": [{"type": "text", "text": "Fix issue 42"}], "agent": "main"},
                {"role": "assistant", "content": "Let me list.", "thought": "Let me list.", "action": "ls",
                 "agent": "main", "message_type": "action",
                 "tool_calls": [{"id": "toolu_1", "type": "function",
                                 "function": {"name": "bash", "arguments": {"command": "ls"}}}]},
                {"role": "tool", "content": [{"type": "text", "text": "a.py\nb.py"}], "tool_call_ids": ["toolu_1"],
                 "agent": "main", "message_type": "observation"},
                {"role": "assistant", "content": "Submitting.", "agent": "main",
                 "tool_calls": [{"id": "toolu_2", "type": "function",
                                 "function": {"name": "submit", "arguments": "{}"}}]},
                {"role": "tool", "content": "Submitted.", "tool_call_ids": ["toolu_2"], "agent": "main"}]}


@pytest.mark.parametrize("name", ["run.traj.json", "run.json"])
def test_original_swe_agent_history_is_read(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, swe_agent_file())
    trajectory = read(path)
    assert trajectory.format == "swe-agent" and trajectory.system == "SETUP" and trajectory.calls == 2
    assert trajectory.messages == [
        {"role": "user", "content": [{"type": "text", "text": "Fix issue 42"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me list."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "bash",
                                           "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py\nb.py"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Submitting."},
                                          {"type": "tool_use", "id": "toolu_2", "name": "submit", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "Submitted."}]}]
    assert load_file(path).kind == "swe-agent"


@pytest.mark.parametrize("name", ["run.traj", "trajectory"])
def test_trajectory_recognised_by_content_whatever_its_name(tmp_path: Path, name: str) -> None:
    """DESIGN: inspect reads trajectories "recognised by content, not by name"; SWE-agent itself
    writes `<instance>.traj` (swe_agent.py's docstring and replay's SUFFIXES name `.traj`)."""
    path = tmp_path / name
    path.write_text(json.dumps(swe_agent_file(), indent=2), encoding="utf-8")
    assert read(path).calls == 2
    inspected = load_file(path)
    assert inspected.kind == "swe-agent"
    assert len(inspected.messages) == 5


def test_gzipped_trajectory_under_a_plain_name_is_read(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    path.write_bytes((FIXTURES / NAMES[0]).read_bytes())  # gzip bytes, no .gz in the name
    assert read(path).calls == read(FIXTURES / NAMES[0]).calls
    assert load_file(path).kind == "swe-agent"


# --- HistoryBuilder, by property --------------------------------------------------------------------------

IDS = st.sampled_from(["", "a", "b", "call_0", "call_1"])
EVENT = st.one_of(
    st.tuples(st.just("user"), st.text("xyz ", max_size=6)),
    st.tuples(st.just("assistant"), st.text("pq ", max_size=4), st.lists(IDS, max_size=3)),
    st.tuples(st.just("result"), IDS, st.text("rst", max_size=5)),
)


def build(events: list[tuple[Any, ...]]) -> tuple[list[dict[str, Any]], list[str]]:
    builder = HistoryBuilder()
    builder.user_text("task")
    outputs: list[str] = []
    for event in events:
        if event[0] == "user":
            builder.user_text(event[1])
        elif event[0] == "assistant":
            builder.assistant(event[1], [(use_id, "bash", {"command": "c"}) for use_id in event[2]])
        else:
            output = f"out{len(outputs)}:{event[2]}"
            outputs.append(output)
            builder.tool_result(event[1], output)
    builder.assistant("end")
    messages, _, _ = builder.finish()
    return messages, outputs


@settings(max_examples=50, deadline=None)
@given(st.lists(EVENT, max_size=12))
def test_history_builder_always_builds_a_valid_history(events: list[tuple[Any, ...]]) -> None:
    """Any sequence of turns, ids reused, repeated, empty or unknown: a history the API accepts, and
    every tool output the file recorded still in it (as a result or as text)."""
    messages, outputs = build(events)
    assert_valid_history(messages, open_at_end=False)
    text = json.dumps(messages)
    for output in outputs:
        assert json.dumps(output)[1:-1] in text


def test_history_builder_reused_call_ids_across_turns() -> None:
    """Providers that number calls per reply (`call_0` in every turn) must not give the API two
    tool_use blocks with the same id (the minimal case the property above finds)."""
    messages, _ = build([("assistant", "", ["call_0"]), ("result", "call_0", "x"),
                         ("assistant", "", ["call_0"]), ("result", "call_0", "y")])
    uses = [block["id"] for message in messages for block in message["content"] if block.get("type") == "tool_use"]
    assert len(uses) == 2 and len(set(uses)) == 2, uses
    assert_valid_history(messages, open_at_end=False)



def test_a_lone_surrogate_escaped_in_the_file_enters_the_history_as_valid_utf8(tmp_path: Path) -> None:
    """JSON may escape half of a surrogate pair: a history must still encode as UTF-8."""
    data = {"trajectory_format": "mini-swe-agent-1.1", "messages": [
        {"role": "system", "content": "you are an agent HALF"},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "looking", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "aHALF.py"},
        {"role": "assistant", "content": "done"}]}
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(data).replace("HALF", "\\udcff"))  # the escape, not the character
    assert "\\udcff" in path.read_text()
    trajectory = read_trajectory(path)
    assert trajectory is not None and trajectory.system is not None
    json.dumps(trajectory.messages, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    trajectory.system.encode("utf-8")
    result = trajectory.messages[2]["content"][0]
    assert result["type"] == "tool_result" and result["content"].startswith("a") and result["content"].endswith(".py")
