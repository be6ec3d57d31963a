"""The pipeline's thresholds (the seed's defaults, every one configurable) and its one error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.setting import Range, setting

Message = dict[str, Any]
GIGA = 1_000_000_000


@dataclass
class CompactionSettings:
    """Thresholds of the pipeline (defaults from the seed texts); every one is a setting, read from the
    config file's `[compaction]` table, `CTXTUI_<NAME>` and `--set` (core/config.py)."""

    context_char_limit: int = setting(
        50_000,
        range=Range(1, GIGA, "characters"),
        help="characters of history above which micro_compact, then fit_tool_results and compact_history run",
    )
    micro_target_ratio: float = setting(
        0.8,
        range=Range(0, 1, "", whole=False, above=True),
        help="micro_compact and fit_tool_results shorten the history to this share of context_char_limit",
    )
    tool_result_batch_char_limit: int = setting(
        200_000,
        range=Range(1, GIGA, "characters"),
        help="tool_result_budget: characters the newest batch of tool results may hold before its "
        "largest results are saved to files",
    )
    large_result_char_limit: int = setting(
        30_000,
        range=Range(1, GIGA, "characters"),
        help="tool_result_budget: only results longer than this are saved to a file",
    )
    persisted_preview_chars: int = setting(
        2_000,
        range=Range(1, GIGA, "characters"),
        help="tool_result_budget: characters of a saved result kept in the history as its preview",
    )
    fit_preview_chars: int = setting(
        1_000,
        range=Range(1, GIGA, "characters"),
        help="fit_tool_results: characters of an oversized result kept in the history as its preview",
    )
    keep_recent_results: int = setting(
        3,
        range=Range(0, 1_000_000, "tool results"),
        help="micro_compact: the newest tool results the model has read that it keeps whole",
    )
    micro_min_chars: int = setting(
        120,
        range=Range(0, GIGA, "characters"),
        help="micro_compact: tool results this short or shorter are kept whole",
    )
    snip_trigger_messages: int = setting(
        50,
        range=Range(3, 1_000_000, "messages"),
        help="snip_compact: the number of messages at which the middle of the history is archived",
    )
    snip_target_messages: int = setting(
        30,
        range=Range(3, 1_000_000, "messages"),
        help="snip_compact: the messages left after a snip (below snip_trigger_messages)",
    )
    snip_keep_head: int = setting(
        3,
        range=Range(1, 1_000_000, "messages"),
        help="snip_compact: the first messages always kept (at most snip_target_messages - 2)",
    )
    reactive_keep_messages: int = setting(
        5,
        range=Range(1, 1_000_000, "messages"),
        help='reactive_compact: the newest messages kept out of the summary when the API says "prompt is '
        'too long"',
    )
    max_reactive_retries: int = setting(
        1,
        range=Range(0, 10, "retries"),
        help="reactive_compact: how many times a call refused as too long is compacted and sent again",
    )
    summary_input_char_limit: int = setting(
        80_000,
        range=Range(1, GIGA, "characters"),
        help="compact_history and reactive_compact: characters of the history the summarizer reads at most "
        "(its head and tail when longer)",
    )
    notes_char_limit: int = setting(
        4_000,
        range=Range(0, GIGA, "characters"),
        help="the note tool: characters the model's notes may hold in all (every compaction carries them "
        "verbatim); a note that would pass it is refused",
    )

    def __post_init__(self) -> None:
        """What the steps need of an object built in code (tests and benches go past the config's
        ranges, never below these); the config refuses a value outside its declared range first."""
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
            "notes_char_limit",
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
