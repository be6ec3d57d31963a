"""`ctxtui --serve`: the page and the websocket answer on a loopback port; the host warning."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import command, env_without_key
from tui.cli.serve import app_arguments, is_loopback

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (textual-serve, aiohttp) is not installed")
pytest.importorskip("textual_serve", reason="the serve extra is not installed: pip install '.[serve]'")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    process = subprocess.Popen(
        [*command(), "--serve", "--port", str(port), "--offline", "--workdir", str(tmp_path)],
        env=env_without_key(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        yield process, port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


async def wait_for_page(port: int, process: subprocess.Popen[str]) -> str:
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {process.stderr.read() if process.stderr else ''}")
            try:
                async with session.get(f"http://127.0.0.1:{port}/") as response:
                    if response.status == 200:
                        return await response.text()
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("the page never answered")


async def test_the_page_and_the_websocket_answer_on_loopback(server: tuple[subprocess.Popen[str], int]) -> None:
    process, port = server
    page = await wait_for_page(port, process)
    assert "ctxtui" in page and f"ws://127.0.0.1:{port}/ws" in page
    async with aiohttp.ClientSession() as session, session.ws_connect(
        f"http://127.0.0.1:{port}/ws?width=100&height=30"
    ) as websocket:
        await websocket.send_json(["ping", "hello-ctxtui"])
        for _ in range(200):
            message = await websocket.receive(timeout=30)
            if message.type == aiohttp.WSMsgType.TEXT and message.json() == ["pong", "hello-ctxtui"]:
                break
        else:
            raise AssertionError("no pong from the websocket")


def test_loopback_detection_and_forwarded_arguments() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.com")
    assert app_arguments(["--serve", "--host", "0.0.0.0", "--port=9", "--offline", "--set", "a=1"]) == [
        "--offline", "--set", "a=1"]


def test_a_non_loopback_host_is_warned_about(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [*command(), "--serve", "--host", "0.0.0.0", "--port", str(port), "--offline", "--workdir", str(tmp_path)],
        env=env_without_key(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "warning" in line and "not loopback" in line
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
