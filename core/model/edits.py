"""What a request carries for a server engine: the `context_management` edits and the betas.

`ServerEngine` holds a server engine's parameters; core/engines/edits.py makes one from the settings.

The shapes are the installed SDK's (anthropic.types.beta: BetaClearToolUses20250919EditParam,
BetaClearThinking20251015EditParam, BetaCompact20260112EditParam). A parameter at its "not sent"
value is left out, so the API's own default applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
CLEAR_BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"
SERVER_EDITS: tuple[str, ...] = (CLEAR_TOOL_USES, CLEAR_THINKING, COMPACT)


@dataclass(frozen=True)
class ServerEngine:
    """A server engine's parameters (the `engine` setting and the settings named after it:
    `core.engines.edits.server_engine`)."""

    kind: str  # "server-clear" | "server-compact"
    clear_trigger_tokens: int = 100_000
    clear_keep_tool_uses: int = 3
    clear_at_least_tokens: int = 0
    clear_exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    clear_thinking_keep: int = 1
    compact_trigger_tokens: int = 150_000
    compact_instructions: str = ""

    @property
    def betas(self) -> list[str]:
        return [CLEAR_BETA] if self.kind == "server-clear" else [COMPACT_BETA]

    def clear_edit(self) -> dict[str, Any]:
        """The clear_tool_uses_20250919 edit."""
        edit: dict[str, Any] = {
            "type": CLEAR_TOOL_USES,
            "trigger": {"type": "input_tokens", "value": self.clear_trigger_tokens},
            "keep": {"type": "tool_uses", "value": self.clear_keep_tool_uses},
        }
        if self.clear_at_least_tokens:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least_tokens}
        if self.clear_exclude_tools:
            edit["exclude_tools"] = list(self.clear_exclude_tools)
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return edit

    def thinking_edit(self) -> dict[str, Any]:
        """The clear_thinking_20251015 edit (keep 0 is "all": no thinking is cleared)."""
        keep: Any = (
            "all"
            if self.clear_thinking_keep == 0
            else {"type": "thinking_turns", "value": self.clear_thinking_keep}
        )
        return {"type": CLEAR_THINKING, "keep": keep}

    def compact_edit(self) -> dict[str, Any]:
        edit: dict[str, Any] = {
            "type": COMPACT,
            "trigger": {"type": "input_tokens", "value": self.compact_trigger_tokens},
        }
        if self.compact_instructions.strip():
            edit["instructions"] = self.compact_instructions
        return edit

    def context_management(self, thinking: bool) -> dict[str, Any]:
        """The request's `context_management`: with thinking on, clear_thinking comes first (the API
        wants it before clear_tool_uses)."""
        if self.kind == "server-compact":
            return {"edits": [self.compact_edit()]}
        edits = [self.thinking_edit()] if thinking else []
        return {"edits": [*edits, self.clear_edit()]}


def thinking_on(request: dict[str, Any]) -> bool:
    """The request turns thinking on (a clear_thinking edit needs it)."""
    config = request.get("thinking")
    return isinstance(config, dict) and config.get("type") in ("enabled", "adaptive")
