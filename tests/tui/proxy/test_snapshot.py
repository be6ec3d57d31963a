"""An SVG snapshot of `ctxtui proxy`'s live view (pytest-textual-snapshot's `snap_compare`).

The proxy runs on its own thread (`ProxyThread`, as the command runs it) with the loopback fake as
its upstream; the real SDK sends a request in Claude Code's shape and a side request. What would
differ between runs is pinned: the status line is given fixed addresses (the proxy's and the fake's
ports are free ones), the client's user agent is fixed, and nothing is recorded (no paths).
After a deliberate change of the view, look at the report and run
`pytest tests/tui/proxy/test_snapshot.py --snapshot-update`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from core.proxy.thread import ProxyThread
from tests.support.claude_code import (
    CLAUDE_CODE_SYSTEM,
    CLAUDE_CODE_TOOLS,
    CLAUDE_CODE_USER_AGENT,
    SIDE_MODEL,
    SIDE_SYSTEM,
    claude_code_messages,
)
from tests.support.fakeapi import FakeAnthropicServer
from tests.support.pilot import wait_for
from tests.support.proxy import sdk_client
from tui.proxy_app import ProxyApp
from tui.widgets.proxy_status import ProxyAbout

SIZE = (160, 48)


@pytest.fixture
def proxy(fake_api: FakeAnthropicServer) -> Iterator[ProxyThread]:
    running = ProxyThread(fake_api.base_url)
    running.start()
    yield running
    running.stop()


def test_the_live_view_of_a_claude_code_request(snap_compare: Any, proxy: ProxyThread, tmp_path: Path) -> None:
    """The tree of a Claude Code-shaped request with its markers expanded, two conversations listed."""
    about = ProxyAbout("http://127.0.0.1:8788", "https://api.anthropic.com", None)
    app = ProxyApp(proxy.events, about, tmp_path, limit=50_000)

    async def run_before(pilot: Pilot[Any]) -> None:
        async with sdk_client(proxy.url, default_headers={"User-Agent": CLAUDE_CODE_USER_AGENT}) as client:
            await client.messages.create(model="claude-sonnet-5-5", max_tokens=2048, system=CLAUDE_CODE_SYSTEM,  # type: ignore[arg-type]
                                         tools=CLAUDE_CODE_TOOLS, messages=claude_code_messages())  # type: ignore[arg-type]
            await client.messages.create(model=SIDE_MODEL, max_tokens=50, system=SIDE_SYSTEM,
                                         messages=[{"role": "user", "content": "fix the failing test"}])
        view = app.view
        tree = view.inspector.message_tree
        gauge = view.inspector.gauge.state
        await wait_for(pilot, lambda: view.status.calls == 2 and not view.status.pending and not tree.syncing
                       and len(tree.entries) == 6 and gauge.count is not None and gauge.count.exact
                       and gauge.window is not None and gauge.window.tokens is not None
                       and not any(worker.group in ("forecast", "window") and not worker.is_finished
                                   for worker in app.workers), limit=20)
        for index in (0, 1, 2, 4):
            tree.entries[index][1].expand()
        await wait_for(pilot, lambda: all(tree.entries[index][1].children for index in (0, 1, 2, 4)))
        tree.move_cursor(tree.entries[0][1].children[0])
        view.inspector.gauge.flush()
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
