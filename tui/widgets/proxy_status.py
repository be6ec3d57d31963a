"""ProxyStatus: the proxy view's top line: where it listens and forwards, where it records, and the
totals over every call (calls, in flight, failed, cost), kept from the watch's events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from core.proxy.calls import ProxyCall
from core.sessions.audit import Finding
from core.text import visible
from tui.format import plural


@dataclass(frozen=True)
class ProxyAbout:
    """What the proxy is: its address, its upstream, and its recordings' folder (None: not recording)."""

    url: str
    upstream: str
    recording: str | None


class ProxyStatus(Widget):
    """One line over the views (two when narrow: it wraps)."""

    DEFAULT_CSS = """
    ProxyStatus {
        height: auto;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    def __init__(self, about: ProxyAbout, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.about = about
        self.calls = 0
        self.pending: set[str] = set()
        self.failed = 0
        self.cost: float | None = None
        self.notices = 0
        self.findings: tuple[str, ...] = ()
        """The kinds the audit found in the shown conversation's compactions (`inspect --audit`'s rules)."""

    def call_started(self, call: ProxyCall) -> None:
        self.calls += 1
        self.pending.add(call.id)
        self.refresh(layout=True)

    def call_finished(self, call: ProxyCall) -> None:
        self.pending.discard(call.id)
        if call.outcome != "complete" or (call.status or 0) >= 400:
            self.failed += 1
        if call.cost is not None:
            self.cost = (self.cost or 0.0) + call.cost
        self.refresh(layout=True)

    def audited(self, found: Sequence[Finding]) -> None:
        self.findings = tuple(finding.kind for finding in found)
        self.refresh(layout=True)

    def noticed(self) -> None:
        self.notices += 1
        self.refresh(layout=True)

    def render(self) -> Text:
        about = self.about
        text = Text()
        text.append("ctxtui proxy ", Style(bold=True))
        text.append(visible(about.url), Style(bold=True, color="spring_green2"))
        text.append(f" → {visible(about.upstream)}")
        text.append(
            " · recording to " + visible(about.recording) if about.recording else " · not recording",
            Style(dim=True),
        )
        text.append(f" · {plural(self.calls, 'call')}")
        if self.pending:
            text.append(f" · {len(self.pending)} in flight", Style(color="gold1"))
        if self.failed:
            text.append(f" · {self.failed} failed", Style(color="red1"))
        if self.cost is not None:
            text.append(f" · ${self.cost:.4f}")
        if self.notices:
            text.append(f" · {plural(self.notices, 'notice')}", Style(color="gold1"))
        if self.findings:
            kinds = ", ".join(dict.fromkeys(self.findings))
            text.append(f" · audit: {plural(len(self.findings), 'finding')} ({kinds})", Style(color="red1"))
        return text


__all__ = ["ProxyAbout", "ProxyStatus"]
