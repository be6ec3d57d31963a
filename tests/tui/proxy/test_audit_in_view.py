"""The proxy's live view audits each conversation's compactions as its calls end (`inspect --audit`'s
rules): the real SDK through the proxy to the loopback fake, the real app through Pilot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.client_markers import CC_SUMMARY_PREFIX
from tests.support.fakeapi import FakeAnthropicServer, text_reply
from tests.support.pilot import wait_for
from tests.support.proxy import running_proxy, sdk_client, view_app

MODEL = "claude-sonnet-5-5"
SYSTEM = "You are a careful assistant. " * 20


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def test_a_compaction_that_did_not_shrink_the_context_is_flagged_live(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    fake_api.script(text_reply("one"), text_reply("two"), text_reply("three"))
    async with running_proxy(fake_api.base_url) as proxy, sdk_client(proxy.url) as client:
        app = view_app(proxy, tmp_path)
        said: list[str] = []
        notify = app.notify

        def recording(message: str, **options: Any) -> None:
            said.append(message)
            notify(message, **options)

        app.notify = recording  # type: ignore[method-assign]
        async with app.run_test(size=(160, 48)) as pilot:
            status = app.view.status

            async def ask(messages: list[dict[str, Any]], calls: int) -> None:
                await client.messages.create(model=MODEL, max_tokens=50, system=SYSTEM, messages=messages)  # type: ignore[arg-type]
                await wait_for(pilot, lambda: status.calls >= calls and not status.pending)
                await pilot.pause()

            history = [user("read the logs and fix the failing test [/bold] \x1b[31m " * 5)]
            await ask(history, 1)
            await ask([*history, {"role": "assistant", "content": "one"}, user("go on")], 2)
            assert status.findings == () and "audit" not in status.render().plain

            summary = user(f"{CC_SUMMARY_PREFIX} Summary: " + "everything that happened, at length. " * 300)
            await ask([summary, user("go on")], 3)  # a "compaction" that made the request larger
            await wait_for(pilot, lambda: "did_not_shrink" in status.findings)
            line = status.render().plain
            assert "audit:" in line and "did_not_shrink" in line and "early" in line
            assert any("did not reduce the context" in text for text in said)
            assert not [text for text in said if "\x1b" in text]  # the client's text is data
            assert app.view.findings[1][0].call == 3
