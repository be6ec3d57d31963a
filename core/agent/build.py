"""Building an agent's parts from settings: the model, the tools, the archive, the compactor, the session.

`build_stack` makes everything `Agent.from_settings` hands to the Agent, without changing the
settings it was given (the workdir is resolved in a copy). The compactor's summarizer is the model's
summary call with the user's standing instructions added to every focus.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path

from core.agent.launch import model_label
from core.archive import Archive
from core.compaction.pipeline import Compactor
from core.compaction.summary import Summarize
from core.config import Settings
from core.engines.edits import server_engine
from core.model.base import Model, SummaryEvent
from core.sessions.listing import resume_replay
from core.sessions.log import Replay, SessionLog
from core.tools import ToolBox, Workspace


@dataclass(frozen=True)
class Stack:
    """What an Agent is built from."""

    settings: Settings
    model: Model
    toolbox: ToolBox
    compactor: Compactor
    session: SessionLog
    replay: Replay
    resumed: Path | None


def build_stack(settings: Settings, model: Model | None = None, archive: Archive | None = None) -> Stack:
    """The parts of an agent for `settings` (offline model without a key; with `--resume`, the
    session it continues, replayed once: ResumeError when there is none to continue); `archive`,
    when given, is the one a first frame already shows (core/agent/launch.py)."""
    workdir = settings.workdir.resolve()
    settings = dataclasses.replace(settings, workdir=workdir)
    model = model or make_model(settings)
    archive = archive if archive is not None else Archive(workdir)
    toolbox = ToolBox(
        Workspace(workdir),
        bash_timeout=settings.bash_timeout,
        max_bash_timeout=settings.max_bash_timeout,
        output_limit=settings.tool_output_limit,
        read_line_limit=settings.read_line_limit,
        spill_dir=archive.tool_results_dir,
        spill_byte_limit=settings.spill_byte_limit,
        glob_time_budget=settings.glob_time_budget,
    )
    compactor = Compactor(
        archive, summarize=summarizer(model, settings.summary_instructions), settings=settings.compaction
    )
    replay, resumed = (
        resume_replay(settings.state_dir, settings.resume_id, settings.undo_depth)
        if settings.resume
        else (Replay(), None)
    )
    session = SessionLog.create(settings.state_dir, {"model": model.name, "workdir": str(workdir)})
    return Stack(settings, model, toolbox, compactor, session, replay, resumed)


def summarizer(model: Model, instructions: str = "") -> Summarize:
    """The model's summary call (its retries reported as they happen), with the user's standing
    `instructions` added to every focus."""
    standing = f"Always: {instructions.strip()}" if instructions.strip() else ""
    events = getattr(model, "summary_events", None)  # a model that only has `summarize` still works

    def summarize(text: str, focus: str | None) -> Awaitable[str] | AsyncIterator[SummaryEvent]:
        if standing:
            focus = f"{focus}\n{standing}" if focus else standing
        return events(text, focus) if events is not None else model.summarize(text, focus)

    return summarize


def make_model(settings: Settings) -> Model:
    """The Anthropic model when a key is configured (and --offline is not set), else the offline one."""
    if settings.use_offline:
        from core.model.offline import OfflineModel

        return OfflineModel(chunk_delay=settings.offline_chunk_delay, label=model_label(settings))
    from core.model.anthropic import AnthropicModel

    return AnthropicModel(
        settings.model,
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
        timeout=settings.request_timeout,
        max_retries=settings.max_retries,
        retry_after_cap=settings.retry_after_cap,
        cache_ttl=settings.cache_ttl,
        thinking=settings.thinking,
        engine=server_engine(settings),
    )
