"""server-clear's incremental view (ClearedView) is, call for call, what the documented rule gives when
computed from scratch on the whole history (cleared_view), on real trajectories with low triggers."""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.engines.compare import Replay, cleared_view, run_engine
from core.engines.edits import server_engine
from core.engines.pricing import Memo
from core.engines.replay import load
from core.history.sizes import dumps
from core.history.tokens import TokenCounter

FIXTURES = sorted((Path(__file__).parents[2] / "fixtures" / "trajectories").rglob("*.gz"))


@pytest.mark.parametrize("path", FIXTURES[:4], ids=lambda path: path.name)
@pytest.mark.parametrize(("trigger", "keep", "at_least"), [(3_000, 3, 0), (8_000, 1, 2_000), (1_000, 0, 0)])
def test_the_incremental_view_is_the_rule_applied_from_scratch(path: Path, trigger: int, keep: int,
                                                              at_least: int) -> None:
    recorded = load(path)
    settings = replace(Settings(offline=True), engine="server-clear", clear_trigger_tokens=trigger,
                       clear_keep_tool_uses=keep, clear_at_least_tokens=at_least)
    engine = server_engine(settings)
    assert engine is not None
    counter = TokenCounter()
    sent: list[tuple[list[Any], list[Any]]] = []
    with tempfile.TemporaryDirectory() as scratch:
        replay = Replay("server-clear", recorded, settings, Path(scratch), counter, Memo(counter))

        def observe(number: int, messages: Any) -> None:
            history = replay.history
            sent.append((list(messages), cleared_view(replay, engine, list(history))))

        replay.observe = observe
        asyncio.run(run_engine("server-clear", replay))
    assert len(sent) == len(recorded.calls)
    cleared_calls = 0
    for number, (view, expected) in enumerate(sent, 1):
        assert dumps(view) == dumps(expected), f"call {number}"
        cleared_calls += any("cleared by context management" in dumps(message) for message in view)
    assert cleared_calls, "the triggers were meant to make the server clear"
