"""A session's cache economics, read back from its log: what `ctxtui inspect FILE --report` prints.

Every model call's sample is in the session file (an "event" record of kind ContextSampled, the
sample's fields as `dataclasses.asdict` wrote them). `read_samples` reads them back through
core/jsonlines.py (a line of the wrong shape, too long or nested too deep is skipped) and checks
every figure as it enters (core/usage/figures.py: a token count or a cost that is none is None,
unknown); `economics` adds them up: calls, the cost and its four parts, the tokens by kind, the hit
rate (the share of prompt tokens read from the cache), the misses by cause and by what caused them,
the tokens written again, and where the API's diagnosis disagreed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.jsonlines import read_records
from core.usage.figures import cost_figure, token_figure

_PARTS = ("input", "cache_write", "cache_read", "output")
_TOKENS = ("input_tokens", "cache_read_tokens", "cache_creation_tokens", "output_tokens", "thinking_tokens")


def read_samples(path: Path) -> list[dict[str, Any]]:
    """The samples a session file recorded, oldest first, their figures checked (`checked_sample`).

    Raises OSError when the file cannot be opened as a regular file (a symlink to one is followed:
    the person named it)."""
    samples: list[dict[str, Any]] = []
    for record in read_records(path, follow_symlinks=True):
        if (
            not isinstance(record, dict)
            or record.get("type") != "event"
            or record.get("kind") != "ContextSampled"
        ):
            continue
        event = record.get("event")
        sample = event.get("sample") if isinstance(event, dict) else None
        if isinstance(sample, dict):
            samples.append(checked_sample(sample))
    return samples


def checked_sample(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A sample as a file holds it, with each figure `economics` adds up checked: token counts and
    costs that are none become None; a `cost_parts` or `cache_miss` that is no object is None."""
    checked = dict(sample)
    for key in _TOKENS:
        checked[key] = token_figure(sample.get(key))
    checked["cost"] = cost_figure(sample.get("cost"))
    split = sample.get("cost_parts")
    checked["cost_parts"] = (
        {name: cost_figure(split.get(name)) for name in _PARTS} if isinstance(split, dict) else None
    )
    miss = sample.get("cache_miss")
    checked["cache_miss"] = (
        {**miss, "tokens": token_figure(miss.get("tokens"))} if isinstance(miss, dict) else None
    )
    return checked


def economics(samples: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The sums of a session's samples, as `read_samples` checked them (JSON-ready)."""
    calls = summaries = failed = 0
    tokens = Counter[str]()
    parts = dict.fromkeys(_PARTS, 0.0)
    cost = 0.0
    priced = False
    causes: dict[str, dict[str, int]] = {}
    culprits = Counter[str]()
    disagreements = 0
    for sample in samples:
        if sample.get("kind") == "summary":
            summaries += 1
        else:
            calls += 1
        if sample.get("error"):
            failed += 1
        for key in _TOKENS:
            tokens[key] += sample.get(key) or 0
        if sample.get("cost") is not None:
            priced = True
            cost += sample["cost"]
        split = sample.get("cost_parts")
        if isinstance(split, Mapping):
            for name in _PARTS:
                parts[name] += split.get(name) or 0.0
        miss = sample.get("cache_miss")
        if isinstance(miss, Mapping) and isinstance(miss.get("cause"), str):
            entry = causes.setdefault(miss["cause"], {"calls": 0, "tokens": 0})
            entry["calls"] += 1
            entry["tokens"] += miss.get("tokens") or 0
            culprits[str(miss.get("by") or "nothing of ours")] += 1
        if _disagrees(miss, sample.get("api_miss_reason")):
            disagreements += 1
    prompt = tokens["input_tokens"] + tokens["cache_read_tokens"] + tokens["cache_creation_tokens"]
    return {
        "calls": calls,
        "summary_calls": summaries,
        "failed_calls": failed,
        "cost": round(cost, 6) if priced else None,
        "cost_parts": {name: round(value, 6) for name, value in parts.items()} if priced else None,
        "tokens": dict(tokens),
        "hit_rate": tokens["cache_read_tokens"] / prompt if prompt else None,
        "misses": causes,
        "misses_by": dict(culprits),
        "written_again": sum(entry["tokens"] for name, entry in causes.items() if name != "first_call"),
        "api_disagreements": disagreements,
    }


def _disagrees(miss: Any, api: Any) -> bool:
    from core.values.miss import agrees

    if not isinstance(api, str):
        return False
    cause = miss.get("cause") if isinstance(miss, Mapping) else None
    return agrees(cause if isinstance(cause, str) else None, None if api == "none" else api) is False


def economics_text(data: Mapping[str, Any]) -> list[str]:
    """The economics as report lines."""
    lines = [
        f"cache economics: {data['calls']} call(s), {data['summary_calls']} summary call(s)"
        + (f", {data['failed_calls']} failed" if data["failed_calls"] else "")
    ]
    if data["cost"] is not None:
        split = data["cost_parts"]
        lines.append(
            f"  cost ${data['cost']:.4f}: input ${split['input']:.4f}, cache write ${split['cache_write']:.4f}, "
            f"cache read ${split['cache_read']:.4f}, output ${split['output']:.4f}"
        )
    else:
        lines.append("  cost: not priced (offline, or a model without a price)")
    tokens = data["tokens"]
    rate = f"{100 * data['hit_rate']:.1f}%" if data["hit_rate"] is not None else "-"
    lines.append(
        f"  hit rate {rate}: {tokens.get('cache_read_tokens', 0):,} read, "
        f"{tokens.get('cache_creation_tokens', 0):,} written, {tokens.get('input_tokens', 0):,} uncached, "
        f"{tokens.get('output_tokens', 0):,} output ({tokens.get('thinking_tokens', 0):,} thinking)"
    )
    if not data["misses"]:
        lines.append("  no cache misses recorded")
    for cause, entry in sorted(data["misses"].items(), key=lambda item: -item[1]["calls"]):
        lines.append(
            f"  miss {cause:<17} {entry['calls']:>4} call(s), {entry['tokens']:>10,} tokens written again"
        )
    if data["misses_by"]:
        lines.append(
            "  misses caused by: " + ", ".join(f"{name} {count}" for name, count in data["misses_by"].items())
        )
    if data["api_disagreements"]:
        lines.append(f"  the API's diagnosis disagreed with ctxtui's on {data['api_disagreements']} call(s)")
    return lines


__all__ = ["checked_sample", "economics", "economics_text", "read_samples"]
