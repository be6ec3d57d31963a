"""The cache-aware timing's rule (core/usage/payback.py): a step that rewrites a warm prefix runs when
what it saves on later reads pays for the rewrite within the calls the session is likely to make."""

from __future__ import annotations

import pytest

from core.usage.cache import break_even_calls
from core.usage.payback import MIN_EXPECTED_CALLS, expected_calls, multipliers, pays_back
from core.usage.prices import price_for


def test_expected_calls_are_the_calls_made_so_far_and_at_least_the_floor() -> None:
    assert expected_calls(0) == MIN_EXPECTED_CALLS
    assert expected_calls(3) == MIN_EXPECTED_CALLS
    assert expected_calls(40) == 40
    assert expected_calls(2, floor=1) == 2


def test_a_step_pays_back_exactly_when_its_break_even_is_within_the_calls() -> None:
    price = price_for("claude-sonnet-5-5")
    assert price is not None
    write, read = multipliers(price, "5m")
    for invalidated, saved in ((10_000, 500), (10_000, 5_000), (2_000, 30_000), (50_000, 1_000)):
        calls = break_even_calls(invalidated, saved, price, "5m")
        assert calls is not None
        assert pays_back(invalidated, saved, calls + 0.01, write, read)
        assert not pays_back(invalidated, saved, calls - 0.01, write, read)


def test_multipliers_follow_the_model_and_the_ttl_and_fall_back_to_the_apis_usual_ones() -> None:
    price = price_for("claude-sonnet-5-5")
    assert price is not None
    write, read = multipliers(price, "5m")
    assert write == pytest.approx(price.write("5m") / price.input) and read == pytest.approx(price.cache_read / price.input)
    assert multipliers(price, "1h")[0] > write
    assert multipliers(None, "5m") == (1.25, 0.1)
    assert multipliers(None, "1h") == (2.0, 0.1)


def test_nothing_saved_never_pays_and_nothing_invalidated_always_does() -> None:
    assert not pays_back(0, 0, 100, 1.25, 0.1)
    assert not pays_back(1_000, -5, 100, 1.25, 0.1)
    assert pays_back(0, 1, 1, 1.25, 0.1)
