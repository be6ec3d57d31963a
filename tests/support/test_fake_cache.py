"""The fake's prompt cache, cache diagnostics and thinking, as the API documents them: TTLs from the
request that last read or wrote an entry, the 20-block lookback, writes split by TTL, every
diagnosis type, and thinking sent only when asked (through the real SDK where shapes matter)."""

from __future__ import annotations

from typing import Any

import anthropic

from tests.support.fake_cache import CacheDiagnostics, FakeClock, PromptCache
from tests.support.fakeapi import FakeAnthropicServer, MessageReply, text_reply

MODEL = "claude-test"


def body(*texts: str, ttl: str | None = None, model: str = MODEL) -> dict[str, Any]:
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {"model": model, "system": "sys " * 50, "cache_control": control,
            "messages": [{"role": "user" if n % 2 == 0 else "assistant", "content": text * 40}
                         for n, text in enumerate(texts)]}


def test_an_entry_lives_for_its_ttl_from_the_last_read_or_write() -> None:
    clock = FakeClock()
    cache = PromptCache(clock)
    first = cache.account(body("a"))
    assert first.read == 0 and first.written_5m and not first.written_1h
    clock.advance(299)
    second = cache.account(body("a", "b", "c"))
    assert second.read >= first.creation  # read (its lifetime refreshed), the rest written
    clock.advance(299)
    assert cache.account(body("a", "b", "c", "d", "e")).read > second.read  # 598 s after the first write
    clock.advance(301)
    assert cache.account(body("a", "b", "c", "d", "e")).read == 0  # cold


def test_one_hour_writes_are_reported_apart_and_last_an_hour() -> None:
    clock = FakeClock()
    cache = PromptCache(clock)
    written = cache.account(body("a", ttl="1h"))
    assert written.written_1h and not written.written_5m
    clock.advance(3_000)
    assert cache.account(body("a", "b", "c", ttl="1h")).read >= written.creation
    clock.advance(3_601)
    assert cache.account(body("a", "b", "c", ttl="1h")).read == 0


def test_the_lookback_reaches_20_blocks_back_from_a_breakpoint() -> None:
    cache = PromptCache(FakeClock())
    cache.account(body("a"))
    near = body("a", *"bcdefghijklmnopqrst")  # 19 blocks after the written one (20 back from the end)
    assert cache.account(near).read
    cache.clear()
    cache.account(body("a"))
    far = body("a", *"bcdefghijklmnopqrstuvwxy")
    assert cache.account(far).read == 0


def test_a_prefix_under_the_minimum_is_not_cached() -> None:
    cache = PromptCache(FakeClock(), min_tokens=100_000)
    assert cache.account(body("a")).creation == 0 and cache.account(body("a")).read == 0


def test_every_diagnosis_type() -> None:
    diagnostics = CacheDiagnostics()
    base = {**body("a"), "tools": [{"name": "t"}], "diagnostics": {"previous_message_id": None}}
    assert diagnostics.answer(base, "msg_1") == (True, None)
    follow = {**body("a", "b", "c"), "tools": [{"name": "t"}], "diagnostics": {"previous_message_id": "msg_1"}}
    assert diagnostics.answer(follow, "msg_2") == (True, None)  # messages only appended

    def reason(changed: dict[str, Any], name: str) -> Any:
        return diagnostics.answer({**changed, "diagnostics": {"previous_message_id": "msg_2"}}, name)[1]

    assert reason({**follow, "model": "other"}, "m")["cache_miss_reason"]["type"] == "model_changed"
    assert reason({**follow, "system": "new"}, "s")["cache_miss_reason"]["type"] == "system_changed"
    assert reason({**follow, "tools": []}, "t")["cache_miss_reason"]["type"] == "tools_changed"
    edited = {**follow, "messages": [{"role": "user", "content": "x"}, *follow["messages"][1:]]}
    messages = reason(edited, "e")["cache_miss_reason"]
    assert messages["type"] == "messages_changed" and messages["cache_missed_input_tokens"] > 0
    assert reason({**follow, "thinking": {"type": "adaptive"}}, "k")["cache_miss_reason"] == {"type": "unavailable"}
    unknown = {**follow, "diagnostics": {"previous_message_id": "msg_nope"}}
    assert diagnostics.answer(unknown, "u") == (True, {"cache_miss_reason": {"type": "previous_message_not_found"}})
    assert diagnostics.answer(body("a"), "plain") == (False, None)  # not opted in: no field, nothing kept
    diagnostics.pending = True
    assert reason({**follow, "system": "new"}, "p") == {"cache_miss_reason": None}


async def test_replies_carry_diagnostics_usage_splits_and_thinking_as_the_sdk_types_say(
    fake_api: FakeAnthropicServer
) -> None:
    fake_api.script(
        MessageReply([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "one"}]),
        MessageReply([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "two"}]),
        text_reply("three"),
    )
    client = anthropic.AsyncAnthropic(base_url=fake_api.base_url, api_key="x", max_retries=0)
    try:
        first = await client.messages.create(
            model=MODEL, max_tokens=50, thinking={"type": "adaptive"}, cache_control={"type": "ephemeral", "ttl": "1h"},
            diagnostics={"previous_message_id": None}, messages=[{"role": "user", "content": "hi " * 300}])
        assert first.diagnostics is None
        assert [block.type for block in first.content] == ["thinking", "text"]
        assert first.usage.output_tokens_details is not None and first.usage.output_tokens_details.thinking_tokens > 0
        assert first.usage.cache_creation is not None and first.usage.cache_creation.ephemeral_1h_input_tokens > 0
        async with client.messages.stream(
            model=MODEL, max_tokens=50, system="changed", diagnostics={"previous_message_id": first.id},
            messages=[{"role": "user", "content": "hi " * 300}],
        ) as stream:
            second = await stream.get_final_message()
        assert [block.type for block in second.content] == ["text"]  # no thinking unless asked for
        assert second.diagnostics is not None and second.diagnostics.cache_miss_reason is not None
        assert second.diagnostics.cache_miss_reason.type == "system_changed"
        third = await client.messages.create(model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "x"}])
        assert third.diagnostics is None and third.usage.cache_creation is None  # no opt-in, no cache_control
    finally:
        await client.close()
