"""Headless mode (`ctxtui -p`): one turn to completion, printed as text, one JSON object, or JSON lines.

`text` prints the final assistant text on stdout and one line per compaction step on stderr.
`stream-json` prints every event of the turn as it happens, one JSON object per line, each with a
`type` (`text`, `tool_call`, `tool_result`, `compaction`, `held`, `context`, `notice`, `permission`,
`error`) and last a `result` (final text, exit code). A `context` record is the call's `ContextSample`
from the agent's timeline, emitted when the call ended (so after its streamed text): with its cache
miss, its cost in four parts and its thinking tokens; a summary call has one too (`kind`
"summary"). A `compaction` record carries what the step cost the prompt cache, a `held` record the
steps the cache-aware timing keeps waiting. `-v` prints each sample as one line on stderr
(`describe_sample`). `json` prints one object at the end: the result with
every event in order. JSON output is ASCII-escaped, so no byte of model or tool text can act as
terminal control; text output goes through `core.text.visible` for the same reason.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from core.text import visible

EXIT_OK = 0
EXIT_MODEL_ERROR = 1
EXIT_USAGE = 2

OUTPUT_FORMATS = ("text", "json", "stream-json")


def print_err(line: str) -> None:
    """One line on stderr, with control characters shown as visible escapes."""
    print(visible(line), file=sys.stderr, flush=True)


def event_record(event: Any) -> dict[str, Any] | None:
    """The JSON object of one core event (None for events headless output leaves out)."""
    from core.events import (
        CompactionHeld,
        CompactionStep,
        ErrorEvent,
        Notice,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
    )

    if isinstance(event, TextDelta):
        return {"type": "text", "text": event.text}
    if isinstance(event, ToolCallStarted):
        return {"type": "tool_call", "id": event.tool_use_id, "name": event.name, "input": event.input}
    if isinstance(event, ToolCallFinished):
        return {
            "type": "tool_result",
            "id": event.tool_use_id,
            "name": event.name,
            "output": event.output,
            "chars": event.output_chars,
            "is_error": event.is_error,
            "duration": round(event.duration, 3),
        }
    if isinstance(event, CompactionStep):
        from dataclasses import asdict

        return {
            "type": "compaction",
            "step": event.step,
            "before": event.chars_before,
            "after": event.chars_after,
            "messages_affected": event.messages_affected,
            "files": list(event.files_written),
            "cache_invalidated_tokens": event.cache_invalidated_tokens,
            "break_even_calls": event.break_even_calls,
            "ledger": [asdict(entry) for entry in event.ledger],
            "detail": event.detail,
            "saved_tokens": event.saved_tokens,
            "cleared": list(event.cleared),
        }
    if isinstance(event, CompactionHeld):
        return {
            "type": "held",
            "steps": [step.step for step in event.steps],
            "cache_invalidated_tokens": sum(step.cache_invalidated_tokens or 0 for step in event.steps),
            "cache_expires_at": event.cache_expires_at,
            "tokens": event.tokens,
            "ceiling": event.ceiling,
        }
    if isinstance(event, Notice):
        return {"type": "notice", "kind": event.kind, "message": event.message}
    if isinstance(event, ErrorEvent):
        return {"type": "error", "kind": event.kind, "message": event.message}
    return None


def context_record(sample: Any, limit: int) -> dict[str, Any]:
    """The `context` record of one model call: every ContextSample field (usage null offline or when
    the call failed), its `tokens` (the API's prompt tokens, else the estimate) and the char limit."""
    from dataclasses import asdict

    return {"type": "context", **asdict(sample), "tokens": sample.tokens, "limit": limit}


def _dump(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=True, default=str)


def _write_line(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


async def run_headless(settings: Any, prompt: str, verbose: bool = False, output_format: str = "text") -> int:
    """One turn to completion; returns the exit code."""
    from core.agent import Agent
    from core.events import (
        CompactionHeld,
        CompactionStep,
        ContextSampled,
        ErrorEvent,
        Notice,
        PermissionRequested,
        ToolCallFinished,
        ToolCallStarted,
        TurnFinished,
    )
    from core.model.base import ModelError
    from core.sessions.listing import ResumeError
    from core.usage.timeline import describe_sample

    stream = output_format == "stream-json"
    limit = settings.compaction.context_char_limit
    records: list[dict[str, Any]] = []
    # failures printed on stderr as they happened (a failed reactive compaction): not printed again
    # when the turn ends with one of them as its error
    said: set[str] = set()

    def say_error(error: str) -> None:
        if error not in said:
            said.add(error)
            print_err(f"ctxtui: {error}")

    def emit(record: dict[str, Any]) -> None:
        if stream:
            _write_line(sys.stdout, _dump(record))
        elif output_format == "json":
            records.append(record)

    def finish(text: str, code: int, error: str | None, usage: dict[str, int | None] | None = None) -> int:
        if output_format == "text":
            if text or error is None:
                _write_line(sys.stdout, visible(text))
            if error is not None:
                say_error(error)
            return code
        result = {"type": "result", "text": text, "exit_code": code, "error": error, "usage": usage or {}}
        if error is not None:
            say_error(error)
        if stream:
            emit(result)
        else:
            _write_line(sys.stdout, _dump({**result, "events": records}))
        return code

    try:
        agent = Agent.from_settings(settings, allow_all=False)  # headless answers each request below
    except ModelError as error:
        emit({"type": "error", "kind": error.kind, "message": str(error)})
        return finish("", EXIT_MODEL_ERROR, str(error))
    except ResumeError as error:  # a usage error: nothing on stdout, one line on stderr
        print_err(f"ctxtui: error: {error}")
        return EXIT_USAGE
    final_text = ""
    error_text: str | None = None
    usage: dict[str, int | None] = {}  # a figure the API gave as no count is null (unknown)
    try:
        async for event in agent.run_turn(prompt):
            if isinstance(event, PermissionRequested):
                answer = "once" if settings.yes else "deny"
                event.reply.set_result(answer)
                emit({"type": "permission", "id": event.tool_use_id, "tool": event.tool, "answer": answer})
                if not settings.yes:
                    print_err(f"ctxtui: {event.tool} denied: headless mode runs it only with --yes")
                continue
            if isinstance(event, ContextSampled):
                emit(context_record(event.sample, limit))
                if verbose:
                    print_err(describe_sample(event.sample))
                continue
            if isinstance(event, TurnFinished):
                final_text = event.text
                error_text = event.error or error_text
                usage = dict(event.usage)
                continue
            record = event_record(event)
            if record is not None:
                emit(record)
            if isinstance(event, ErrorEvent):
                if event.kind == "compaction":
                    say_error(event.message)
                else:
                    error_text = event.message
            elif isinstance(event, Notice) and (verbose or event.kind in ("session", "warning")):
                print_err(f"ctxtui: {event.message}")
            elif output_format == "text" and isinstance(event, CompactionStep | CompactionHeld):
                print_err(event.describe())
                if verbose and isinstance(event, CompactionStep) and event.cost_line():
                    print_err(f"cache: {event.cost_line()}")
            elif verbose and isinstance(event, ToolCallStarted):
                print_err(f"tool {event.name} {event.input}")
            elif verbose and isinstance(event, ToolCallFinished):
                status = "error" if event.is_error else "ok"
                print_err(f"tool {event.name} {status}, {event.output_chars:,} chars, {event.duration:.2f}s")
    finally:
        await agent.aclose()
        if failure := agent.view.session_failure():
            print_err(f"ctxtui: this session was not saved completely: {failure}")
    code = EXIT_MODEL_ERROR if error_text is not None else EXIT_OK
    return finish(final_text, code, error_text, usage)


def read_prompt(value: str, stdin: TextIO) -> str:
    """`-p -` reads the prompt from stdin (no argument-length limit), less the one newline that ends its
    last line (what `echo ... |` and editors add); anything else is the prompt as given."""
    if value != "-":
        return value
    text = stdin.read()
    return text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text
