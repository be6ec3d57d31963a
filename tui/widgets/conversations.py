"""ConversationList: the conversations the proxy has seen, each with its calls, one row each.

A conversation is a system prompt and a first user message (core/proxy/watch.py keys them); several
clients, or one client's side requests, make several. The list holds every call of every
conversation as the watch's events bring them (it is where the view finds a conversation's calls
when the person switches to it), and shows per conversation: its number, the client's user agent,
calls, model, cost and its first message. `enter` or a click on a row posts `Chosen`; the row the
views show is marked ▶. Everything shown comes from requests: data, never markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text
from textual import on
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.proxy.calls import ProxyCall, call_sample
from core.text import visible
from core.values.samples import ContextSample
from tui.format import display_line, plural

_SHOWN = Style(color="spring_green2", bold=True)
_DIM = Style(dim=True)
_PENDING = Style(color="gold1")


@dataclass
class ConversationCalls:
    """One conversation's calls, oldest first, and what its row says."""

    number: int
    label: str
    client: str
    calls: list[ProxyCall] = field(default_factory=list)

    @property
    def latest(self) -> ProxyCall:
        return self.calls[-1]

    def previous(self, call: ProxyCall) -> ProxyCall | None:
        """The call before `call` in this conversation."""
        for index, known in enumerate(self.calls):
            if known.id == call.id:
                return self.calls[index - 1] if index else None
        return None

    def sample(self, call: ProxyCall) -> ContextSample:
        return call_sample(call, self.previous(call))

    def samples(self) -> list[ContextSample]:
        return [
            call_sample(call, self.calls[index - 1] if index else None)
            for index, call in enumerate(self.calls)
        ]

    @property
    def cost(self) -> float | None:
        costs = [call.cost for call in self.calls if call.cost is not None]
        return sum(costs) if costs else None


class ConversationList(OptionList):
    """The proxy's conversations (see the module docstring)."""

    DEFAULT_CSS = """
    ConversationList {
        height: 1fr;
        background: transparent;
        padding: 0 1;
    }
    """

    @dataclass
    class Chosen(Message):
        """The person chose conversation `number`: every view shows it."""

        number: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.conversations: dict[int, ConversationCalls] = {}
        self.shown: int | None = None

    def call_started(self, call: ProxyCall) -> ConversationCalls:
        """A new call: added to its conversation (a new row for a new conversation)."""
        conversation = self.conversations.get(call.conversation)
        if conversation is None:
            conversation = ConversationCalls(
                call.conversation, _first_text(call), call.user_agent or "unknown client"
            )
            self.conversations[call.conversation] = conversation
            conversation.calls.append(call)
            self.add_option(Option(self._row(conversation), id=str(call.conversation)))
            self._title()
        else:
            conversation.calls.append(call)
            self._repaint(conversation)
        return conversation

    def call_finished(self, call: ProxyCall) -> ConversationCalls | None:
        """A call ended: its reply, usage and cost replace the call as it started."""
        conversation = self.conversations.get(call.conversation)
        if conversation is None:
            return None
        for index, known in enumerate(conversation.calls):
            if known.id == call.id:
                conversation.calls[index] = call
                break
        self._repaint(conversation)
        return conversation

    def show(self, number: int) -> None:
        """Mark conversation `number` as the one the views show."""
        before, self.shown = self.shown, number
        for changed in (before, number):
            if changed is not None and changed in self.conversations:
                self._repaint(self.conversations[changed])
        if number in self.conversations:
            self.highlighted = self.get_option_index(str(number))  # the cursor starts from the shown one

    def _repaint(self, conversation: ConversationCalls) -> None:
        self.replace_option_prompt(str(conversation.number), self._row(conversation))

    def _title(self) -> None:
        self.border_title = f"Conversations · {len(self.conversations)}"

    def _row(self, conversation: ConversationCalls) -> Text:
        latest = conversation.latest
        shown = conversation.number == self.shown
        row = Text()
        row.append("▶ " if shown else "  ", _SHOWN)
        row.append(f"{conversation.number} ", _SHOWN if shown else Style(bold=True))
        row.append(plural(len(conversation.calls), "call"))
        cost = conversation.cost
        row.append(f" · ${cost:.4f}" if cost is not None else " · $?", _DIM)
        if not latest.finished:
            row.append(" · ●", _PENDING)
        row.append(f'\n  "{display_line(conversation.label, 60)}"')
        row.append(f"\n  {display_line(latest.model or '(no model)', 40)}", _DIM)
        row.append(f"\n  {display_line(conversation.client, 60)}", _DIM)
        return row

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Chosen(int(event.option.id)))


def _first_text(call: ProxyCall) -> str:
    """The conversation's first user message, as its row names it."""
    for message in call.messages:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return visible(content)
            if isinstance(content, list):
                texts = [
                    str(block.get("text", ""))
                    for block in content
                    if isinstance(block, dict) and block.get("type") == "text"
                ]
                return visible(" ".join(texts)) if texts else "(no text)"
    return "(no user message)"


__all__ = ["ConversationCalls", "ConversationList"]
