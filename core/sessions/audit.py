"""`ctxtui inspect FILE --audit`: what a client's compaction did wrong, from any conversation ctxtui reads.

Findings (DESIGN.md, "Any agent, any wire format"):
- `did_not_shrink`: the request after a compaction is not smaller than the one before it;
- `loop`: 3 or more compactions within 5 calls;
- `early`: it compacted below half of the model's real window (the window from ctxtui's table);
- `lost_instructions`: a constraint of the person's (the ledger issue's rule, core/facts/extract.py)
  visible in the request before and gone from the request after.

How a compaction is seen depends on the file:
- a ctxtui session: its samples (`ContextSampled` events) name the steps before each call; a summary
  step (compact_history, reactive_compact, compact, a server compaction) is a compaction; sizes are
  the sample's chars before and after, tokens the call before's usage; a constraint the session's
  fact check finds not visible now is reported at the last compaction;
- a Claude Code session: each `compact_boundary` (its `compactMetadata.preTokens` is the size it
  started from); the request before is everything since the previous boundary, the request after the
  summary and what came before the next call;
- a `ctxtui proxy` recording (a file, or a folder's conversation): a request whose history is no
  longer an extension of the previous one (messages compared by content) and that holds a compaction
  summary or a server compaction block the previous one did not; sizes from the calls' usage when
  recorded, else characters;
- a trajectory, a transcript or a list of messages: one growing history, in which no compaction can be
  told apart (the readers keep every item as the model first read it): no finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.client_markers import is_compaction_summary
from core.facts.extract import constraints, person_texts
from core.history import estimate_chars
from core.sessions.inspection import Inspected
from core.text import plural

Message = dict[str, Any]
SUMMARY_STEPS = frozenset({"compact_history", "reactive_compact", "compact", "server:compact_20260112"})
LOOP_COUNT = 3
LOOP_CALLS = 5
CHARS_PER_TOKEN = 4  # a rough figure, used only where no token count is recorded


@dataclass
class Compaction:
    """One compaction: the call after it, the requests around it and their sizes."""

    call: int  # the number (1-based) of the first call after it
    before_chars: int
    after_chars: int
    before_tokens: int | None = None  # the context it started from, in tokens, when recorded
    after_tokens: int | None = None
    before: Sequence[Message] | None = None  # the request before (None: not known)
    after: Sequence[Message] | None = None


@dataclass(frozen=True)
class Finding:
    kind: str
    call: int
    detail: str
    evidence: str = ""  # the calls and figures, for the text output
    sentence: str = ""  # one sentence a person can paste into a bug report


# --- the compactions of each kind of file -------------------------------------------------------


def _usage_tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    total = 0
    for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            total += value
    return total or None


def _assistant_count(messages: Sequence[Message]) -> int:
    return sum(1 for message in messages if message.get("role") == "assistant")


def _until_assistant(messages: Sequence[Message]) -> list[Message]:
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            return list(messages[:index])
    return list(messages)


def claude_code_compactions(inspected: Inspected) -> tuple[list[Compaction], str | None]:
    """Each compact boundary of a Claude Code session (its preTokens read from the boundary records),
    and the model of its last main-chain call."""
    from core.sessions.claude_code import is_boundary, read_records

    records, _ = read_records(inspected.path)
    pre_tokens = []
    model: str | None = None
    for record in records:
        message = record.get("message")
        if record.get("type") == "assistant" and not record.get("isSidechain") and isinstance(message, dict):
            name = message.get("model")
            model = name if isinstance(name, str) and name and not name.startswith("<") else model
        if is_boundary(record) and not record.get("isSidechain"):
            meta = record.get("compactMetadata")
            value = meta.get("preTokens") if isinstance(meta, dict) else None
            pre_tokens.append(value if isinstance(value, int) and value > 0 else None)
    segments: list[list[Message]] = []
    start = 0
    for cut in inspected.cuts:
        segments.append(inspected.archived[start:cut])
        start = cut
    segments.append(inspected.messages)
    found: list[Compaction] = []
    calls_so_far = 0
    for number in range(1, len(segments)):
        before, following = segments[number - 1], segments[number]
        calls_so_far += _assistant_count(before)
        after = _until_assistant(following)
        found.append(
            Compaction(
                call=calls_so_far + 1,
                before_chars=estimate_chars(before),
                after_chars=estimate_chars(after),
                before_tokens=pre_tokens[number - 1] if number - 1 < len(pre_tokens) else None,
                before=before,
                after=after,
            )
        )
    return found, model


def _has_new_summary(previous: Sequence[Any], messages: Sequence[Any]) -> bool:
    """`messages` holds a compaction summary or a server compaction block that `previous` did not."""
    from core.client_markers import find_client_markers

    def summaries(history: Sequence[Any]) -> set[str]:
        from core.sessions.proxy_folder import content_key

        return {
            content_key(history[int(found.where.split(".")[1])])
            for found in find_client_markers(history)
            if found.marker.kind in ("compaction_summary", "server_compaction")
        }

    return bool(summaries(messages) - summaries(previous))


class CompactionWatch:
    """The compactions of one conversation's requests, read one request at a time, oldest first: a
    proxy recording, or the proxy's live view as each call ends. A compaction is a request whose
    history is not an extension of the previous one (messages compared by content) and that brings a
    summary. A message seen before (a live client's requests share their objects) is keyed once."""

    def __init__(self) -> None:
        self.compactions: list[Compaction] = []
        self.calls = 0
        self._previous: list[Any] | None = None
        self._keys: list[str] = []
        self._tokens: int | None = None
        self._known: dict[int, tuple[Any, str]] = {}  # id -> (the message, kept alive; its key)

    def _key(self, message: Any) -> str:
        from core.sessions.proxy_folder import content_key

        known = self._known.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        key = content_key(message)
        self._known[id(message)] = (message, key)
        return key

    def add(self, messages: Any, tokens: int | None) -> Compaction | None:
        """The next request (`tokens`: its prompt tokens when known); its compaction, if it is one."""
        if not isinstance(messages, list) or not messages:
            return None
        self.calls += 1
        keys = [self._key(message) for message in messages]
        found = None
        previous, previous_keys = self._previous, self._keys
        if previous is not None:
            extends = len(keys) >= len(previous_keys) and keys[: len(previous_keys)] == previous_keys
            # a summary call re-sends the history and appends its instruction: an extension, not a compaction
            if not extends and (is_compaction_summary(messages[0]) or _has_new_summary(previous, messages)):
                found = Compaction(
                    call=self.calls,
                    before_chars=estimate_chars(previous),
                    after_chars=estimate_chars(messages),
                    before_tokens=self._tokens,
                    after_tokens=tokens,
                    before=previous,
                    after=messages,
                )
                self.compactions.append(found)
        kept = {id(message) for message in messages}
        self._known = {key: value for key, value in self._known.items() if key in kept}
        self._previous, self._keys, self._tokens = messages, keys, tokens
        return found


def proxy_compactions(inspected: Inspected) -> list[Compaction]:
    """A request whose history is not an extension of the previous one and that brings a summary."""
    from core.sessions.proxy_folder import request_of

    watch = CompactionWatch()
    for exchange in inspected.exchanges:
        watch.add(request_of(exchange).get("messages"), _usage_tokens((exchange.response or {}).get("usage")))
    return watch.compactions


def session_compactions(inspected: Inspected) -> tuple[list[Compaction], list[str]]:
    """A ctxtui session's summary steps, from its samples; and the constraints not visible now."""
    from core.sessions.economics import read_samples
    from core.sessions.facts_report import facts_of_file

    found: list[Compaction] = []
    last_tokens: int | None = None
    number = 0
    for sample in read_samples(inspected.path):
        if sample.get("kind") == "summary":
            continue
        number += 1
        steps = sample.get("steps") or ()
        if any(step in SUMMARY_STEPS for step in steps):
            found.append(
                Compaction(
                    call=number,
                    before_chars=int(sample.get("chars_before") or 0),
                    after_chars=int(sample.get("chars_after") or 0),
                    before_tokens=last_tokens,
                )
            )
        last_tokens = (
            sum(
                value or 0
                for value in (
                    sample.get("input_tokens"),
                    sample.get("cache_read_tokens"),
                    sample.get("cache_creation_tokens"),
                )
            )
            or sample.get("estimated_tokens")
            or last_tokens
        )
    lost = [fact.text for fact in facts_of_file(inspected) if fact.kind == "constraint" and not fact.visible]
    return found, lost


# --- the rules ----------------------------------------------------------------------------------


def _visible_text(messages: Sequence[Message]) -> str:
    """Every string of the request joined: a constraint is visible when its exact text is in it."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in ("type", "id", "tool_use_id", "signature", "cache_control"):
                    walk(item)

    walk(list(messages))
    return "\n".join(parts)


def _constraints_of(messages: Sequence[Message]) -> list[str]:
    found: dict[str, None] = {}
    for message in messages:
        for text in person_texts(message):
            found.update(dict.fromkeys(constraints(text)))
    return list(found)


def _size(tokens: int | None, chars: int) -> str:
    return f"{tokens:,} tokens" if tokens is not None else f"{chars:,} chars"


def audit(inspected: Inspected, window: int | None = None) -> list[Finding]:
    """The findings of one conversation (`window`: the model's, when the caller knows it better)."""
    lost_now: list[str] = []
    model = inspected.model or (inspected.proxy or {}).get("model")
    if inspected.kind == "claude-code":
        compactions, model = claude_code_compactions(inspected)
    elif inspected.kind == "proxy":
        compactions = proxy_compactions(inspected)
    elif inspected.kind == "session":
        compactions, lost_now = session_compactions(inspected)
    else:
        compactions = []
    if window is None and isinstance(model, str) and model:
        from core.usage.prices import window_for

        window = window_for(model).tokens
    return findings(compactions, window, lost_now)


def findings(
    compactions: list[Compaction], window: int | None, lost_now: Sequence[str] = ()
) -> list[Finding]:
    """The four rules over a file's compactions, in call order."""
    found: list[Finding] = []
    for compaction in compactions:
        call = compaction.call
        both_tokens = compaction.before_tokens is not None and compaction.after_tokens is not None
        before_size = compaction.before_tokens if both_tokens else compaction.before_chars
        after_size = compaction.after_tokens if both_tokens else compaction.after_chars
        if (
            before_size is not None
            and after_size is not None
            and after_size >= before_size
            and before_size > 0
        ):
            unit = "tokens" if both_tokens else "chars"
            found.append(
                Finding(
                    "did_not_shrink",
                    call,
                    f"the request after the compaction before call {call} is {after_size:,} {unit}, "
                    f"the one before it {before_size:,}",
                    f"calls {call - 1} -> {call}: {before_size:,} -> {after_size:,} {unit}",
                    f"Compaction before call {call} did not reduce the context: the request after it was "
                    f"{after_size:,} {unit}, the one before {before_size:,} {unit}.",
                )
            )
        if window:
            tokens = compaction.before_tokens
            estimated = tokens is None
            if tokens is None:
                tokens = compaction.before_chars // CHARS_PER_TOKEN
            if tokens < window // 2:
                about = "about " if estimated else ""
                found.append(
                    Finding(
                        "early",
                        call,
                        f"compacted at {about}{tokens:,} tokens, {100 * tokens / window:.0f}% of the "
                        f"model's {window:,}-token window",
                        f"call {call - 1}: {about}{tokens:,} of {window:,} tokens"
                        + (" (chars / 4)" if estimated else ""),
                        f"The client compacted before call {call} at {about}{tokens:,} tokens, under half "
                        f"of the model's {window:,}-token context window.",
                    )
                )
        if compaction.before is not None and compaction.after is not None:
            before_text = _visible_text(compaction.before)
            after_text = _visible_text(compaction.after)
            gone = [
                text
                for text in _constraints_of(compaction.before)
                if text in before_text and text not in after_text
            ]
            if gone:
                quoted = "; ".join(f'"{text}"' for text in gone[:3]) + (
                    f" and {len(gone) - 3} more" if len(gone) > 3 else ""
                )
                found.append(
                    Finding(
                        "lost_instructions",
                        call,
                        f"{len(gone)} constraint(s) of the person visible before the compaction and gone "
                        f"after: {quoted}",
                        f"visible in call {call - 1}, absent from call {call}",
                        f"After the compaction before call {call} the model no longer sees the instruction "
                        f"{quoted}, which it saw in call {call - 1}.",
                    )
                )
    if lost_now and compactions:
        last = compactions[-1].call
        quoted = "; ".join(f'"{text}"' for text in lost_now[:3]) + (
            f" and {len(lost_now) - 3} more" if len(lost_now) > 3 else ""
        )
        found.append(
            Finding(
                "lost_instructions",
                last,
                f"{len(lost_now)} constraint(s) of the person no longer visible after the compactions: {quoted}",
                f"not in the history after call {last}",
                f"After compaction the model no longer sees the instruction {quoted}.",
            )
        )
    calls = [compaction.call for compaction in compactions]
    index = 0
    while index + LOOP_COUNT - 1 < len(calls):
        if calls[index + LOOP_COUNT - 1] - calls[index] < LOOP_CALLS:
            end = index + LOOP_COUNT - 1
            while end + 1 < len(calls) and calls[end + 1] - calls[end - LOOP_COUNT + 2] < LOOP_CALLS:
                end += 1
            cluster = calls[index : end + 1]
            listed = ", ".join(str(call) for call in cluster)
            span = plural(cluster[-1] - cluster[0] + 1, "call")
            found.append(
                Finding(
                    "loop",
                    cluster[LOOP_COUNT - 1],
                    f"{plural(len(cluster), 'compaction')} within {span} (before calls {listed})",
                    f"compactions before calls {listed}",
                    f"The client compacted {plural(len(cluster), 'time')} within {span} "
                    f"(before calls {listed}), summarising again before it had anything new to summarise.",
                )
            )
            index = end + 1
        else:
            index += 1
    found.sort(key=lambda finding: (finding.call, finding.kind))
    return found


def audit_json(found: Sequence[Finding]) -> dict[str, Any]:
    return {"findings": [{"kind": item.kind, "call": item.call, "detail": item.detail} for item in found]}


def audit_text(path: str, found: Sequence[Finding]) -> str:
    """One line per finding: kind, call, the evidence, and the sentence for a bug report."""
    if not found:
        return f"{path}: no compaction finding\n"
    lines = [f"{path}: {len(found)} finding(s)"]
    for item in found:
        lines.append(f"  {item.kind:<17} call {item.call:>4}  {item.evidence}  {item.sentence}")
    return "\n".join(lines) + "\n"
