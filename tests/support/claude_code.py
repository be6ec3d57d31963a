"""A request in Claude Code's shape, as its requests pass through `ctxtui proxy`: system blocks with
cache_control, tool schemas, thinking, and a history that holds its markers (a compaction summary, a
cleared tool result, an interruption note)."""

from __future__ import annotations

from typing import Any

from core.client_markers import CC_CLEARED_RESULT, CC_SUMMARY_PREFIX
from tests.support.fake_cache import ThinkingSigner

CLAUDE_CODE_USER_AGENT = "claude-cli/2.1.0 (external, cli)"
CONTEXT_MANAGEMENT = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 30000}}]}

CLAUDE_CODE_SYSTEM: list[dict[str, Any]] = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
     "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Environment: working directory /home/me/app", "cache_control": {"type": "ephemeral"}},
]
CLAUDE_CODE_TOOLS: list[dict[str, Any]] = [
    {"name": "Bash", "description": "Run a shell command",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "Read", "description": "Read a file",
     "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
]


def claude_code_messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": CC_SUMMARY_PREFIX + " The conversation is summarized "
                                      "below:\nThe user asked to fix the failing test in app/test_x.py."}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should run the tests.", "signature": _signed("I should run the tests.")},
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "pytest -q"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": CC_CLEARED_RESULT}]},
        {"role": "assistant", "content": [{"type": "text", "text": "The test passes now."}]},
        {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
        {"role": "user", "content": [{"type": "text", "text": "now commit it",
                                      "cache_control": {"type": "ephemeral"}}]},
    ]


# --- a short session in Claude Code's shape, as the proxy's screenshots and snapshot show it -------

MODEL = "claude-sonnet-5-5"
SIDE_MODEL = "claude-haiku-4-5"
SIDE_SYSTEM = "Summarize this coding conversation in under 50 characters. Reply with the title only."
_FAILURE = "\n".join(
    ["============================= test session starts =============================",
     *[f"app/test_x.py::test_case_{index:03d} PASSED" for index in range(1, 301)],
     "app/test_x.py::test_empty_header FAILED",
     "E   ValueError: empty header",
     "=========================== 1 failed, 300 passed in 2.41s ==========================="])
_PARSER = "\n".join(f"def parse_part_{index}(text):\n    return text.split(':', {index})\n" for index in range(400))
_TESTS = "\n".join(f"def test_case_{index:03d}():\n    assert parse_part_{index}('a:b') is not None\n"
                   for index in range(1, 301))


def _marked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as Claude Code sends it: a cache breakpoint on the last block of the last message."""
    sent = list(messages)
    last = dict(sent[-1])
    last["content"] = [*last["content"][:-1], {**last["content"][-1], "cache_control": {"type": "ephemeral"}}]
    sent[-1] = last
    return sent


def _signed(thinking: str) -> str:
    """A signature the loopback fake accepts for MODEL (as the API signed the block Claude Code replays)."""
    return ThinkingSigner().signature(MODEL, thinking)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _use(tool_id: str, name: str, tool_input: dict[str, Any], thinking: str | None = None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": thinking, "signature": _signed(thinking)})
    blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
    return {"role": "assistant", "content": blocks}


def _result(tool_use_id: str, content: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": content}]}


def claude_code_session() -> list[tuple[str, list[dict[str, Any]]]]:
    """The requests of a short session, in order: (which conversation, messages). "main" is the coding
    conversation (it clears an old tool result, then compacts its history), "side" a title request."""
    history: list[dict[str, Any]] = [_user("fix the failing test in app/test_x.py")]
    calls: list[tuple[str, list[dict[str, Any]]]] = [("main", list(history))]
    history += [_use("toolu_01", "Bash", {"command": "pytest -q app/test_x.py"}, "Run the tests first."),
                _result("toolu_01", _FAILURE)]
    calls.append(("main", list(history)))
    calls.append(("side", [_user("fix the failing test in app/test_x.py")]))
    history += [_use("toolu_02", "Read", {"file_path": "app/parser.py"}), _result("toolu_02", _PARSER)]
    calls.append(("main", list(history)))
    history += [_use("toolu_06", "Read", {"file_path": "app/test_x.py"}), _result("toolu_06", _TESTS)]
    calls.append(("main", list(history)))
    history += [_use("toolu_03", "Edit", {"file_path": "app/parser.py"}), _result("toolu_03", "The file was edited.")]
    calls.append(("main", list(history)))
    history[2] = _result("toolu_01", CC_CLEARED_RESULT)  # Claude Code clears an old tool result
    history += [_use("toolu_04", "Bash", {"command": "pytest -q app/test_x.py"}), _result("toolu_04", "301 passed")]
    calls.append(("main", list(history)))
    summary = (CC_SUMMARY_PREFIX + " The conversation is summarized below:\nThe user asked to fix the failing "
               "test in app/test_x.py. parse_header() failed on an empty header; a guard was added in "
               "app/parser.py and all 301 tests pass.")
    history = [_user(summary),
               {"role": "assistant", "content": [{"type": "text", "text": "The fix is in; all tests pass."}]},
               _user("now commit it")]
    calls.append(("main", list(history)))
    history += [_use("toolu_05", "Bash", {"command": "git commit -am 'Guard empty headers'"}),
                _result("toolu_05", "[main 1a2b3c4] Guard empty headers\n 1 file changed, 2 insertions(+)")]
    calls.append(("main", list(history)))
    return calls


async def play_claude_code_session(client: Any) -> None:
    """Send the session's requests through `client` (an AsyncAnthropic pointed at the proxy)."""
    for conversation, messages in claude_code_session():
        if conversation == "side":
            await client.messages.create(model=SIDE_MODEL, max_tokens=50, system=SIDE_SYSTEM, messages=messages)
        else:
            await client.messages.create(model=MODEL, max_tokens=2048, system=CLAUDE_CODE_SYSTEM,
                                         tools=CLAUDE_CODE_TOOLS, messages=_marked(messages),
                                         thinking={"type": "enabled", "budget_tokens": 1024})
