"""Screenshot of `ctxtui --serve` in headless Chromium: screenshots/serve.png.

Run: .venv/bin/python screenshots/serve_screenshot.py   (needs the serve extra and /usr/bin/chromium,
Debian's chromium package; without it the script says so and exits 0 without a picture)

It starts `ctxtui --serve --offline` on a free loopback port (`--port 0`) in a fresh workdir, reads the
URL it prints (the page lives under a per-run secret path), waits for the page to answer, opens it in headless Chromium through the DevTools protocol (aiohttp, which the serve extra
brings, speaks its websocket), waits until the app's first bytes arrive, types a prompt, waits a few
seconds for the reply to be painted (the terminal is a canvas, so there is no text to wait for) and
captures the PNG. Chromium runs with a throwaway profile and with
the networking it does not need switched off.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
OUTPUT = Path(__file__).with_name("serve.png")
WIDTH, HEIGHT = 1400, 860


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def printed_url(server: subprocess.Popen[str]) -> str:
    """The URL `ctxtui --serve` prints on stderr at start (its secret path is the only way in)."""
    assert server.stderr is not None
    for _ in range(5):
        found = re.search(r"http://\S+/", server.stderr.readline())
        if found:
            return found.group(0)
    raise SystemExit("serve_screenshot: ctxtui --serve printed no URL")


def wait_for(url: str, attempts: int = 200) -> None:
    for _ in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"serve_screenshot: {url} never answered")


async def capture(url: str, profile: Path) -> None:
    """Open `url` in headless Chromium, send a prompt to the app, and save the painted page."""
    import aiohttp

    debug_port = free_port()
    browser = await asyncio.create_subprocess_exec(
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars",
        f"--remote-debugging-port={debug_port}", "about:blank",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as session:
            targets: list[dict[str, str]] = []
            for _ in range(200):
                try:
                    async with session.get(f"http://127.0.0.1:{debug_port}/json/list") as response:
                        targets = [t for t in await response.json() if t.get("type") == "page"]
                    if targets:
                        break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            async with session.ws_connect(targets[0]["webSocketDebuggerUrl"], max_msg_size=0) as devtools:
                counter = 0

                async def call(method: str, **params: object) -> dict[str, object]:
                    nonlocal counter
                    counter += 1
                    await devtools.send_json({"id": counter, "method": method, "params": params})
                    async for message in devtools:
                        data = json.loads(message.data)
                        if data.get("id") == counter:
                            return dict(data.get("result", {}))
                    raise SystemExit("serve_screenshot: the browser closed the connection")

                async def app_started() -> bool:
                    # textual-serve's page marks the body once the app's first bytes arrive
                    result = await call("Runtime.evaluate",
                                        expression="document.body.classList.contains('-first-byte')")
                    value = result.get("result", {})
                    return isinstance(value, dict) and value.get("value") is True

                await call("Page.enable")
                await call("Page.navigate", url=url)
                for _ in range(300):
                    if await app_started():
                        break
                    await asyncio.sleep(0.1)
                else:
                    raise SystemExit("serve_screenshot: the app never started in the page")
                await asyncio.sleep(2.0)  # first paint and layout (the terminal is a canvas: no text to wait for)
                for kind in ("mousePressed", "mouseReleased"):  # focus the terminal (the prompt is at the bottom)
                    await call("Input.dispatchMouseEvent", type=kind, x=WIDTH // 4, y=HEIGHT - 220, button="left",
                               clickCount=1)
                await asyncio.sleep(0.5)
                await call("Input.insertText", text="read notes.txt")
                await call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter",
                           windowsVirtualKeyCode=13, text="\r")
                await call("Input.dispatchKeyEvent", type="keyUp", key="Enter", code="Enter", windowsVirtualKeyCode=13)
                await asyncio.sleep(4.0)  # the offline reply and its tool call are painted
                shot = await call("Page.captureScreenshot", format="png")
                OUTPUT.write_bytes(base64.b64decode(str(shot["data"])))
    finally:
        browser.terminate()
        await browser.wait()


def main() -> int:
    if not CHROMIUM.exists():
        print(f"serve_screenshot: {CHROMIUM} not found (apt-get install chromium); no screenshot taken")
        return 0
    with tempfile.TemporaryDirectory(prefix="ctxtui-serve-") as scratch:
        workdir = Path(scratch) / "work"
        workdir.mkdir()
        (workdir / "notes.txt").write_text("ctxtui in a browser\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}
        server = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "--serve", "--port", "0", "--offline", "--workdir", str(workdir)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        try:
            url = printed_url(server)
            wait_for(url)
            asyncio.run(capture(url, Path(scratch) / "profile"))
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=15)
    print(f"serve_screenshot: wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
