"""What the main screen shows of its agent, whether it is built yet or not.

`ctxtui` draws its first frame before the agent exists (core/agent/launch.py): the title bar, the
gauge and the empty message tree come from the settings; the agent, built right after, fills in
what only it knows (the request's system prompt and tools, the forecast). A screen given a built
agent (a resumed session, the demo, the tests) shows it as it is from the start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.agent.launch import Launch
from core.history.sizes import estimate_chars
from core.text import visible
from tui.widgets.inspector import InspectorStart, request_extra

if TYPE_CHECKING:
    from core.agent import Agent

PERMISSION_TEXT = {
    "ask": "bash: ask",
    "session": "bash: allowed this session",
    "preset": "bash: pre-approved",
}


@dataclass(frozen=True)
class Front:
    """The first frame's facts about the agent."""

    workdir: str
    label: str
    """The model's label (its name, or why the offline model runs)."""
    model_name: str
    offline: bool
    allow_all: bool
    inspector: InspectorStart


def front_of(agent: Agent | Launch) -> Front:
    """The front of a built agent, or of one still to be built from a launch (an empty history)."""
    if isinstance(agent, Launch):
        settings = agent.settings
        start = InspectorStart(
            archive=None,  # it comes with the agent (Inspector.set_archive)
            messages=[],
            chars=estimate_chars([]),
            limit=settings.compaction.context_char_limit,
            target_ratio=settings.compaction.micro_target_ratio,
            offline=agent.offline,
            paused=not settings.auto_compact,
        )
        return Front(
            str(agent.workdir), agent.model_label, settings.model, agent.offline, settings.yes, start
        )
    view = agent.view
    start = InspectorStart(
        archive=view.archive,
        messages=list(view.messages),
        chars=view.chars,
        limit=view.limit,
        target_ratio=view.target_ratio,
        offline=view.offline,
        paused=not view.auto_compact,
        samples=view.timeline,
        request_extra=request_extra(view.system_prompt, view.tools),
        ledger=view.ledger,
        facts=view.facts(),
    )
    return Front(str(view.workdir), view.model_label, view.model_name, view.offline, view.allow_all, start)


def permission_mode(agent: Agent | None, front: Front | None = None) -> str:
    """ "preset" (--yes), "session" (bash allowed for this session) or "ask" (before the agent is
    built, what its settings will make it)."""
    if agent is None:
        return "preset" if front is not None and front.allow_all else "ask"
    return agent.view.permission


def welcome_text(front: Front) -> str:
    """The chat's first block (Markdown): which model answers, and where to look. The workdir (a
    name from the file system) and the model's name (from the settings) go through `visible`, as the
    model's own text does: no control or hiding character reaches the terminal."""
    label, model_name, workdir = visible(front.label), visible(front.model_name), visible(front.workdir)
    if front.offline:
        first = (
            f"**{label[:1].upper()}{label[1:]}**: it understands `help`, `read PATH`, `$ CMD`, "
            "`glob PATTERN`, `write PATH` + text, `compact [focus]` and runs the real tools. "
            "Set `ANTHROPIC_API_KEY` (without `--offline`) to talk to Claude."
        )
    else:
        first = f"Talking to **{model_name}**. Ask for anything in `{workdir}`."
    return (
        f"{first}\n\nThe inspector shows what sits in the model's context and what compaction did to it: "
        "`ctrl+t` browses the messages, `enter` opens what a marker points at. "
        "`ctrl+p` lists every command, `/help` the keys."
    )
