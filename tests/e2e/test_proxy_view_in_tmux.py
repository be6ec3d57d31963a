"""`ctxtui proxy`'s live view in a real terminal (tmux), the real SDK as its client, the loopback fake
as its upstream: the `listening on ...` line is the first line of stdout (redirected to a file here,
as a script would read it) while the view paints on the terminal, at the terminal's size."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from tests.support.fakeapi import FakeAnthropicServer, text_reply
from tests.support.proxy import read_record
from tests.support.tmux import TMUX, WIDTH, Tmux, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
]
LISTENING = re.compile(r"^listening on (http://127\.0\.0\.1:\d+)$")


@pytest.fixture
def root() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ctxtui-e2e-"))  # short path: tmux sockets live here too
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def start(tmux: Tmux, workdir: Path, upstream: str, shell: str) -> str:
    """Run `ctxtui proxy` in the pane through `shell` (a template with {proxy}); returns its URL."""
    ctxtui = Path(sys.executable).parent / "ctxtui"
    proxy = f"{ctxtui} proxy --port 0 --workdir {workdir} --upstream {upstream} > {workdir}/out.txt"
    tmux.start(shell.format(proxy=proxy))
    out = workdir / "out.txt"
    wait_until(lambda: out.exists() and bool(out.read_text()), 20, "the first line on stdout", tmux)
    match = LISTENING.match(out.read_text().splitlines()[0])
    assert match is not None, out.read_text()
    return match[1]


def ask(url: str, text: str) -> None:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-e2e-key-000", max_retries=0)
    client.messages.create(model="claude-sonnet-5-5", max_tokens=20, messages=[{"role": "user", "content": text}])
    client.close()


@pytest.mark.timeout(90)
def test_the_view_shows_each_call_and_ctrl_c_stops_it(fake_api: FakeAnthropicServer, root: Path) -> None:
    fake_api.script(text_reply("hi there"))
    workdir = root / "w"
    workdir.mkdir()
    tmux = Tmux(root)
    try:
        url = start(tmux, workdir, fake_api.base_url, "sh -c '{proxy}; echo exit=$?; sleep 60'")
        wait_until(lambda: "Conversations" in tmux.screen() and f"ctxtui proxy {url}" in tmux.screen(), 20,
                   "the live view", tmux)

        def full_width_footer() -> bool:
            footer = [line.rstrip() for line in tmux.screen().splitlines() if "f2 View" in line]
            return bool(footer) and footer[-1].endswith("palette") and len(footer[-1]) > WIDTH - 10

        # as wide as the terminal (measured on stderr, where it paints), not 80 columns (stdout is a file)
        wait_until(full_width_footer, 20, "the footer across the terminal's width", tmux)
        ask(url, "hello from e2e")
        wait_until(lambda: "1 call" in tmux.screen() and '#1 user · "hello from e2e"' in tmux.screen(), 20,
                   "the call in the view", tmux)
        tmux.run("send-keys", "-t", tmux.session, "C-c", check=True)
        wait_until(lambda: "exit=0" in tmux.screen(), 20, "the proxy to stop", tmux)
        assert "ctxtui proxy: stopped after 1 call(s) (1 recorded in" in tmux.screen()
        lines = (workdir / "out.txt").read_text().splitlines()
        assert lines == [f"listening on {url}",
                         f"recording to {workdir.resolve() / '.ctxtui' / 'proxy'}/ (one file per call, 0600; "
                         "--no-record keeps nothing)",
                         f"forwarding to {fake_api.base_url}",
                         f"start a client with ANTHROPIC_BASE_URL={url}"], "stdout holds the lines, never the view"
    finally:
        tmux.kill_server()


@pytest.mark.timeout(90)
def test_sigterm_stops_the_view_after_recording_what_it_was_handed(fake_api: FakeAnthropicServer, root: Path) -> None:
    fake_api.script(text_reply("hi there"))
    workdir = root / "w"
    workdir.mkdir()
    tmux = Tmux(root)
    try:
        url = start(tmux, workdir, fake_api.base_url, f"sh -c 'echo $$ > {workdir}/pid; exec {{proxy}}'")
        wait_until(lambda: "Conversations" in tmux.screen(), 20, "the live view", tmux)
        ask(url, "record me")
        wait_until(lambda: "1 call" in tmux.screen(), 20, "the call in the view", tmux)
        os.kill(int((workdir / "pid").read_text()), signal.SIGTERM)
        wait_until(lambda: not tmux.alive(), 20, "the proxy to stop on SIGTERM", tmux)
    finally:
        tmux.kill_server()
    (record,) = (workdir / ".ctxtui" / "proxy").glob("*.jsonl")
    assert [line["type"] for line in read_record(record)] == ["proxy_request", "proxy_response"]
