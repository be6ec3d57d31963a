"""What the live view takes from the core: a call as a timeline sample, two calls compared, a first
request as a splice onto nothing, and the inspector's questions answered from the calls handed over."""

from __future__ import annotations

from core.client_markers import CC_SUMMARY_PREFIX
from core.events import ContextMeasured
from core.history import estimate_chars
from core.proxy.calls import CLIENT_COMPACTION, call_sample, compare_calls
from core.proxy.context import ProxyContext
from core.proxy.diff import apply_splices
from core.proxy.watch import Watch
from core.usage.prices import window_for
from core.values.samples import TokenCount
from tests.support.proxy import Driver, body, turn


async def three_calls() -> Watch:
    watch = Watch()
    drive = Driver(watch)
    drive.call(body(turn("fix the bug")), usage={"input": 40, "write": 900, "output": 7})
    drive.call(body(turn("fix the bug", "looking", "the parser")), usage={"input": 30, "read": 900, "output": 9})
    drive.call(body(turn("fix the bug", "looking", "the parser, please", "done", "thanks")),
               usage={"input": 50, "read": 600, "write": 400}, status=200)
    await watch.aclose()
    return watch


async def test_a_first_request_is_one_splice_onto_an_empty_history() -> None:
    watch = await three_calls()
    first = watch.calls[0]
    assert first.diff.first and apply_splices([], first.diff.changes) == first.messages
    changed = first.diff.history_changed(first.messages)
    assert changed.length == 1 and changed.chars == estimate_chars(first.messages)


async def test_any_two_calls_of_a_conversation_are_compared() -> None:
    one, two, three = (await three_calls()).calls
    assert compare_calls(two, three) is three.diff, "a call and the one before it: the diff it carries"
    diff = compare_calls(one, three)
    assert diff.previous == one.id and apply_splices(one.messages, diff.changes) == three.messages
    assert diff.added == (1, 2, 3, 4) and not diff.removed and not diff.changed
    back = compare_calls(three, one)
    assert apply_splices(three.messages, back.changes) == one.messages and back.removed == (1, 2, 3, 4)
    edited = compare_calls(two, three)
    assert edited.changed == ((2, 2),) and edited.added == (3, 4)


async def test_a_call_is_a_timeline_sample_with_its_usage_and_cost() -> None:
    one, two, _ = (await three_calls()).calls
    sample = call_sample(two, one)
    assert (sample.call, sample.messages, sample.chars_after) == (2, 3, two.chars)
    assert (sample.input_tokens, sample.cache_read_tokens, sample.cache_creation_tokens, sample.output_tokens) == (
        30, 900, 0, 9)
    assert sample.cost == two.cost and sample.cost is not None and sample.error is None and sample.steps == ()
    pending = call_sample(type(two)(**{**two.__dict__, "outcome": "pending", "usage": None, "cost": None}))
    assert pending.input_tokens is None and pending.cost is None and pending.error is None


async def test_a_failed_call_says_how_in_its_sample() -> None:
    watch = Watch()
    Driver(watch).call(body(turn("hello")), status=529)
    await watch.aclose()
    sample = call_sample(watch.calls[0])
    assert sample.error is not None and sample.error.startswith("529")


async def test_a_client_compaction_is_the_step_before_its_call() -> None:
    watch = Watch()
    drive = Driver(watch)
    long_history = turn("fix the bug", *(["x" * 500] * 8))
    drive.call(body(long_history), reply="The user asked to fix the bug in the parser. " * 3)
    summary = f"{CC_SUMMARY_PREFIX} The conversation is summarized below:\n" + "The user asked to fix the bug in the parser. " * 3
    drive.call(body(turn(summary, "ok", "go on")))
    await watch.aclose()
    before, after = watch.calls
    assert after.conversation == before.conversation and after.diff.compacted
    sample = call_sample(after, before)
    assert sample.steps == (CLIENT_COMPACTION,) and sample.chars_before == before.chars
    assert sample.saved == (before.chars - after.chars,)


async def test_the_inspectors_questions_are_answered_from_the_call_handed_over() -> None:
    two = (await three_calls()).calls[1]
    context = ProxyContext(limit=50_000)
    assert [item async for item in context.forecast()] == []
    assert (await context.window()).tokens is None, "no call, no model"

    pending = type(two)(**{**two.__dict__, "outcome": "pending", "usage": None, "cost": None})
    context.follow(pending)
    measured, counted = [item async for item in context.forecast()]
    assert isinstance(measured, ContextMeasured) and isinstance(counted, TokenCount)
    assert (measured.chars, measured.limit, measured.messages) == (two.chars, 50_000, 3)
    assert measured.tokens is not None and measured.input_tokens is None
    assert not counted.exact and counted.reason == "reply pending"
    assert counted.tokens > measured.tokens, "the estimate of the request counts its system prompt too"

    context.follow(two)
    measured, counted = [item async for item in context.forecast()]
    assert isinstance(measured, ContextMeasured) and measured.input_tokens == 30
    assert counted == TokenCount(930, "api")
    assert await context.window() == window_for("claude-sonnet-5-5")
