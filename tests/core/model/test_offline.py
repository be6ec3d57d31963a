"""Behaviour of the deterministic offline model (core/model/offline.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.model.base import ModelResponse, PromptTooLongError, TextChunk
from core.model.offline import OfflineModel
from core.model.summary import extractive_summary

TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": name, "input_schema": {"type": "object"}}
    for name in ("bash", "read_file", "write_file", "edit_file", "glob", "compact")
]


async def run(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    model: OfflineModel | None = None,
) -> tuple[list[str], ModelResponse]:
    """Stream one reply; return the text chunks and the final response (checking it comes last)."""
    model = model or OfflineModel()
    chunks: list[str] = []
    final: list[ModelResponse] = []
    async for event in model.stream(
        system="sys", messages=messages, tools=TOOLS if tools is None else tools, max_tokens=1000
    ):
        assert not final, "nothing may follow the ModelResponse"
        if isinstance(event, TextChunk):
            chunks.append(event.text)
        else:
            assert isinstance(event, ModelResponse)
            final.append(event)
    assert len(final) == 1
    return chunks, final[0]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool_uses(response: ModelResponse) -> list[dict[str, Any]]:
    return [block for block in response.content if block["type"] == "tool_use"]


def text_of(response: ModelResponse) -> str:
    return "".join(block["text"] for block in response.content if block["type"] == "text")


async def test_read_two_paths_gives_two_tool_calls_with_distinct_ids() -> None:
    _, response = await run([user("read a.txt b.txt")])
    calls = tool_uses(response)
    assert [call["name"] for call in calls] == ["read_file", "read_file"]
    assert [call["input"] for call in calls] == [{"path": "a.txt"}, {"path": "b.txt"}]
    assert len({call["id"] for call in calls}) == 2
    assert response.stop_reason == "tool_use"
    assert response.content[0]["type"] == "text"
    assert "a.txt" in response.content[0]["text"] and "b.txt" in response.content[0]["text"]


async def test_tool_results_get_a_text_report() -> None:
    history = [user("read a.txt b.txt")]
    _, first = await run(history)
    history.append({"role": "assistant", "content": first.content})
    ids = [call["id"] for call in tool_uses(first)]
    history.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": ids[0], "content": "alpha line\nsecond\nthird\n"},
                {
                    "type": "tool_result",
                    "tool_use_id": ids[1],
                    "content": [{"type": "text", "text": "file not found: b.txt"}],
                    "is_error": True,
                },
            ],
        }
    )
    _, reply = await run(history)
    assert reply.stop_reason == "end_turn"
    assert tool_uses(reply) == []
    text = text_of(reply)
    assert "a.txt" in text and "3 lines" in text and "alpha line" in text
    assert "b.txt" in text and "file not found: b.txt" in text


async def test_bash_glob_and_archived_results_are_reported() -> None:
    history: list[dict[str, Any]] = [
        user("$ make"),
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "make"}},
                {"type": "tool_use", "id": "t2", "name": "glob", "input": {"pattern": "*.py"}},
                {"type": "tool_use", "id": "t3", "name": "read_file", "input": {"path": "big.log"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "cc main.c\nerror: boom\nexit code: 2",
                },
                {"type": "tool_result", "tool_use_id": "t2", "content": "a.py\nb.py\nc.py"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t3",
                    "content": "<persisted-output>\nFull output: .task_outputs/tool-results/t3.txt\n"
                    "Preview:\nxyz\n</persisted-output>",
                },
            ],
        },
    ]
    _, reply = await run(history)
    text = text_of(reply)
    assert "make" in text and "exit code: 2" in text and "error: boom" in text
    assert "3 matches" in text
    assert "archived" in text and ".task_outputs/tool-results/t3.txt" in text


async def test_dollar_runs_bash() -> None:
    _, response = await run([user("$ ls")])
    assert [(call["name"], call["input"]) for call in tool_uses(response)] == [("bash", {"command": "ls"})]
    _, response = await run([user("run echo hi")])
    assert [(call["name"], call["input"]) for call in tool_uses(response)] == [
        ("bash", {"command": "echo hi"})
    ]


async def test_write_takes_the_text_after_the_first_line() -> None:
    _, response = await run([user("write notes.md\nhello")])
    calls = tool_uses(response)
    assert [call["name"] for call in calls] == ["write_file"]
    assert calls[0]["input"] == {"path": "notes.md", "content": "hello"}


async def test_glob_command() -> None:
    _, response = await run([user("glob **/*.py")])
    assert [(call["name"], call["input"]) for call in tool_uses(response)] == [
        ("glob", {"pattern": "**/*.py"})
    ]


async def test_compact_with_focus() -> None:
    _, response = await run([user("compact keep the API notes")])
    calls = tool_uses(response)
    assert [call["name"] for call in calls] == ["compact"]
    assert calls[0]["input"] == {"focus": "keep the API notes"}
    _, bare = await run([user("compact")])
    assert [call["input"] for call in tool_uses(bare)] == [{}]


@pytest.mark.parametrize(
    "marker",
    [
        "[Compacted]\n\nCurrent user request:\nread a.txt b.txt\n\n"
        'Conversation summary (reference only):\n"User requests: read a.txt"\n\n'
        "Full transcript: .transcripts/transcript_1.jsonl",
        "[Reactive compact]\n\nCurrent user request:\nread a.txt b.txt\n\n"
        'Conversation summary (reference only):\n"x"\n\nFull transcript: .transcripts/transcript_2.jsonl',
    ],
)
async def test_compacted_marker_gives_text_only(marker: str) -> None:
    _, response = await run([user(marker)])
    assert tool_uses(response) == []
    assert response.stop_reason == "end_turn"
    text = text_of(response)
    assert "compacted" in text.lower()
    assert "read a.txt b.txt" in text


async def test_snip_marker_as_last_message_gives_text_only() -> None:
    history = [
        user("read a.txt"),
        {"role": "assistant", "content": "done"},
        user("[40 messages archived at .transcripts/transcript_3.jsonl]"),
    ]
    _, response = await run(history)
    assert tool_uses(response) == []
    text = text_of(response)
    assert ".transcripts/transcript_3.jsonl" in text and "read a.txt" in text


async def test_unknown_text_mentions_offline_and_api_key() -> None:
    _, response = await run([user("please refactor the parser")])
    assert tool_uses(response) == []
    text = text_of(response)
    assert "offline" in text
    assert "ANTHROPIC_API_KEY" in text
    assert "help" in text
    assert "refactor the parser" in text


async def test_help_lists_commands() -> None:
    _, response = await run([user("help")])
    text = text_of(response)
    for command in ("read PATH", "run CMD", "glob PATTERN", "write PATH", "compact", "ANTHROPIC_API_KEY"):
        assert command in text


async def test_missing_tool_is_reported_not_called() -> None:
    tools = [tool for tool in TOOLS if tool["name"] != "bash"]
    _, response = await run([user("$ ls")], tools=tools)
    assert tool_uses(response) == []
    assert "bash" in text_of(response) and "not available" in text_of(response)


async def test_deterministic() -> None:
    history = [user("hello"), {"role": "assistant", "content": "hi"}, user("read x.py y.py z.py")]
    first = await run(history, model=OfflineModel(chunk_size=5))
    second = await run(history, model=OfflineModel(chunk_size=5))
    assert first == second


async def test_ids_differ_after_compaction_with_same_length() -> None:
    _, a = await run([user("read a.txt")])
    _, b = await run([user("read b.txt")])
    assert tool_uses(a)[0]["id"] != tool_uses(b)[0]["id"]


@pytest.mark.parametrize("chunk_size", [1, 7, 12, 1000])
async def test_chunks_concatenate_to_the_final_text(chunk_size: int) -> None:
    for request in ("read a.txt b.txt", "help", "something else"):
        chunks, response = await run([user(request)], model=OfflineModel(chunk_size=chunk_size))
        assert len(chunks) >= 1
        assert all(len(chunk) <= chunk_size for chunk in chunks)
        assert "".join(chunks) == response.content[0]["text"]


async def test_usage_estimates() -> None:
    history = [user("read a.txt")]
    _, response = await run(history)
    assert response.usage["input_tokens"] == len(json.dumps(history, ensure_ascii=False)) // 4
    assert response.usage["output_tokens"] > 0


async def test_prompt_char_limit_raises_prompt_too_long() -> None:
    model = OfflineModel(prompt_char_limit=100)
    with pytest.raises(PromptTooLongError):
        await run([user("x" * 500)], model=model)


def make_history(turns: int, result_size: int = 0) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for turn in range(turns):
        history.append(user(f"read src/mod{turn}.py and run tests {turn}"))
        history.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Working on it."},
                    {
                        "type": "tool_use",
                        "id": f"r{turn}",
                        "name": "read_file",
                        "input": {"path": f"src/mod{turn}.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": f"b{turn}",
                        "name": "bash",
                        "input": {"command": f"pytest -k t{turn}"},
                    },
                ],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"r{turn}",
                        "content": f"def f{turn}():\n" + "y" * result_size,
                    },
                    {"type": "tool_result", "tool_use_id": f"b{turn}", "content": f"{turn} passed"},
                ],
            }
        )
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"Turn {turn} done."}]})
    return history


async def test_summarize_real_json_history() -> None:
    history = make_history(3)
    history.append(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "w",
                    "name": "write_file",
                    "input": {"path": "notes.md", "content": "n"},
                }
            ],
        }
    )
    summary = await OfflineModel().summarize(json.dumps(history, ensure_ascii=False), None)
    assert "User requests:" in summary and "Files touched:" in summary and "Commands run:" in summary
    assert "Last results:" in summary
    assert "Focus:" not in summary
    for turn in range(3):
        assert f"read src/mod{turn}.py and run tests {turn}" in summary
        assert f"src/mod{turn}.py" in summary
        assert f"pytest -k t{turn}" in summary
    assert "notes.md (write)" in summary
    assert "2 passed" in summary  # among the last results
    assert "Messages: 13" in summary and "tool calls: 7" in summary


async def test_summarize_dedupes_requests() -> None:
    history = [user("run tests"), {"role": "assistant", "content": "ok"}, user("run tests")]
    summary = extractive_summary(json.dumps(history), None)
    assert summary.count("- run tests") == 1


async def test_summarize_cut_json_of_a_large_history() -> None:
    history = make_history(120, result_size=1_500)
    text = json.dumps(history, ensure_ascii=False)
    assert len(text) > 200_000
    cut = text[:20_000] + "\n...\n" + text[-60_000:]
    with pytest.raises(ValueError):
        json.loads(cut)
    summary = await OfflineModel().summarize(cut, None)
    assert len(summary) < 4_000
    # something from the head and something from the tail survive
    assert "read src/mod0.py and run tests 0" in summary
    assert "read src/mod119.py and run tests 119" in summary
    assert "src/mod119.py" in summary and "pytest -k t119" in summary
    assert "119 passed" in summary
    assert "cut" in summary


async def test_summarize_stays_short_for_an_uncut_large_history() -> None:
    history = make_history(300, result_size=50)
    summary = extractive_summary(json.dumps(history, ensure_ascii=False), "x" * 5_000)
    assert len(summary) < 4_000
    assert "read src/mod0.py" in summary  # the first request is kept
    assert "read src/mod299.py" in summary  # and the newest


async def test_summarize_focus_and_determinism() -> None:
    text = json.dumps(make_history(2), ensure_ascii=False)
    first = await OfflineModel().summarize(text, "keep the API notes")
    second = await OfflineModel().summarize(text, "keep the API notes")
    assert first == second
    assert first.startswith("Focus: keep the API notes")


async def test_summarize_garbage_does_not_crash() -> None:
    summary = extractive_summary('{"role": "user", "content": "unfinished', None)
    assert "Messages: 0" in summary and len(summary) < 4_000
