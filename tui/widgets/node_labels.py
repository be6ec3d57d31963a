"""How the message tree labels what it shows: a node per message, a child per block, markers styled
by kind. A marker is styled (and can be opened) only when the archive resolves its path; anything
else, including a forged `[Earlier tool result saved at ../../etc/passwd]`, is the plain text it is.
Markers other clients leave (core/client_markers.py: Claude Code's compaction summaries, cleared
tool results and interruption notes, the API's compaction blocks) are styled where they have the
exact shape that module knows; they point at no file, so selecting one shows its text.
Untrusted text enters a label as `Text`, never as markup, with control characters shown as escapes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text

from core.client_markers import ClientMarker, block_marker, client_marker
from core.history.messages import USER_PIN_PREFIX, result_text, tool_result_ids, user_pin_key
from core.history.sizes import message_chars
from core.markers import Marker, is_notes_message, parse_marker
from core.text import visible
from core.values.markers import MARKER_KINDS
from tui.format import count, display_line, plural, size_bytes, tool_input_summary

if TYPE_CHECKING:  # the archive's module loads with the agent, after the first frame
    from core.archive import ArchivedFile


@dataclass
class NodeInfo:
    """What a node stands for. `kind` is the message kind ("message", or a marker kind for a marker
    message) or the block kind ("text", "tool_use", "tool_result", or a marker kind)."""

    kind: str
    index: int
    message: dict[str, Any]
    block: int | None = None
    marker: Marker | None = None
    archived: ArchivedFile | None = None
    populated: bool = False
    markers: dict[str, int] = field(default_factory=dict)
    body: Text | None = field(default=None, repr=False, compare=False)  # the label after "#N "
    leaf: bool = field(default=False, repr=False, compare=False)
    client: ClientMarker | None = None
    """Another client's marker this message or block is (shown styled; it opens no file)."""

    @property
    def trusted(self) -> bool:
        return self.archived is not None

    @property
    def is_marker(self) -> bool:
        return self.kind in MARKER_KINDS

    @property
    def text(self) -> str:
        """The in-context text of this node (what the model sees)."""
        content = self.message.get("content")
        if self.block is None:
            return content if isinstance(content, str) else result_text(content)
        block = content[self.block] if isinstance(content, list) else {}
        if not isinstance(block, dict):
            return str(block)
        if block.get("type") == "text":
            return str(block.get("text", ""))
        if block.get("type") == "tool_result":
            return result_text(block.get("content"))
        return json.dumps(block, ensure_ascii=False, indent=2, default=str)


