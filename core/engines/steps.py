"""What the API reports it did to a request, as `CompactionStep` events with ledger entries.

`applied_edits` says how many tool uses or thinking turns the server cleared and how many tokens
went; which ones is read back with the documented policy (policies.py): the oldest first. The
local history keeps everything (the server edits only what it shows the model), so an entry's
`path` is the session log, which holds the whole text. A `compaction` block in a reply is a step
too: the messages before it are what the model no longer sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.engines.policies import clear_candidates, result_of, seen_from, thinking_turns
from core.events import CompactionStep
from core.facts.entries import result_label, run_label
from core.history.blocks import describe, failed
from core.history.sizes import dumps
from core.model.edits import CLEAR_THINKING, CLEAR_TOOL_USES, COMPACT, ServerEngine
from core.text import plural
from core.values.records import LedgerEntry

Message = dict[str, Any]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _share(tokens: int, chars: Sequence[int]) -> list[int]:
    """`tokens` split in proportion to `chars` (the API reports only the total)."""
    total = sum(chars)
    return [round(tokens * size / total) if total else 0 for size in chars]


def applied_edits(context_management: Any) -> list[dict[str, Any]]:
    """The response's `context_management.applied_edits` as plain dicts (untrusted: bad items skipped)."""
    edits = context_management.get("applied_edits") if isinstance(context_management, dict) else None
    return (
        [edit for edit in edits if isinstance(edit, dict) and isinstance(edit.get("type"), str)]
        if isinstance(edits, list)
        else []
    )


def cleared_results(engine: ServerEngine, sent: Sequence[Message], count: int) -> list[tuple[int, int, str]]:
    """(message, block, tool_use_id) of the results the server cleared: the oldest `count` it may clear."""
    found = []
    for index, _, use in clear_candidates(sent, engine.clear_keep_tool_uses, engine.clear_exclude_tools)[
        :count
    ]:
        where = result_of(sent, str(use.get("id")), index)
        if where is not None:
            found.append((*where, str(use.get("id"))))
    return found


def clear_step(
    engine: ServerEngine,
    edit: dict[str, Any],
    sent: Sequence[Message],
    chars: int,
    session_file: str | None,
    known: set[str],
) -> CompactionStep:
    """The step of a clear_tool_uses edit; ledger entries only for results not cleared before (`known`)."""
    tokens = _count(edit.get("cleared_input_tokens"))
    results = cleared_results(engine, sent, _count(edit.get("cleared_tool_uses")))
    sizes = [len(dumps(sent[index]["content"][block].get("content", ""))) for index, block, _ in results]
    entries = tuple(
        LedgerEntry(
            f"server:{CLEAR_TOOL_USES}",
            0,
            "tool_result",
            result_label(sent, index, block),
            size,
            share,
            session_file,
            False,
            tool_use_id=tool_use_id,
        )
        for (index, block, tool_use_id), size, share in zip(
            results, sizes, _share(tokens, sizes), strict=True
        )
        if tool_use_id not in known
    )
    saved = sum(sizes)
    first = min(((index, block) for index, block, _ in results), default=None)
    return CompactionStep(
        "server:clear_tool_uses_20250919",
        chars,
        chars - saved,
        len({i for i, _, _ in results}),
        detail=f"the API cleared {plural(len(results), 'tool result')} "
        f"({tokens:,} tokens; {len(entries)} new)",
        changed_at=first,
        saved_tokens=tokens,
        ledger=entries,
        cleared=tuple(tool_use_id for _, _, tool_use_id in results),
    )


def thinking_step(
    engine: ServerEngine,
    edit: dict[str, Any],
    sent: Sequence[Message],
    chars: int,
    session_file: str | None,
    known: set[str],
) -> CompactionStep:
    """The step of a clear_thinking edit: the oldest assistant turns' thinking."""
    tokens = _count(edit.get("cleared_input_tokens"))
    turns = thinking_turns(sent)[: _count(edit.get("cleared_thinking_turns"))]
    sizes = [
        sum(
            len(dumps(block))
            for block in sent[index]["content"]
            if isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking")
        )
        for index in turns
    ]
    entries = tuple(
        LedgerEntry(
            f"server:{CLEAR_THINKING}",
            0,
            "thinking",
            f"thinking of message #{index}",
            size,
            share,
            session_file,
            False,
            span=(index, index + 1),
        )
        for index, size, share in zip(turns, sizes, _share(tokens, sizes), strict=True)
        if f"thinking:{index}" not in known
    )
    return CompactionStep(
        "server:clear_thinking_20251015",
        chars,
        chars - sum(sizes),
        len(turns),
        detail=f"the API cleared the thinking of {plural(len(turns), 'assistant turn')} ({tokens:,} tokens)",
        changed_at=(turns[0], 0) if turns else None,
        saved_tokens=tokens,
        ledger=entries,
    )


def compaction_step(
    block: dict[str, Any], sent: Sequence[Message], chars: int, session_file: str | None, iterations: Any
) -> CompactionStep:
    """The step of a compaction block in a reply: what the server summarised (the messages it read
    before this reply), or that it failed. `iterations`: the usage's per-iteration list (the
    compaction's own tokens)."""
    start = seen_from(sent)
    stop = len(sent)
    summary = 0 if failed(block) else len(dumps(block))
    entries: tuple[LedgerEntry, ...] = ()
    if not failed(block) and stop > start:
        size = sum(len(dumps(message)) for message in sent[start:stop])
        entries = (
            LedgerEntry(
                f"server:{COMPACT}",
                0,
                "messages",
                run_label(start, stop),
                size,
                None,
                session_file,
                False,
                span=(start, stop),
            ),
        )
    spent = (
        [item for item in iterations if isinstance(item, dict) and item.get("type") == "compaction"]
        if isinstance(iterations, list)
        else []
    )
    cost = (
        f"; the compaction read {sum(_count(i.get('input_tokens')) for i in spent):,} tokens" if spent else ""
    )
    after = chars if failed(block) else summary
    return CompactionStep(
        "server:compact_20260112",
        chars,
        after,
        0 if failed(block) else stop - start,
        detail=describe(block) + cost,
        changed_at=(start, 0),
        ledger=entries,
    )


def server_steps(
    engine: ServerEngine,
    context_management: Any,
    reply: Sequence[dict[str, Any]],
    sent: Sequence[Message],
    chars: int,
    session_file: str | None,
    known: set[str],
    iterations: Any = None,
) -> list[CompactionStep]:
    """Every step the API reports for one call (its applied edits in order, then each compaction block
    of the reply); `known` (tool_use ids and "thinking:K" already in the ledger) grows with them."""
    steps: list[CompactionStep] = []
    for edit in applied_edits(context_management):
        if edit["type"] == CLEAR_TOOL_USES:
            step = clear_step(engine, edit, sent, chars, session_file, known)
        elif edit["type"] == CLEAR_THINKING:
            step = thinking_step(engine, edit, sent, chars, session_file, known)
        else:
            continue
        known.update(
            entry.tool_use_id or f"thinking:{entry.span[0] if entry.span else ''}" for entry in step.ledger
        )
        steps.append(step)
    for block in reply:
        if isinstance(block, dict) and block.get("type") == "compaction":
            steps.append(compaction_step(block, sent, chars, session_file, iterations))
    return steps
