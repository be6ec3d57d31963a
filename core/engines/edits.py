"""The server engine the settings ask for: the `engine` setting and the settings named after it, as
the `ServerEngine` whose edits a request carries (core/model/edits.py)."""

from __future__ import annotations

from core.config import Settings, exclude_tools
from core.model.edits import ServerEngine


def server_engine(settings: Settings) -> ServerEngine | None:
    """The server engine `settings` ask for; None for the client engine."""
    if settings.engine == "client":
        return None
    return ServerEngine(
        settings.engine,
        settings.clear_trigger_tokens,
        settings.clear_keep_tool_uses,
        settings.clear_at_least_tokens,
        tuple(exclude_tools(settings.clear_exclude_tools)),
        settings.clear_tool_inputs,
        settings.clear_thinking_keep,
        settings.compact_trigger_tokens,
        settings.compact_instructions,
    )
