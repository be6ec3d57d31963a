"""`ctxtui proxy`'s live view, driven for real: the proxy in the test's loop with the loopback fake as
its upstream, the real SDK as the client, the real app through Pilot. Every assertion is on what the
widgets show after the watch's events reached them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
from textual.pilot import Pilot

from core.history import estimate_chars
from tests.support.claude_code import (
    CLAUDE_CODE_SYSTEM,
    CLAUDE_CODE_TOOLS,
    CLAUDE_CODE_USER_AGENT,
    CONTEXT_MANAGEMENT,
    claude_code_messages,
)
from tests.support.fakeapi import FakeAnthropicServer, MessageReply, text_reply
from tests.support.pilot import wait_for
from tests.support.proxy import running_proxy, sdk_client, view_app
from tui.proxy_app import ProxyApp
from tui.screens.archive import ArchiveScreen

MODEL = "claude-sonnet-5-5"
SIZE = (160, 48)
SYSTEM = [{"type": "text", "text": "You are a careful assistant. " * 40, "cache_control": {"type": "ephemeral"}}]
Message = dict[str, Any]


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


async def ask(client: anthropic.AsyncAnthropic, messages: list[Message], system: Any = SYSTEM, **extra: Any) -> None:
    await client.messages.create(model=MODEL, max_tokens=50, system=system, messages=messages, **extra)  # type: ignore[arg-type]


def shown_messages(app: ProxyApp) -> list[Message]:
    return [message for message, _ in app.view.inspector.message_tree.entries]


async def settled(pilot: Pilot[Any], app: ProxyApp, calls: int) -> None:
    """Until `calls` calls have ended in the view and the tree has applied every splice."""
    view = app.view
    await wait_for(pilot, lambda: view.status.calls >= calls and not view.status.pending
                   and not view.inspector.message_tree.syncing)
    await pilot.pause()


async def test_calls_appear_live_in_the_timeline_and_the_tree_shows_the_latest_request(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(text_reply("one"), text_reply("two"),
                    MessageReply([{"type": "text", "text": "slow " * 40}], chunks=40, delay=0.05))
    history = [user("hello")]
    async with running_proxy(fake_api.base_url) as proxy, sdk_client(proxy.url) as client:
        app = view_app(proxy, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            timeline = app.view.inspector.timeline_view
            await ask(client, history)
            await settled(pilot, app, 1)
            assert shown_messages(app) == history
            assert [sample.call for sample in timeline.samples] == [1]

            history += [assistant("one"), user("more")]
            await ask(client, history)
            await settled(pilot, app, 2)
            assert shown_messages(app) == history
            first, second = timeline.samples
            assert second.messages == 3 and second.chars_after == estimate_chars(history)
            assert second.input_tokens is not None and second.cost is not None and second.cost > 0
            assert (second.cache_read_tokens or 0) > 0, "the fake cached the system prompt the first call wrote"
            assert (first.cache_creation_tokens or 0) > 0

            # A slow streamed reply: the request is in the tree and the timeline before the reply ends.
            history += [assistant("two"), user("and a long one")]
            async with client.messages.stream(model=MODEL, max_tokens=50, system=SYSTEM, messages=history) as stream:  # type: ignore[arg-type]
                await wait_for(pilot, lambda: len(timeline.samples) == 3 and not app.view.inspector.message_tree.syncing)
                assert shown_messages(app) == history
                assert timeline.samples[-1].input_tokens is None, "no usage before the reply ends"
                assert app.view.status.pending
                await stream.get_final_message()
            await settled(pilot, app, 3)
            assert timeline.samples[-1].input_tokens is not None
            details = "\n".join(line.plain for line in timeline.detail_lines())
            assert "call 3/3" in details and "cache read" in details and "$" in details
            gauge = app.view.inspector.gauge
            await wait_for(pilot, lambda: gauge.state.count is not None and gauge.state.count.exact)
            assert gauge.state.count is not None and gauge.state.count.tokens == timeline.samples[-1].prompt_tokens
            assert "sent " in gauge.state.window_line


async def test_the_tree_follows_the_requests_splices_node_by_node(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    history = [user("hello"), assistant("one"), user("two"), assistant("three"), user("four")]
    async with running_proxy(fake_api.base_url) as proxy, sdk_client(proxy.url) as client:
        app = view_app(proxy, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await ask(client, history)
            await settled(pilot, app, 1)
            tree = app.view.inspector.message_tree
            first_node = tree.entries[0][1]
            # the client edits its history: drops a turn in the middle and changes the last message
            edited = [user("hello"), assistant("one"), user("four, edited"), assistant("five"), user("six")]
            await ask(client, edited)
            await settled(pilot, app, 2)
            assert shown_messages(app) == edited
            assert tree.entries[0][1] is first_node, "an unchanged message keeps its node"
            breakdown = app.view.inspector.history.breakdown
            assert breakdown.chars == estimate_chars(edited)


async def test_the_diff_view_shows_what_changed_between_two_calls(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    calls = [
        [user("hello")],
        [user("hello"), assistant("one"), user("more")],
        [user("hello"), assistant("one"), user("more, edited"), assistant("two"), user("last")],
    ]
    async with running_proxy(fake_api.base_url) as proxy, sdk_client(proxy.url) as client:
        app = view_app(proxy, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            for messages in calls:
                await ask(client, messages)
            await settled(pilot, app, 3)
            await pilot.press("4")
            diff = app.view.diff_view
            await wait_for(pilot, lambda: diff.diff is not None)
            earlier, later = diff.pair()
            assert earlier is not None and later is not None and (earlier.turn, later.turn) == (2, 3)
            assert [(row.kind, row.base, row.later) for row in diff.rows] == [
                ("changed", 2, 2), ("added", None, 3), ("added", None, 4)]

            await pilot.press("[")  # against the first call
            await wait_for(pilot, lambda: diff.diff is not None and diff.pair()[0] is not None
                           and diff.pair()[0].turn == 1)  # type: ignore[union-attr]
            assert [(row.kind, row.later) for row in diff.rows] == [("added", 1), ("added", 2), ("added", 3), ("added", 4)]

            await pilot.press("left")  # call 2 against call 1
            await wait_for(pilot, lambda: diff.pair()[1] is not None and diff.pair()[1].turn == 2)  # type: ignore[union-attr]
            assert [(row.kind, row.later) for row in diff.rows] == [("added", 1), ("added", 2)]

            await pilot.press("right")  # the newest again, against the one before it
            await wait_for(pilot, lambda: diff.pair()[1] is not None and diff.pair()[1].turn == 3)  # type: ignore[union-attr]
            await pilot.press("home", "enter")  # open the changed message: its two versions as a line diff
            await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
            shown = app.screen
            assert isinstance(shown, ArchiveScreen)
            assert '-  "content": "more"' in shown.text and '+  "content": "more, edited"' in shown.text

            # a call selected in the timeline is the one the diff compares with the call before it
            await pilot.press("escape", "3", "left")
            await wait_for(pilot, lambda: diff.pair()[1] is not None and diff.pair()[1].turn == 2)  # type: ignore[union-attr]
            assert diff.pair()[0] is not None and diff.pair()[0].turn == 1  # type: ignore[union-attr]


async def test_two_conversations_are_listed_apart_and_choosing_one_switches_every_view(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    first = [user("fix the parser")]
    second_system = [{"type": "text", "text": "You name things."}]
    second = [user("name this function"), assistant("parse_header"), user("shorter")]
    async with running_proxy(fake_api.base_url) as proxy, sdk_client(proxy.url) as one, \
            sdk_client(proxy.url, default_headers={"User-Agent": "other-agent/0.3"}) as two:
        app = view_app(proxy, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            view = app.view
            await ask(one, first)
            await ask(two, second, system=second_system)
            await settled(pilot, app, 2)
            conversations = view.conversations
            assert sorted(conversations.conversations) == [1, 2]
            assert conversations.conversations[2].client == "other-agent/0.3"
            assert view.shown_conversation == 1 and shown_messages(app) == first, "the first conversation stays shown"

            await pilot.press("c", "down", "enter")
            await wait_for(pilot, lambda: view.shown_conversation == 2 and not view.inspector.message_tree.syncing)
            assert shown_messages(app) == second
            assert [sample.messages for sample in view.inspector.timeline_view.samples] == [3]
            assert [call.conversation for call in view.diff_view.calls] == [2]
            assert view.inspector.request_extra["system"] == len('[{"type": "text", "text": "You name things."}]')
            assert conversations.get_option_at_index(1).prompt.plain.startswith("▶ 2")  # type: ignore[union-attr]

            # a call of the other conversation while this one is shown: listed there, not shown here
            first += [assistant("ok"), user("and the tests")]
            await ask(one, first)
            await settled(pilot, app, 3)
            assert shown_messages(app) == second
            assert len(conversations.conversations[1].calls) == 2
            assert "2 calls" in conversations.get_option_at_index(0).prompt.plain  # type: ignore[union-attr]

            await pilot.press("up", "enter")
            await wait_for(pilot, lambda: view.shown_conversation == 1 and not view.inspector.message_tree.syncing)
            assert shown_messages(app) == first
            assert [sample.call for sample in view.inspector.timeline_view.samples] == [1, 2]
            assert [call.turn for call in view.diff_view.calls] == [1, 2]


async def test_a_claude_code_request_is_shown_with_its_markers_recognised(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    messages = claude_code_messages()
    async with running_proxy(fake_api.base_url) as proxy, \
            sdk_client(proxy.url, default_headers={"User-Agent": CLAUDE_CODE_USER_AGENT,
                                                   "anthropic-beta": "context-management-2025-06-27"}) as client:
        app = view_app(proxy, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            async with client.messages.stream(
                    model=MODEL, max_tokens=2048, system=CLAUDE_CODE_SYSTEM, tools=CLAUDE_CODE_TOOLS,  # type: ignore[arg-type]
                    thinking={"type": "enabled", "budget_tokens": 1024}, messages=messages,  # type: ignore[arg-type]
                    extra_body={"context_management": CONTEXT_MANAGEMENT}) as stream:
                await stream.get_final_message()
            await settled(pilot, app, 1)
            view = app.view
            tree = view.inspector.message_tree
            assert shown_messages(app) == messages
            assert view.conversations.conversations[1].client == CLAUDE_CODE_USER_AGENT

            def label(index: int) -> str:
                return tree.entries[index][1].label.plain  # type: ignore[union-attr]

            def children(index: int) -> list[str]:
                node = tree.entries[index][1]
                tree.populate(node)
                return [child.label.plain for child in node.children]  # type: ignore[union-attr]

            assert "Σ compaction summary" in label(0)
            assert children(0)[0].startswith("Σ claude-code compaction summary · ")
            assert children(0)[0].endswith('"The conversation is summarized below: The user asked to fix…"')
            assert children(1)[0] == 'thinking · 23 chars · "I should run the tests."'
            assert children(1)[1].startswith("tool_use Bash")
            assert "⌫ cleared result" in label(2)
            assert children(2) == ["⌫ claude-code cleared tool result · 33 chars"]
            assert "⏹ interrupted" in label(4)
            assert "now commit it" in children(5)[0] and "claude-code" not in label(5)

            # the breakdown counts the request's system blocks and tool schemas beside the messages
            await pilot.press("2")
            breakdown = view.inspector.breakdown_view
            await wait_for(pilot, lambda: "system" in breakdown.figures and "tools" in breakdown.figures)
            assert breakdown.figures["system"] == len(json.dumps(CLAUDE_CODE_SYSTEM, ensure_ascii=False))
            assert breakdown.figures["tools"] == len(json.dumps(CLAUDE_CODE_TOOLS, ensure_ascii=False))

            # the summary opens as the text it is (it points at no file)
            await pilot.press("1")
            tree.select_entry(0, 0)
            await wait_for(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data is not None
                           and tree.cursor_node.data.block == 0)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ArchiveScreen))
            assert isinstance(app.screen, ArchiveScreen)
            assert app.screen.text == messages[0]["content"][0]["text"]
