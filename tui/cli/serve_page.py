"""The page `ctxtui --serve` sends a browser: the terminal and its script, nothing from anywhere else.

textual-serve's own page loads its font from Google's servers. A page served on loopback must make
no outside request: it would tell a third party when and where the app is opened, and it fails
offline. This page uses the Roboto Mono files textual-serve ships, served by this server under the
run's secret path, and its Content-Security-Policy lets the browser fetch from this server only.
The elements and data attributes are the ones textual-serve's script reads (`.textual-terminal`
with the WebSocket URL and font size, `#start`, the body's `-first-byte` and `-closed` classes).
"""

from __future__ import annotations

import html
from string import Template

_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>$name</title>
<link rel="stylesheet" href="${static}css/xterm.css">
<script src="${static}js/textual.js"></script>
<style>
@font-face {
  font-family: "Roboto Mono";
  src: url("${static}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype");
  font-weight: 100 700;
  font-style: normal;
}
@font-face {
  font-family: "Roboto Mono";
  src: url("${static}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype");
  font-weight: 100 700;
  font-style: italic;
}
html, body { margin: 0; height: 100%; background: #0c181f; }
body { font-family: "Roboto Mono", ui-monospace, monospace; color: rgba(255, 255, 255, 0.95); }
.notice {
  position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
  flex-direction: column; gap: 16px; z-index: 10; background: #0c181f;
}
.notice button {
  font: inherit; padding: 12px 28px; border: none; color: inherit; background: #5e0ba7; cursor: pointer;
}
.notice button:hover { background: #ac5af4; }
#start { display: none; }
#start.-delay { display: block; }
body.-first-byte .opening, .closing { display: none; }
body.-closed .closing { display: flex; }
.textual-terminal { height: 100vh; opacity: 0; transition: opacity 0.3s ease-out; }
body.-first-byte .textual-terminal { opacity: 1; }
</style>
<script>
function restart() {
  const params = new URLSearchParams(window.location.search);
  params.delete("delay");
  params.delete("ping");
  window.location.href = window.location.pathname + "?" + params.toString();
}
</script>
</head>
<body>
<div class="notice opening">
  <div>$name</div>
  <button type="button" id="start" onclick="restart()">Start</button>
</div>
<div class="notice closing">
  <div>Session ended.</div>
  <button type="button" onclick="restart()">Restart</button>
</div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="$websocket" data-font-size="$font_size"></div>
</body>
</html>
""")


def page(static_url: str, websocket_url: str, name: str = "ctxtui", font_size: int = 16) -> str:
    """The page, every value escaped for HTML (the URLs hold the Host the browser sent, checked but still text)."""
    return _PAGE.substitute(
        static=html.escape(static_url),
        websocket=html.escape(websocket_url),
        name=html.escape(name),
        font_size=int(font_size),
    )


def content_security_policy(origin: str) -> str:
    """What the page may load: this server's files and WebSocket, nothing else (`origin` is `host:port`)."""
    return (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
        f"font-src 'self'; img-src 'self' data:; connect-src 'self' ws://{origin}; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )
