"""The pipeline's thresholds (the seed's defaults, every one configurable) and its one error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]


@dataclass
class CompactionSettings:
    """Thresholds of the pipeline (defaults from the seed texts); every one is configurable."""

    context_char_limit: int = 50_000
    micro_target_ratio: float = 0.8
    tool_result_batch_char_limit: int = 200_000
    large_result_char_limit: int = 30_000
    persisted_preview_chars: int = 2_000
    fit_preview_chars: int = 1_000
    keep_recent_results: int = 3
    micro_min_chars: int = 120
    snip_trigger_messages: int = 50
    snip_target_messages: int = 30
    snip_keep_head: int = 3
    reactive_keep_messages: int = 5
    max_reactive_retries: int = 1
    summary_input_char_limit: int = 80_000

    def __post_init__(self) -> None:
        if not 0 < self.micro_target_ratio <= 1:
            raise ValueError("micro_target_ratio must be in (0, 1]")
        if self.snip_keep_head < 1:
            raise ValueError("snip_keep_head must be at least 1")
        if not self.snip_keep_head + 2 <= self.snip_target_messages < self.snip_trigger_messages:
            raise ValueError(
                "snip settings need snip_keep_head + 2 <= snip_target_messages < snip_trigger_messages"
            )
        for name in ("context_char_limit", "tool_result_batch_char_limit", "summary_input_char_limit"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        for name in (
            "persisted_preview_chars",
            "fit_preview_chars",
            "keep_recent_results",
            "micro_min_chars",
            "reactive_keep_messages",
            "max_reactive_retries",
            "large_result_char_limit",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")

    @property
    def micro_target_chars(self) -> int:
        return int(self.context_char_limit * self.micro_target_ratio)


class CompactionError(Exception):
    """A step could not finish; nothing was replaced.

    `partial` is the lossless result of the steps that did succeed (or None), so a caller may
    still go on with it.
    """

    def __init__(self, message: str, partial: list[Message] | None = None) -> None:
        super().__init__(message)
        self.partial = partial
