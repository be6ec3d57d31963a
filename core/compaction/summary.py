"""The summary the lossy steps ask for: the conversation as the summarizer sees it, and the call.

The summarizer reads the JSON of the messages as data, cut to a head and a tail when it is long (a
visible line between them names the transcript that holds the whole). It is `async (text, focus) ->
str`, or an async iterator (`Model.summary_events`) that yields a `Retrying` before each retry and
the summary last, so a retry inside a summary call is reported while it waits.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from core.compaction.settings import CompactionError
from core.markers import omission_marker
from core.model.base import Retrying, SummaryUsage
from core.text import error_line

Message = dict[str, Any]
Summarize = Callable[[str, str | None], Awaitable[str] | AsyncIterator[Retrying | SummaryUsage | str]]
"""The summarizer: `async (conversation_text, focus) -> str`, or an async iterator that yields a
`Retrying` before each retry, the call's `SummaryUsage`, and the summary text last
(`Model.summary_events`)."""


def conversation_text(messages: Sequence[Message], limit: int = 80_000, transcript: str | None = None) -> str:
    """The JSON of `messages` for the summarizer: head 1/4 and tail 3/4 of `limit` when longer.

    `<` and `>` are written as the JSON escapes \\u003c and \\u003e (still valid JSON, and the
    same messages once decoded), so no text inside can close the tag the prompt wraps it in. A cut
    text has a visible omission line between head and tail naming the transcript with the whole.
    """
    text = (
        json.dumps(list(messages), default=str, ensure_ascii=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
    )
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    omitted = len(text) - head - tail
    where = (
        f"the whole conversation is in {transcript}" if transcript else "the whole conversation is not shown"
    )
    return f"{text[:head]}\n{omission_marker(omitted, where)}\n{text[len(text) - tail :]}"


async def summary_events(
    summarize: Summarize | None,
    messages: Sequence[Message],
    focus: str | None,
    transcript: str | None,
    limit: int,
) -> AsyncIterator[Retrying | SummaryUsage | str]:
    """The summary call: a `Retrying` before each retry, its `SummaryUsage`, then the summary text, last."""
    if summarize is None:
        raise CompactionError("no summarizer configured; history left as it was")
    text = conversation_text(messages, limit, transcript)
    summary: object = None
    try:
        produced = summarize(text, focus)
        if isinstance(produced, AsyncIterator):
            async with contextlib.aclosing(produced):  # type: ignore[type-var]
                async for item in produced:
                    if isinstance(item, Retrying | SummaryUsage):
                        yield item
                    else:
                        summary = item
        else:
            summary = await produced
    except CompactionError:
        raise
    except Exception as error:
        raise CompactionError(f"summary failed, history left as it was: {error_line(error)}") from error
    if not isinstance(summary, str) or not summary.strip():
        raise CompactionError("summary failed, history left as it was: the summary was empty")
    yield summary
