"""`ctxtui proxy`'s live view of an OpenAI-format client: the real `openai` SDK through the proxy to the
loopback stand-in, the real app through Pilot. The tree shows the converted history (tool calls as
tool_use, outputs as tool_result, reasoning, opaque items with their size), the timeline the usage as
reported, the gauge the model's window from the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai

from core.proxy.server import ProxyServer
from core.proxy.watch import Watch
from tests.support.fakeopenai import FakeOpenAI, OpenAIText
from tests.support.pilot import wait_for
from tests.support.proxy import RunningProxy, view_app
from tui.proxy_app import ProxyApp

SIZE = (160, 48)
KEY = "sk-proj-openai-view-test-0123456789abcdef"
INPUT: list[Any] = [
    {"role": "user", "content": "What is in main.py?"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "I should read the file."}],
        "encrypted_content": "gAAAAB" + "z" * 300,
    },
    {"type": "function_call", "call_id": "call_9", "name": "read_file", "arguments": '{"path": "main.py"}'},
    {"type": "function_call_output", "call_id": "call_9", "output": "print('hi')"},
]


def labels(app: ProxyApp) -> list[str]:
    tree = app.view.inspector.message_tree
    found: list[str] = []
    for _, node in tree.entries:
        tree.populate(node)
        found.extend(child.label.plain for child in node.children)  # type: ignore[union-attr]
    return found


async def test_an_openai_conversation_shows_live(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.script(OpenAIText("It prints hi.", cached=None), OpenAIText("Done.", cached=5))
        watch = Watch()
        server = ProxyServer("http://127.0.0.1:9", watch, openai_upstream=fake.root)
        await server.start()
        proxy = RunningProxy(server, watch)
        try:
            async with openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0) as client:
                app = view_app(proxy, tmp_path)
                async with app.run_test(size=SIZE) as pilot:
                    view = app.view
                    timeline = view.inspector.timeline_view
                    await client.responses.create(model="gpt-5", instructions="Be exact.", input=INPUT)
                    await wait_for(pilot, lambda: view.status.calls >= 1 and not view.status.pending
                                   and not view.inspector.message_tree.syncing)
                    shown = labels(app)
                    assert 'thinking · 23 chars · "I should read the file."' in shown
                    assert any(label.startswith("tool_use read_file") for label in shown)
                    assert any(label.startswith("tool_result") and "print('hi')" in label for label in shown)
                    assert "opaque reasoning (encrypted) · 306 bytes, not readable" in shown
                    first = timeline.samples[-1]
                    assert first.input_tokens is not None and first.cache_read_tokens is None, "not reported: unknown"
                    assert first.cost is None, "no price for an OpenAI model: unknown, never invented"
                    gauge = view.inspector.gauge
                    await wait_for(pilot, lambda: gauge.state.window is not None
                                   and gauge.state.window.tokens == 400_000)
                    await wait_for(pilot, lambda: gauge.state.count is not None and gauge.state.count.exact)
                    assert "window: table" in gauge.state.window_line

                    await client.chat.completions.create(
                        model="gpt-4o", messages=[{"role": "system", "content": "Short answers."},
                                                  {"role": "user", "content": "Say done."}])
                    await wait_for(pilot, lambda: view.status.calls >= 2 and not view.status.pending)
                    second = watch.calls[-1]
                    assert second.conversation == 2 and second.usage is not None
                    assert second.usage.cache_read_tokens == 5
        finally:
            await server.aclose()
            await watch.aclose()
