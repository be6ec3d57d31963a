"""A request in Claude Code's shape, as its requests pass through `ctxtui proxy`: system blocks with
cache_control, tool schemas, thinking, and a history that holds its markers (a compaction summary, a
cleared tool result, an interruption note)."""

from __future__ import annotations

from typing import Any

from core.client_markers import CC_CLEARED_RESULT, CC_SUMMARY_PREFIX

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
            {"type": "thinking", "thinking": "I should run the tests.", "signature": "c2lnbmF0dXJl"},
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "pytest -q"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": CC_CLEARED_RESULT}]},
        {"role": "assistant", "content": [{"type": "text", "text": "The test passes now."}]},
        {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
        {"role": "user", "content": [{"type": "text", "text": "now commit it",
                                      "cache_control": {"type": "ephemeral"}}]},
    ]
