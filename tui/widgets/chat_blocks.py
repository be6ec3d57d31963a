"""The one-widget-per-block family of the chat transcript (tool calls live in tool_block.py).

Text from the user, the model and the tools is wrapped in `Content` (never parsed as markup):
markers such as `[Earlier tool result saved at PATH]` would otherwise be read as style tags. It also
goes through `core.text.visible` first, so an escape sequence in it (OSC 2 title, OSC 52 clipboard,
cursor movement) is shown as `\x1b...` and never reaches the terminal.

`AssistantBlock` (Markdown) lives in tui/widgets/assistant_block.py and is imported from here on
first use (`from tui.widgets.chat_blocks import AssistantBlock` works as before), so the chat's
first frame does not wait for markdown-it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.content import Content
from textual.widgets import Static

from core.text import one_line, visible
from tui.format import count, plural

if TYPE_CHECKING:
    from core.events import CompactionStep

    pass


def __getattr__(name: str) -> Any:
    """`AssistantBlock`, imported when first asked for (it brings Textual's Markdown)."""
    if name == "AssistantBlock":
        from tui.widgets.assistant_block import AssistantBlock

        return AssistantBlock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


STEP_ICONS = {
    "tool_result_budget": "⇲",
    "snip_compact": "✂",
    "micro_compact": "↩",
    "fit_tool_results": "⇲",
    "compact_history": "Σ",
    "reactive_compact": "Σ",
}


class UserBlock(Static):
    """What the user sent."""

    DEFAULT_CSS = """
    UserBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $primary;
        background: $primary 10%;
        color: $text;
    }
    """

    max_lines = 16
    max_chars = 2_000

    def __init__(self, text: str) -> None:
        super().__init__(self.shown(text))
        self.text = text

    @classmethod
    def shown(cls, text: str) -> Content:
        """Long pastes are cut for the chat (the full text is in the history and the inspector)."""
        lines = text.splitlines()
        head = "\n".join(lines[: cls.max_lines])[: cls.max_chars]
        if len(head) >= len(text):
            return Content(visible(text))
        rest = len(text) - len(head)
        return Content.assemble(
            visible(head),
            (f"\n… {plural(rest, 'more char')} ({plural(len(lines), 'line')} in all)", "dim italic"),
        )


class NoticeLine(Static):
    """A one-line notice: a retry, a resumed session, a cancelled turn."""

    DEFAULT_CSS = """
    NoticeLine {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;
        &.-warning { color: $text-warning; }
    }
    """

    def __init__(self, text: str, *, icon: str = "ℹ", warning: bool = False) -> None:
        super().__init__(
            Content.assemble((f"{icon} ", "bold"), visible(text)), classes="-warning" if warning else ""
        )
        self.text = text


class ErrorLine(Static):
    """A one-line error, in the error style."""

    DEFAULT_CSS = """
    ErrorLine {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-error;
        background: $error 10%;
    }
    """

    def __init__(self, message: str, kind: str = "error") -> None:
        flat = one_line(message)
        super().__init__(Content.assemble((f"✗ {visible(kind)}: ", "bold"), visible(flat)))
        self.text = flat


class CompactionNotice(Static):
    """A compaction step, inline: 'snip_compact: 61,234 -> 18,002 chars, 31 messages archived'."""

    DEFAULT_CSS = """
    CompactionNotice {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-accent;
        background: $accent 8%;
        border-left: outer $accent;
    }
    """

    def __init__(self, step: CompactionStep) -> None:
        self.step = step
        super().__init__(self.describe(step))

    @staticmethod
    def summary(step: CompactionStep) -> str:
        """The plain one-line summary (also what tests read)."""
        what = step.detail or f"{plural(step.messages_affected, 'message')} affected"
        if step.step == "snip_compact":
            what = f"{plural(step.messages_affected, 'message')} archived"
        return f"{step.step}: {count(step.chars_before)} -> {count(step.chars_after)} chars, {what}"

    @classmethod
    def describe(cls, step: CompactionStep) -> Content:
        icon = STEP_ICONS.get(step.step, "⚙")
        saved = step.saved
        parts: list[str | tuple[str, str]] = [
            (f"{icon} {step.step}", "bold"),
            f"  {count(step.chars_before)} → {count(step.chars_after)} chars",
        ]
        if saved > 0:
            parts.append((f"  (−{count(saved)})", "$text-success"))
        what = step.detail or f"{plural(step.messages_affected, 'message')} affected"
        if step.step == "snip_compact":
            what = f"{plural(step.messages_affected, 'message')} archived"
        parts.append(f" · {visible(what)}")
        if step.files_written:
            first = visible(step.files_written[0])
            more = f" +{len(step.files_written) - 1}" if len(step.files_written) > 1 else ""
            parts.append((f" · → {first}{more}", "dim"))
        cost = step.cost_line()
        if cost:  # what it saved against what it cost the prompt cache (online only)
            parts.append((f"\n  {cost}", "$text-warning" if step.cache_invalidated_tokens else "dim"))
        return Content.assemble(*parts)
