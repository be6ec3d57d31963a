"""`ctxtui --serve`: only the page it served may drive it (issue 18, items 1 and 2).

The real command is started as a subprocess on a free port (`--port 0`); the tests read the URL it
prints, and talk to it as a browser would (aiohttp, with the headers a browser sends) and as a hostile
page would (another Origin, a re-bound Host, no secret).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.cli import command, ctxtui, env_without_key
from tui.cli import build_parser
from tui.cli.serve import MAX_SESSIONS, tab_arguments
from tui.cli.serve_guard import Guard, is_loopback, split_host

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (textual-serve, aiohttp) is not installed")
pytest.importorskip("textual_serve", reason="the serve extra is not installed: pip install '.[serve]'")

URL = re.compile(r"http://(?P<origin>[^/ ]+)/(?P<token>[A-Za-z0-9_-]+)/")


@dataclass
class Served:
    process: subprocess.Popen[str]
    origin: str  # 127.0.0.1:PORT
    token: str

    @property
    def page(self) -> str:
        return f"http://{self.origin}/{self.token}/"

    @property
    def websocket(self) -> str:
        return f"ws://{self.origin}/{self.token}/ws?width=100&height=30"

    @property
    def browser(self) -> dict[str, str]:
        """The headers a browser sends from the served page."""
        return {"Origin": f"http://{self.origin}"}


def start(args: list[str], cwd: Path) -> Served:
    process = subprocess.Popen(
        [*command(), *args], cwd=cwd, env=env_without_key(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )
    assert process.stderr is not None
    lines = []
    for _ in range(3):
        line = process.stderr.readline()
        lines.append(line)
        if found := URL.search(line):
            return Served(process, found["origin"], found["token"])
    stop(process)
    raise AssertionError(f"no URL printed: {lines}")


def stop(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    running = start(["--serve", "--port", "0", "--offline", "--workdir", str(tmp_path)], tmp_path)
    try:
        yield running
    finally:
        stop(running.process)


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def app_output(websocket: aiohttp.ClientWebSocketResponse, wanted: bytes) -> bytes:
    """The terminal bytes the tab's app sends, until `wanted` is among them."""
    data = b""
    while wanted not in data:
        message = await websocket.receive(timeout=60)
        if message.type == aiohttp.WSMsgType.BINARY:
            data += message.data
        elif message.type != aiohttp.WSMsgType.TEXT:
            raise AssertionError(f"the tab ended before drawing {wanted!r}: {data[-300:]!r}")
    return data