class NodeLabels:
    """The labels and `NodeInfo` of messages and blocks, with the marks of pins and the next call."""

    def __init__(self, style: Callable[[str], Style], resolve: Callable[[str], ArchivedFile | None]) -> None:
        self._style = style
        self._resolve = resolve
        self.pinned: frozenset[str] = frozenset()  # tool_use ids and user: keys shown with 📌
        self._user_pins: frozenset[str] = frozenset()  # the user: keys among them
        self.shortened: frozenset[str] = frozenset()  # tool_use ids the next call would shorten
        self.cleared: frozenset[str] = (
            frozenset()
        )  # tool_use ids whose results the API cleared (a server engine)

    def set_marks(self, pinned: frozenset[str], shortened: frozenset[str]) -> frozenset[str]:
        """Take the new marks; returns the keys whose labels change."""
        changed = (pinned ^ self.pinned) | (shortened ^ self.shortened)
        self.pinned, self.shortened = pinned, shortened
        self._user_pins = frozenset(key for key in pinned if key.startswith(USER_PIN_PREFIX))
        return changed

    def _trusted_marker(self, text: Any) -> tuple[Marker | None, ArchivedFile | None]:
        marker = parse_marker(text)
        if marker is None:
            return None, None
        return marker, self._resolve(marker.path)

    def message(self, index: int, message: dict[str, Any]) -> NodeInfo:
        content = message.get("content") if isinstance(message, dict) else None
        role = visible(str(message.get("role", "?"))) if isinstance(message, dict) else "?"
        size = message_chars(message)
        if isinstance(content, str) or not isinstance(content, list):
            text = content if isinstance(content, str) else str(content)
            marker, archived = self._trusted_marker(text)
            if is_notes_message(text):  # the model's notes, carried by every compaction
                info = NodeInfo("notes", index, message, leaf=True)
                info.body = Text.assemble(self.notes(text), self._size(size))
            elif marker is not None and archived is not None:
                info = NodeInfo(marker.kind, index, message, marker=marker, archived=archived, leaf=True)
                info.body = Text.assemble(self.marker(marker), self._size(size))
            elif marker is None and (found := client_marker(text)) is not None:
                info = NodeInfo("message", index, message, leaf=True, client=found)
                info.body = Text.assemble(
                    (role, self._style(role)), " · ", self.client_marker(found), self._size(size)
                )
            else:
                info = NodeInfo("message", index, message, marker=marker, leaf=True)
                info.body = Text.assemble(
                    (role, self._style(role)), (f' · "{display_line(text, 60)}"', ""), self._size(size)
                )
                if marker is not None:
                    info.body.append(" · unverified marker", style=self._style("muted"))
                elif self.user_pinned(message):
                    info.body.append(" · 📌 pinned", style=self._style("pinned"))
            return info

        info = NodeInfo("message", index, message)
        kinds: dict[str, int] = {}
        names: list[str] = []
        clients: dict[
            str, tuple[ClientMarker, int]
        ] = {}  # another client's markers by kind: one, and how many
        for block in content:
            if not isinstance(block, dict):
                continue
            found = block_marker(block)
            if found is not None:
                first, times = clients.get(found.kind, (found, 0))
                clients[found.kind] = (first, times + 1)
            kind = str(block.get("type"))
            kinds[visible(kind)] = kinds.get(visible(kind), 0) + 1
            if kind == "tool_use":
                names.append(display_line(str(block.get("name")), 40))
            elif kind == "tool_result":
                marker, archived = self._trusted_marker(block.get("content"))
                if marker is not None and archived is not None:
                    info.markers[marker.kind] = info.markers.get(marker.kind, 0) + 1
                if block.get("is_error"):
                    info.markers["error"] = info.markers.get("error", 0) + 1
        label = Text.assemble((role, self._style(role)))
        for kind, number_of in kinds.items():
            label.append(f" · {kind}" + (f" ×{number_of}" if number_of > 1 else ""))
        if names:
            label.append(f" ({', '.join(dict.fromkeys(names))})", style=self._style("tool"))
        label.append_text(self._size(size))
        for kind, glyph in (("placeholder", "↩"), ("persisted", "⇲")):
            if info.markers.get(kind):
                label.append(f" · {glyph}{info.markers[kind]}", style=self._style(kind))
        if info.markers.get("error"):
            label.append(f" · ✗{info.markers['error']}", style=self._style("error"))
        for found, times in clients.values():
            label.append(" · ").append_text(self.client_marker(found, short=True))
            if times > 1:
                label.append(f" ×{times}", style=self._style(CLIENT_STYLES[found.kind]))
        ids = set(tool_result_ids(message))
        if ids & self.pinned or self.user_pinned(message):
            label.append(" · 📌 pinned", style=self._style("pinned"))
        if ids & self.shortened:
            label.append(" · ✂ next call shortens", style=self._style("shortened"))
        info.body = label
        return info

    def notes(self, text: str) -> Text:
        """The notes message's label: how many notes, the newest (the model wrote them: plain text)."""
        lines = [line for line in text.split("\n")[1:] if line.strip()]
        numbered = [line for line in lines if line.split(". ", 1)[0].isdigit()]
        newest = numbered[-1].split(". ", 1)[1] if numbered else ""
        label = Text.assemble(
            ("✎ notes", self._style("pinned")),
            (f" · {plural(len(numbered), 'note')}, kept through every compaction", self._style("pinned")),
        )
        if newest:
            label.append(f' · newest "{display_line(newest, 50)}"')
        return label

    def _size(self, chars: int) -> Text:
        return Text(f" · {count(chars)} chars", style=self._style("muted"))

    def marker(self, marker: Marker) -> Text:
        link = self._style("link")
        if marker.kind == "snip":
            return Text.assemble(
                (f"✂ snip: {plural(marker.count or 0, 'message')} archived", self._style("snip")),
                (" → ", self._style("snip")),
                (visible(marker.path), self._style("snip") + link),
            )
        if marker.kind in ("compacted", "reactive"):
            title = "Σ compacted summary" if marker.kind == "compacted" else "Σ reactive compact"
            return Text.assemble(
                (title, self._style("summary")),
                (" → ", self._style("summary")),
                (visible(marker.path), self._style("summary") + link),
            )
        if marker.kind == "placeholder":
            return Text.assemble(
                ("↩ placeholder", self._style("placeholder")),
                (" → ", self._style("placeholder")),
                (visible(marker.path), self._style("placeholder") + link),
            )
        preview = len(marker.preview or "")
        return Text.assemble(
            (f"⇲ persisted output ({count(preview)}-char preview)", self._style("persisted")),
            (" → ", self._style("persisted")),
            (visible(marker.path), self._style("persisted") + link),
        )

    def client_marker(self, marker: ClientMarker, *, short: bool = False) -> Text:
        """Another client's marker: its glyph and what it is ("Σ claude-code compaction summary")."""
        style = self._style(CLIENT_STYLES[marker.kind])
        glyph = CLIENT_GLYPHS[marker.kind]
        if short:
            return Text(f"{glyph} {CLIENT_SHORT[marker.kind]}", style=style)
        return Text(f"{glyph} {visible(marker.describe())}", style=style)

    def block(self, parent: NodeInfo, block_index: int, block: dict[str, Any]) -> tuple[Text, NodeInfo]:
        kind = str(block.get("type"))
        info = NodeInfo(kind, parent.index, parent.message, block=block_index)
        muted = self._style("muted")
        found = block_marker(block)
        if found is not None:
            info.client = found
            text = info.text if kind != "compaction" else str(block.get("content") or "")
            label = Text.assemble(self.client_marker(found), (f" · {count(len(text))} chars", muted))
            if kind == "compaction" and block.get("content") is None:
                label.append(
                    " · failed (null content): kept, a no-op for the API", style=self._style("error")
                )
            if found.summary:
                label.append(f' · "{display_line(found.summary, 60)}"')
            return label, info
        if kind in ("thinking", "redacted_thinking"):
            text = str(block.get("thinking", "")) if kind == "thinking" else ""
            label = Text.assemble((kind, muted), (f" · {count(len(text))} chars", muted))
            if text:
                label.append(f' · "{display_line(text, 60)}"', style=muted)
            return label, info
        if kind == "text" and isinstance(block.get("opaque"), dict):
            # a placeholder for what the proxy could not read (core/proxy/openai.py: `opaque`)
            facts = block["opaque"]
            size = facts.get("bytes")
            return Text.assemble(
                ("opaque ", muted),
                display_line(str(facts.get("item")), 40),
                (f" · {count(size) if isinstance(size, int) else '?'} bytes, not readable", muted),
            ), info
        if kind == "text":
            text = str(block.get("text", ""))
            return Text.assemble(
                "text", (f" · {count(len(text))} chars", muted), f' · "{display_line(text, 60)}"'
            ), info
        if kind == "tool_use":
            tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
            assert isinstance(tool_input, dict)
            name = str(block.get("name"))
            return Text.assemble(
                "tool_use ",
                (display_line(name, 40), self._style("tool")),
                f" · {tool_input_summary(name, tool_input, 60)}",
            ), info
        if kind == "tool_result":
            label, info = self._result(info, block)
            tool_use_id = str(block.get("tool_use_id"))
            if tool_use_id in self.pinned:
                label.append(" · 📌 pinned", style=self._style("pinned"))
            if tool_use_id in self.shortened:
                label.append(" · ✂ next call shortens", style=self._style("shortened"))
            if tool_use_id in self.cleared:
                label.append(
                    " · cleared by the API (the model no longer sees it)", style=self._style("muted")
                )
            return label, info
        return Text(f"{display_line(kind, 40)} block"), info

    def _result(self, info: NodeInfo, block: dict[str, Any]) -> tuple[Text, NodeInfo]:
        """The label of a tool_result block: a trusted marker, or the text with its size."""
        muted = self._style("muted")
        raw = block.get("content")
        text = result_text(raw)
        marker, archived = self._trusted_marker(raw)
        if marker is not None and archived is not None and marker.kind in ("placeholder", "persisted"):
            info.kind, info.marker, info.archived = marker.kind, marker, archived
            label = self.marker(marker)
            label.append(f" · {size_bytes(archived.size)} archived", style=muted)
            return label, info
        info.marker = marker
        head = ("tool_result ✗", self._style("error")) if block.get("is_error") else ("tool_result", "")
        label = Text.assemble(head, (f" · {count(len(text))} chars", muted), f' · "{display_line(text, 60)}"')
        if marker is not None:
            label.append(" · unverified marker", style=muted)
        return label, info

    def user_pinned(self, message: dict[str, Any]) -> bool:
        """A user message pinned by its content key (hashed only while some user message is pinned)."""
        return bool(self._user_pins) and user_pin_key(message) in self._user_pins


CLIENT_STYLES = {
    "compaction_summary": "summary",
    "server_compaction": "summary",
    "cleared_tool_result": "placeholder",
    "interrupted": "muted",
}
CLIENT_GLYPHS = {
    "compaction_summary": "Σ",
    "server_compaction": "Σ",
    "cleared_tool_result": "⌫",
    "interrupted": "⏹",
}
CLIENT_SHORT = {
    "compaction_summary": "compaction summary",
    "server_compaction": "server compaction",
    "cleared_tool_result": "cleared result",
    "interrupted": "interrupted",
}


def has_blocks(message: dict[str, Any]) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and bool(content)
