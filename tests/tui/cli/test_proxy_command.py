"""`ctxtui proxy` as a person runs it: the real command in a subprocess, the real SDK as its client."""

from __future__ import annotations

import queue
import re
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anthropic
import httpx2
import pytest

from tests.support.cli import command, ctxtui, env_without_key
from tests.support.fakeapi import FakeAnthropicServer, MessageReply, error_reply, text_reply

LISTENING = re.compile(r"^listening on http://127\.0\.0\.1:(?P<port>\d+)$")


@pytest.mark.parametrize(("flags", "message"), [
    (["--host", "0.0.0.0"], "--host 0.0.0.0: the proxy listens on loopback only (127.0.0.1, ::1 or localhost)"),
    (["--host", "192.168.1.5"], "--host 192.168.1.5: the proxy listens on loopback only (127.0.0.1, ::1 or localhost)"),
    (["--port", "70000"], "--port 70000: expected a number from 0 to 65535"),
    (["--port", "http"], "--port http: expected a number from 0 to 65535"),
    (["--port", "-1"], "--port -1: expected a number from 0 to 65535"),
    (["--upstream", "api.anthropic.com"], "--upstream: 'api.anthropic.com' is not an http(s) URL with a host"),
])
def test_bad_flags_are_refused_in_one_line(flags: list[str], message: str, tmp_path: Path) -> None:
    result = ctxtui("proxy", "--workdir", str(tmp_path), *flags)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"ctxtui proxy: error: {message}"]
    assert list(tmp_path.iterdir()) == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_upstream_that_is_the_proxy_itself_is_refused(tmp_path: Path) -> None:
    port = free_port()
    env = env_without_key(ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
    result = ctxtui("proxy", "--port", str(port), "--workdir", str(tmp_path), "--no-record", env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"ctxtui proxy: error: the upstream http://127.0.0.1:{port} is this proxy "
                                          "(unset ANTHROPIC_BASE_URL or pass --upstream)"]


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = ctxtui("proxy", "--port", str(port), "--workdir", str(tmp_path), "--upstream", "http://127.0.0.1:9")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and f"cannot listen on 127.0.0.1:{port}" in result.stderr


class Running:
    """A `ctxtui proxy` subprocess whose stdout lines are read as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self, timeout: float = 20) -> str:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "the proxy closed its stdout"
        return line


@contextmanager
def proxy_process(*flags: str, env: dict[str, str] | None = None) -> Iterator[Running]:
    process = subprocess.Popen([*command(), "proxy", "--port", "0", *flags], env=env or env_without_key(),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield Running(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_the_proxy_serves_records_prints_a_line_per_call_and_stops_on_sigterm(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(text_reply("first answer"), text_reply("second answer"))
    with proxy_process("--headless", "--workdir", str(tmp_path), "--upstream", fake_api.base_url) as proxy:
        match = LISTENING.match(proxy.line())
        assert match is not None, "the first line says where it listens"
        url = f"http://127.0.0.1:{match['port']}"
        assert proxy.line() == f"recording to {tmp_path.resolve() / '.ctxtui' / 'proxy'}/ (one file per call, 0600; " \
                               "--no-record keeps nothing)"
        assert proxy.line() == f"forwarding to {fake_api.base_url}"
        assert proxy.line() == f"start a client with ANTHROPIC_BASE_URL={url}"
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-cli-test-key-55555", max_retries=0)
        history: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hello"}]
        first = client.messages.create(model="claude-sonnet-5-5", max_tokens=20, messages=history)
        first_line = proxy.line()
        history += [{"role": "assistant", "content": "first answer"}, {"role": "user", "content": "and then?"}]
        with client.messages.stream(model="claude-sonnet-5-5", max_tokens=20, messages=history) as stream:
            second = stream.get_final_message()
        second_line = proxy.line()
        client.close()
        proxy.process.send_signal(signal.SIGTERM)
        assert proxy.process.wait(20) == 0
        stderr = proxy.process.stderr.read() if proxy.process.stderr else ""
    assert first.content[0].text == "first answer" and second.content[0].text == "second answer"  # type: ignore[union-attr]
    assert re.match(r"^\d\d:\d\d:\d\d · #1 · claude-sonnet-5-5 · conv 1\.1 · 1 msgs · in \d+ cache r 0 w 0 out \d+ "
                    r"· \$\d+\.\d{4} · first call, 1 message\(s\)$", first_line), first_line
    assert re.search(r" · #2 · .* · conv 1\.2 · 3 msgs · .* · \+2 added$", second_line), second_line
    assert f"stopped after 2 call(s) (2 recorded in {tmp_path.resolve() / '.ctxtui' / 'proxy'})" in stderr
    assert len(list((tmp_path / ".ctxtui" / "proxy").glob("*.jsonl"))) == 2
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"sk-ant-cli-test-key-55555" not in path.read_bytes()


def test_no_record_writes_nothing_and_without_a_terminal_the_view_falls_back_to_lines(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(text_reply("ok"), MessageReply([{"type": "text", "text": "x" * 300}], chunks=300, delay=0.01))
    with proxy_process("--no-record", "--workdir", str(tmp_path), "--upstream", fake_api.base_url) as proxy:
        match = LISTENING.match(proxy.line())
        assert match is not None
        assert proxy.line() == "not recording (--no-record): nothing is written to disk"
        proxy.line(), proxy.line()
        client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{match['port']}", api_key="k", max_retries=0)
        client.messages.create(model="claude-sonnet-5-5", max_tokens=20, messages=[{"role": "user", "content": "x"}])
        assert " · #1 · " in proxy.line()
        with client.messages.create(model="claude-sonnet-5-5", max_tokens=20, stream=True,
                                    messages=[{"role": "user", "content": "long"}]) as stream:
            assert next(iter(stream)).type == "message_start"  # then hang up mid-stream
        assert proxy.line().endswith("client hung up · first call, 1 message(s)")
        client.close()
        proxy.process.send_signal(signal.SIGINT)
        assert proxy.process.wait(20) == 0
        stderr = proxy.process.stderr.read() if proxy.process.stderr else ""
    assert stderr.splitlines()[0] == ("ctxtui proxy: stderr is not a terminal, so no live view: one line per call, "
                                      "as --headless")
    assert "Traceback" not in stderr and "Error handling request" not in stderr, stderr
    assert list(tmp_path.iterdir()) == []


# --- issue 30: what the command prints, and the limits it reads from the settings ----------------------


def test_a_token_the_upstream_echoes_is_redacted_in_the_headless_line(fake_api: FakeAnthropicServer,
                                                                       tmp_path: Path) -> None:
    key = "sk-ant-api03-headless-echo-key-777777777"
    fake_api.script(error_reply(401, "authentication_error", f"invalid token {key}"))
    with proxy_process("--headless", "--no-record", "--workdir", str(tmp_path), "--upstream", fake_api.base_url,
                       env=env_without_key(XDG_CONFIG_HOME=str(tmp_path))) as proxy:
        match = LISTENING.match(proxy.line())
        assert match is not None
        for _ in range(3):
            proxy.line()
        client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{match['port']}", api_key=key, max_retries=0)
        with pytest.raises(anthropic.AuthenticationError):
            client.messages.create(model="claude-sonnet-5-5", max_tokens=20, messages=[{"role": "user", "content": "x"}])
        line = proxy.line()
        client.close()
        proxy.process.send_signal(signal.SIGTERM)
        assert proxy.process.wait(20) == 0
        stderr = proxy.process.stderr.read() if proxy.process.stderr else ""
    assert "401 authentication_error invalid token [redacted]" in line, line
    assert key not in line and key not in stderr


def rss_kib(pid: int, field: str) -> int:
    """A figure of /proc/PID/status in KiB (VmRSS: now, VmHWM: the peak so far)."""
    for entry in Path(f"/proc/{pid}/status").read_text().splitlines():
        if entry.startswith(f"{field}:"):
            return int(entry.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the proxy's RSS from /proc")
def test_the_reply_limit_from_the_environment_bounds_the_proxy_s_memory(fake_api: FakeAnthropicServer,
                                                                        tmp_path: Path) -> None:
    from tests.core.proxy.test_limits import HEADERS, REQUEST, LongStream

    stream = LongStream(deltas=1024)  # 64 MiB
    fake_api.script(text_reply("warm"), stream)
    env = env_without_key(XDG_CONFIG_HOME=str(tmp_path), CTXTUI_PROXY_REPLY_LIMIT=str(1024 * 1024))
    with proxy_process("--headless", "--workdir", str(tmp_path), "--upstream", fake_api.base_url, env=env) as proxy:
        match = LISTENING.match(proxy.line())
        assert match is not None
        url = f"http://127.0.0.1:{match['port']}/v1/messages"
        with httpx2.Client(timeout=60) as client:
            client.post(url, json=REQUEST, headers=HEADERS)
            proxy.line(), proxy.line(), proxy.line(), proxy.line()  # the announcement, then the warm-up's line
            before = rss_kib(proxy.process.pid, "VmHWM")
            received = 0
            with client.stream("POST", url, json={**REQUEST, "stream": True}, headers=HEADERS) as response:
                chunks = response.iter_raw()
                for chunk in chunks:
                    received += len(chunk)
                    if received >= stream.before_release:
                        break
                during = rss_kib(proxy.process.pid, "VmRSS")
                stream.release.set()
                for chunk in chunks:
                    received += len(chunk)
        assert " · #2 · " in proxy.line()
        peak = rss_kib(proxy.process.pid, "VmHWM")
        proxy.process.send_signal(signal.SIGTERM)
        assert proxy.process.wait(20) == 0
    assert received == stream.total
    assert during - before < 32 * 1024, f"{(during - before) / 1024:.0f} MiB more while 64 MiB streamed through"
    assert peak - before < 32 * 1024, f"peak {(peak - before) / 1024:.0f} MiB above the start"


def test_a_limit_out_of_range_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = ctxtui("proxy", "--workdir", str(tmp_path), "--set", "proxy_reply_limit=0",
                    env=env_without_key(XDG_CONFIG_HOME=str(tmp_path)))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == ["ctxtui proxy: error: proxy_reply_limit = 0 (flag --set) is out of range: "
                                          "it must be a whole number of bytes from 1,024 to 4,000,000,000"]