async def status_of_websocket(client: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> int:
    try:
        async with client.ws_connect(url, headers=headers):
            return 101
    except aiohttp.WSServerHandshakeError as error:
        return error.status


# --------------------------------------------------------------------------- the page that was served


async def test_the_printed_url_opens_the_app(served: Served, client: aiohttp.ClientSession) -> None:
    async with client.get(served.page) as response:
        assert response.status == 200
        page = await response.text()
        assert response.cookies.get("ctxtui_serve") is not None
    assert f'data-session-websocket-url="ws://{served.origin}/{served.token}/ws"' in page
    async with client.ws_connect(served.websocket, headers=served.browser) as websocket:
        await websocket.send_json(["ping", "hello-ctxtui"])
        assert b"offline" in await app_output(websocket, b"offline")


async def test_a_message_nested_too_deep_is_ignored_and_the_tab_goes_on(
    served: Served, client: aiohttp.ClientSession
) -> None:
    """A browser message is read through core/jsonlines.py: nested past any reader's depth, it is one
    message of another shape (ignored), not a RecursionError that ends the tab."""
    async with client.ws_connect(served.websocket, headers=served.browser) as websocket:
        await websocket.send_str("[" * 100_000 + "]" * 100_000)
        await websocket.send_json(["ping", "hello-ctxtui"])
        assert b"offline" in await app_output(websocket, b"offline")


# --------------------------------------------------------------------------- everything else


async def test_without_the_secret_nothing_answers(served: Served, client: aiohttp.ClientSession) -> None:
    for path in ("/", f"/{served.token[:-1]}x/", "/ws", f"/{served.token.upper()}/"):
        async with client.get(f"http://{served.origin}{path}") as response:
            assert response.status == 404, path
    assert await status_of_websocket(client, f"ws://{served.origin}/ws", served.browser) == 404
    async with client.get(f"http://{served.origin}/download/anything") as response:
        assert response.status == 403  # the page's cookie is missing


async def test_another_origin_or_a_rebound_host_is_refused(served: Served, client: aiohttp.ClientSession) -> None:
    port = served.origin.rsplit(":", 1)[1]
    hostile = [
        {"Origin": "http://evil.example"},  # any page in any tab
        {"Origin": "null"},  # a sandboxed frame or a file:// page
        {"Origin": f"http://localhost.evil.example:{port}"},
        {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"},  # DNS rebinding
        {"Host": f"evil.example:{port}"},
        {"Host": "127.0.0.1:1"},
    ]
    for headers in hostile:
        assert await status_of_websocket(client, served.websocket, headers) == 403, headers
        async with client.get(served.page, headers=headers) as response:
            assert response.status == 403, headers


async def test_concurrent_sessions_are_capped(served: Served, client: aiohttp.ClientSession) -> None:
    opened = [await client.ws_connect(served.websocket, headers=served.browser) for _ in range(MAX_SESSIONS)]
    try:
        assert await status_of_websocket(client, served.websocket, served.browser) == 503
    finally:
        for websocket in opened:
            await websocket.close()
    for _ in range(200):  # once the tabs are gone, a new one is let in
        if await status_of_websocket(client, served.websocket, served.browser) == 101:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the cap was not released")


@pytest.mark.slow
async def test_a_tab_just_closed_frees_its_place_at_once(served: Served, client: aiohttp.ClientSession) -> None:
    """A tab counts while its WebSocket is open, not while its app takes its time to quit."""
    opened = [await client.ws_connect(served.websocket, headers=served.browser) for _ in range(MAX_SESSIONS)]
    try:
        assert await status_of_websocket(client, served.websocket, served.browser) == 503
        await opened.pop().close()
        async with client.ws_connect(served.websocket, headers=served.browser) as again:  # no waiting, no retry
            await again.send_json(["ping", "back"])
            assert b"offline" in await app_output(again, b"offline")
    finally:
        for websocket in opened:
            await websocket.close()


# --------------------------------------------------------------------------- issue 30: what the page loads, what is logged


async def test_static_files_are_served_under_the_secret_only(served: Served, client: aiohttp.ClientSession) -> None:
    async with client.get(f"http://{served.origin}/static/js/textual.js") as response:
        assert response.status == 404, "without the secret, nothing answers"
    async with client.get(f"{served.page}static/js/textual.js") as response:
        assert response.status == 200 and len(await response.read()) > 100_000
    async with client.get(f"{served.page}static/") as response:
        assert response.status in (403, 404), "no listing"


URLS = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""")


async def test_the_page_loads_nothing_from_elsewhere(served: Served, client: aiohttp.ClientSession) -> None:
    async with client.get(served.page) as response:
        page = await response.text()
        policy = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and f"connect-src 'self' ws://{served.origin}" in policy
    assert "googleapis" not in page and "gstatic" not in page
    found = [first or second for first, second in URLS.findall(page)]
    assert len(found) >= 4, found
    for url in found:
        assert url.startswith(f"{served.page}static/"), url
        async with client.get(url) as fetched:
            assert fetched.status == 200, url
    assert any(url.endswith("RobotoMono-VariableFont_wght.ttf") for url in found), "the font is this server's"


def test_requests_are_not_logged(tmp_path: Path) -> None:
    """Nothing per request on the console (the URL holds the secret): only the line with the URL."""
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen([*command(), "--serve", "--port", "0", "--offline", "--workdir", str(tmp_path)],
                                   cwd=tmp_path, env=env_without_key(), stdout=stdout, stderr=stderr, text=True,
                                   start_new_session=True)
        try:
            found = None
            while found is None and process.poll() is None:
                time.sleep(0.05)  # until the URL is printed
                found = URL.search(err.read_text())
            assert found is not None, err.read_text()
            running = Served(process, found["origin"], found["token"])

            async def browse() -> None:
                async with aiohttp.ClientSession() as session:
                    async with session.get(running.page) as response:
                        assert response.status == 200
                    async with session.get(f"{running.page}static/css/xterm.css") as response:
                        assert response.status == 200
                    async with session.get(f"http://{running.origin}/nowhere") as response:
                        assert response.status == 404
                    async with session.ws_connect(running.websocket, headers=running.browser) as websocket:
                        assert b"offline" in await app_output(websocket, b"offline")

            asyncio.run(browse())
        finally:
            stop(process)
    printed = out.read_text() + err.read_text()
    assert printed.count(found["token"]) == 1, printed
    assert "GET " not in printed and "Traceback" not in printed, printed
    assert len(printed.strip().splitlines()) == 1, printed


def test_a_non_loopback_host_is_warned_about(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*command(), "--serve", "--host", "0.0.0.0", "--port", "0", "--offline", "--workdir", str(tmp_path)],
        env=env_without_key(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "warning" in line and "not loopback" in line
        assert URL.search(process.stderr.readline())
    finally:
        stop(process)


# --------------------------------------------------------------------------- what each tab runs


def plant_packages(workdir: Path, marker: Path) -> None:
    """A workdir that holds `core` and `tui` packages of its own: importing either writes `marker`."""
    plant = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for package in ("core", "tui", "tui/cli"):
        (workdir / package).mkdir(parents=True, exist_ok=True)
        (workdir / package / "__init__.py").write_text(plant)
    (workdir / "tui" / "cli" / "__main__.py").write_text(plant)


async def test_a_tab_runs_the_installed_app_not_code_from_the_workdir(tmp_path: Path,
                                                                      client: aiohttp.ClientSession) -> None:
    """Started from inside the workdir with abbreviated flags: each tab must run ctxtui's own code (not
    the workdir's `core`/`tui`), and the TUI (not a second server from `--serv --por`)."""
    workdir = tmp_path / "work"
    marker = tmp_path / "imported-from-the-workdir"
    plant_packages(workdir, marker)
    running = start(["--serv", "--por", "0", "--offline"], workdir)
    try:
        async with client.ws_connect(running.websocket, headers=running.browser) as websocket:
            assert b"offline" in await app_output(websocket, b"offline")
        assert not marker.exists(), marker.read_text()
    finally:
        stop(running.process)


def parsed(argv: list[str]) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    args.set = getattr(args, "set", [])
    return args


def test_tab_flags_come_from_the_parsed_arguments(tmp_path: Path) -> None:
    args = parsed(["--serv", "--por", "9", "--ho", "0.0.0.0", "--off", "--workdir", str(tmp_path),
                   "--model=-odd-model", "--set", "keep_recent_results=4", "--resume", "abc"])
    tab = tab_arguments(args)
    assert tab == [f"--workdir={tmp_path.resolve()}", "--model=-odd-model", "--set=keep_recent_results=4",
                   "--offline", "--resume=abc"]
    again = parsed(tab)
    assert not again.serve and again.model == "-odd-model" and again.resume == "abc" and again.offline


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(model=st.none() | names, sets=st.lists(names.map(lambda text: f"micro_min_chars={text}"), max_size=3),
       offline=st.booleans(), yes=st.booleans(), demo=st.booleans(), resume=st.none() | st.just(True) | names,
       folder=names.filter(lambda text: "/" not in text and text not in (".", "..")))
def test_tab_flags_parse_back_to_the_same_settings(model: str | None, sets: list[str], offline: bool, yes: bool,
                                                   demo: bool, resume: str | bool | None, folder: str) -> None:
    args = argparse.Namespace(workdir=Path("/tmp") / folder, model=model, set=sets, offline=offline, yes=yes,
                              demo=demo, resume=resume, serve=True, host="::1", port=1)
    again = parsed(tab_arguments(args))
    assert not again.serve and again.prompt is None and again.command is None
    assert (again.workdir, again.model, again.set, again.offline, again.yes, again.demo, again.resume) == (
        Path("/tmp") / folder, model, sets, offline, yes, demo, resume)


# --------------------------------------------------------------------------- what cannot start


def test_a_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = ctxtui("--serve", "--port", str(port), "--offline", "--workdir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"ctxtui: error: cannot serve on 127.0.0.1:{port}: Address already in use"]


@pytest.mark.parametrize(("flags", "expected"), [
    (["--port", "70000"], "--port 70000 is out of range"),
    (["--port", "-1"], "--port -1 is out of range"),
    (["--host", "no-such-host.invalid"], "--host no-such-host.invalid: cannot resolve it"),
])
def test_a_bad_port_or_host_is_one_line_and_exit_2(tmp_path: Path, flags: list[str], expected: str) -> None:
    result = ctxtui("--serve", *flags, "--offline", "--workdir", str(tmp_path))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in result.stderr


# --------------------------------------------------------------------------- the checks themselves


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.com")


def test_host_headers_must_name_the_served_address() -> None:
    loopback = Guard("127.0.0.1", 8000, token="t")
    for header in ("127.0.0.1:8000", "localhost:8000", "LOCALHOST:8000", "[::1]:8000", "127.0.0.2:8000"):
        assert loopback.host_allowed(header), header
    for header in (None, "", "127.0.0.1", "127.0.0.1:8001", "evil.example:8000", "localhost.evil.example:8000",
                   "10.0.0.1:8000", "127.0.0.1:8000@evil", "127.0.0.1:8000/x", "[::1:8000", "a b:8000"):
        assert not loopback.host_allowed(header), header
    wildcard = Guard("0.0.0.0", 8000, token="t")
    assert wildcard.host_allowed("192.168.1.4:8000") and wildcard.host_allowed(f"{socket.gethostname()}:8000")
    assert not wildcard.host_allowed("evil.example:8000")
    named = Guard("192.168.1.4", 80, token="t")
    assert named.host_allowed("192.168.1.4") and not named.host_allowed("127.0.0.1")
    assert split_host("[::1]:8000") == ("::1", 8000) and split_host("Example.COM.:80") == ("example.com", 80)


def test_origins_must_be_the_served_page() -> None:
    guard = Guard("127.0.0.1", 8000, token="t")
    assert guard.origin_allowed(None, "127.0.0.1:8000")  # not a browser's script
    assert guard.origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000")
    for origin in ("http://evil.example", "null", "https://127.0.0.1:8000", "http://localhost:8000"):
        assert not guard.origin_allowed(origin, "127.0.0.1:8000"), origin
    assert guard.url() == "http://127.0.0.1:8000/t/" and Guard("::1", 9, token="t").url() == "http://[::1]:9/t/"


def test_each_run_has_its_own_secret() -> None:
    first, second = Guard("127.0.0.1", 1), Guard("127.0.0.1", 1)
    assert first.token != second.token and len(first.token) >= 32
    assert first.token_matches(first.token) and not first.token_matches(second.token)
    assert not first.token_matches(None)


def test_the_tab_command_cannot_import_from_the_current_directory() -> None:
    from tui.cli.serve import tab_command

    args = parsed(["--serve", "--offline"])
    words = tab_command(args).split()
    assert words[:5] == ["exec", sys.executable, "-P", "-m", "tui.cli"], "the shell becomes the app (stopped or killed)"


def test_serve_refuses_at_start_what_every_tab_would_refuse(tmp_path: Path) -> None:
    for flags, expected in ((["--resume"], "--resume: no session in"), (["--set", "bash_timeout=nan"], "out of range")):
        result = ctxtui("--serve", "--port", "0", "--offline", "--workdir", str(tmp_path), *flags)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and expected in lines[0], lines
