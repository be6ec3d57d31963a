"""Drop, restore, undo, pin and unpin say in the chat what they cost the prompt cache (issue 30, item
19), as the core computes it: online against the loopback fake API, its cache warm on the test's clock."""

from __future__ import annotations

from core.events import cache_cost_line
from tests.support.fakeapi import FakeAnthropicServer
from tests.support.pilot import send, settled, wait_for
from tests.tui.test_cache_in_app import SIZE, Build, build, clock, script_three_reads
from tui.app import CtxApp
from tui.widgets.chat_blocks import NoticeLine

__all__ = ["build", "clock"]  # the fixtures, shared with the cache tests


def notices(app: CtxApp) -> list[str]:
    return [line.text for line in app.chat.query(NoticeLine)]


async def test_each_steering_action_says_what_it_costs_the_cache(
        build: Build, anthropic_env: FakeAnthropicServer) -> None:
    script_three_reads(anthropic_env)
    agent = build()
    app = CtxApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "read a, b and c")  # micro_compact shortened a and b
        seen: list[object] = []
        original = app.main.inspector.history_changed

        def spy(event: object) -> None:
            seen.append(event)
            original(event)  # type: ignore[arg-type]

        app.main.inspector.history_changed = spy  # type: ignore[method-assign]

        async def steer(command: str, said: str, warm: bool = False) -> str:
            count = len(seen)
            await app.submit(command)
            await wait_for(pilot, lambda: len(seen) > count and any(said in text for text in notices(app)))
            await settled(pilot, app)
            changed = seen[-1]
            cost = cache_cost_line(changed.cache_invalidated_tokens, changed.break_even_calls)  # type: ignore[attr-defined]
            # the first change after a call re-writes part of the warm prefix; a later one, before the next
            # call, none (what it touches is written again anyway): each says so
            assert bool(changed.cache_invalidated_tokens) == warm  # type: ignore[attr-defined]
            line = next(text for text in notices(app) if said in text)
            assert line.endswith(f"; {cost}") and cost.startswith("re-writes "), line
            return line

        await steer("/undo", "undid the last compaction", warm=True)
        await steer("/drop toolu_a", "dropped the result of toolu_a")
        placeholder = agent.ledger[-1].path
        assert placeholder is not None
        await steer(f"/restore {placeholder}", f"restored {placeholder}")

        await app.submit("/pin toolu_b")
        await wait_for(pilot, lambda: any(text.startswith("pinned ") for text in notices(app)))
        pinned = next(text for text in notices(app) if text.startswith("pinned "))
        assert "; the next call's compaction re-writes " in pinned, pinned
    await agent.aclose()


def test_what_a_pin_changes_in_the_next_calls_cost_reads_as_said() -> None:
    from tui.format import pin_cost_line

    assert pin_cost_line(None, None) == ""  # offline: nothing known
    assert pin_cost_line(-1_200, None) == "the next call's compaction re-writes 1.2k fewer cached tokens"
    assert pin_cost_line(3_400, 2.4) == ("the next call's compaction re-writes 3.4k more cached tokens "
                                         "(pays back after 2 calls)")
