"""`ctxtui inspect FILE --compare`'s text table tells engines apart that cost a fraction of a cent
apart (it rounded every cost to the cent, so they read as equal)."""

from __future__ import annotations

from typing import Any

from core.engines.compare import compare_text


def engine(name: str, cost: float | None) -> dict[str, Any]:
    return {"engine": name, "calls": 3, "peak_tokens": 1_500, "mean_tokens": 1_200, "input_tokens": 0,
            "cache_read_tokens": 2_000, "cache_write_tokens": 1_600, "cost": cost, "summaries": 0,
            "facts_not_visible": 0}


def rows(text: str) -> dict[str, str]:
    return {line.split()[0]: line for line in text.splitlines() if line.startswith(("client", "server"))}


def test_costs_a_fraction_of_a_cent_apart_read_differently_and_stay_in_their_column() -> None:
    data = {"file": "s.jsonl", "kind": "session", "model": "m", "priced_as": "m",
            "engines": [engine("client", 0.0123), engine("server-clear", 0.0126), engine("server-compact", 0.0123)]}
    text = compare_text(data)
    found = rows(text)
    assert " 0.012 " in found["client"] and " 0.013 " in found["server-clear"]
    header = text.splitlines()[2]
    end = header.index("cost") + len("cost")
    assert all(line[:end].endswith(("0.012", "0.013")) for line in found.values())
    assert max(len(line) for line in text.splitlines()) <= 80


def test_equal_costs_keep_cents_and_an_unknown_price_is_a_dash() -> None:
    data = {"file": "s.jsonl", "kind": "session", "model": "m", "priced_as": "m",
            "engines": [engine("client", 1.5), engine("server-clear", 1.5), engine("server-compact", None)]}
    found = rows(compare_text(data))
    assert " 1.50 " in found["client"] and " - " in found["server-compact"]
