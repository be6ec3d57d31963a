"""Before the lossy step: which of the facts the model sees now a summary keeps, and which it drops.

A summary replaces the history with one `[Compacted]` message (the current request, the summary,
the transcript's path) followed by what is pinned and the request again (core/compaction/pipeline.py).
A fact visible now stays visible exactly when its text is in that result: in the summary's text,
in the request, or in a pinned message. So the review builds the result as the step would (the
transcript's path stands in at its usual length) and searches it for each visible fact. Without a
summary text yet (the preview before a summary is drafted), `kept` is what stays whatever the
summary says, and `dropped` what then depends on the summary alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.compaction.pins import carried_pins, request_pinned
from core.compaction.plans import TRANSCRIPT_PATH_ESTIMATE
from core.facts.index import escaped
from core.history.sizes import dumps
from core.markers import summary_message
from core.values.records import Fact, FactReport, fact_rank

Message = dict[str, Any]


@dataclass(frozen=True)
class SummaryReview:
    """The visible facts a summary keeps and those it drops (constraints first in each)."""

    kept: tuple[Fact, ...] = ()
    dropped: tuple[Fact, ...] = ()
    summary_written: bool = True  # False: `dropped` is what depends on a summary not written yet

    def dropped_constraints(self) -> list[Fact]:
        return [fact for fact in self.dropped if fact.kind == "constraint"]


def _ranked(facts: Sequence[Fact]) -> tuple[Fact, ...]:
    return tuple(sorted(facts, key=fact_rank))


def review_summary(
    report: FactReport, summary: str | None, messages: Sequence[Message], request: str, pinned: frozenset[str]
) -> SummaryReview:
    """What a summary with the text `summary` keeps of the facts `report` shows visible in `messages`."""
    carried = carried_pins(pinned, messages, request)
    head = {
        "role": "user",
        "content": summary_message("Compacted", request, summary or "", TRANSCRIPT_PATH_ESTIMATE),
    }
    result = [head, *carried]
    if request and (carried or request_pinned(pinned, request)):
        result.append({"role": "user", "content": request})
    texts = [dumps(message) for message in result]
    kept: list[Fact] = []
    dropped: list[Fact] = []
    for fact in report.facts:
        if not fact.visible:
            continue
        needle = escaped(fact.text)
        (kept if any(needle in text for text in texts) else dropped).append(fact)
    return SummaryReview(_ranked(kept), _ranked(dropped), summary is not None)
