"""The per-call timeline: one `ContextSample` per model call (what was sent, the steps before it,
its usage and cost), as the agent records it and `ctxtui -p -v` prints it.

Figures come from the API when online and are the tiktoken estimate offline, and each says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from core.text import one_line, visible
from core.usage.prices import Price, Usage

CountSource = Literal["api", "estimate"]


@dataclass(frozen=True)
class TokenCount:
    """The token size of the next request: exact from `count_tokens`, or the tiktoken estimate.

    `reason` says why an estimate stands in ("offline", "rate limited", the error) so the view can
    label it.
    """

    tokens: int
    source: CountSource
    reason: str = ""

    @property
    def exact(self) -> bool:
        return self.source == "api"

    @property
    def label(self) -> str:
        if self.exact:
            return "exact (count_tokens)"
        return f"estimated (tiktoken{', ' + self.reason if self.reason else ''})"


@dataclass(frozen=True)
class ContextSample:
    """One model call: what was sent (chars, tokens), the steps that ran before it, its usage and cost.

    `chars_before` is the history before the compaction that led to this call, `chars_after` what was
    sent (`estimate_chars` of the request's messages). `steps` are the compaction steps since the
    previous call, oldest first, `saved` the characters each one removed. Usage figures are None
    until the reply arrives, and stay None offline or when the call failed (`error`).
    """

    call: int
    chars_before: int
    chars_after: int
    steps: tuple[str, ...] = ()
    saved: tuple[int, ...] = ()
    messages: int = 0
    estimated_tokens: int | None = None
    input_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    offline: bool = False
    error: str | None = None

    @property
    def prompt_tokens(self) -> int | None:
        """The tokens sent (input + cache read + cache write), from usage; None when unknown."""
        if self.input_tokens is None:
            return None
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_creation_tokens or 0)

    @property
    def tokens(self) -> int | None:
        """The best token figure of what was sent: the API's, else the estimate."""
        exact = self.prompt_tokens
        return exact if exact is not None else self.estimated_tokens


def describe_sample(sample: ContextSample) -> str:
    """The one-line context line of a call, as `ctxtui -p -v` prints it on stderr."""
    parts = [f"[call {sample.call}]"]
    if sample.chars_before != sample.chars_after:
        parts.append(f"{sample.chars_before:,} -> {sample.chars_after:,} chars")
    else:
        parts.append(f"{sample.chars_after:,} chars")
    if sample.steps:
        steps = ", ".join(
            f"{step} -{saved:,}" for step, saved in zip(sample.steps, sample.saved, strict=False)
        )
        parts.append(f"after {steps}")
    if sample.prompt_tokens is not None:
        parts.append(
            f"{sample.prompt_tokens:,} tokens (input {sample.input_tokens or 0:,}, "
            f"cache read {sample.cache_read_tokens or 0:,}, cache write {sample.cache_creation_tokens or 0:,})"
        )
        parts.append(f"output {sample.output_tokens or 0:,}")
    elif sample.estimated_tokens is not None:
        parts.append(f"~{sample.estimated_tokens:,} tokens (tiktoken estimate)")
    if sample.cost is not None:
        parts.append(f"${sample.cost:.4f}")
    elif sample.offline:
        parts.append("no cost offline")
    if sample.error:
        parts.append(f"failed: {visible(one_line(sample.error, 200))}")
    return " · ".join(parts)


@dataclass
class Timeline:
    """The agent's record of its model calls: `start` when a request goes out, `finish` after it.

    `note_step` collects the compaction steps between two calls; `note_before` keeps the history size
    before the first of them (what the call after them is compared with).
    """

    price: Price | None = None
    offline: bool = False
    samples: list[ContextSample] = field(default_factory=list)
    _steps: list[tuple[str, int]] = field(default_factory=list, init=False, repr=False)
    _before: int | None = field(default=None, init=False, repr=False)
    _open: bool = field(default=False, init=False, repr=False)

    def note_before(self, chars: int) -> None:
        """The history size before compaction; only the first since the last call counts."""
        if self._before is None:
            self._before = chars

    def note_step(self, step: str, saved: int) -> None:
        self._steps.append((step, saved))

    def start(self, chars: int, messages: int, estimated_tokens: int | None = None) -> ContextSample:
        """A request of `chars` characters (`messages` messages) goes out now."""
        steps = tuple(step for step, _ in self._steps)
        saved = tuple(amount for _, amount in self._steps)
        before = self._before if self._before is not None else chars
        self._steps, self._before = [], None
        sample = ContextSample(
            call=len(self.samples) + 1,
            chars_before=before,
            chars_after=chars,
            steps=steps,
            saved=saved,
            messages=messages,
            estimated_tokens=estimated_tokens,
            offline=self.offline,
        )
        self.samples.append(sample)
        self._open = True
        return sample

    def finish(self, usage: Mapping[str, Any] | None, error: str | None = None) -> ContextSample:
        """The newest call ended: its usage (None when it failed) and cost."""
        sample = self.samples[-1]
        self._open = False
        if usage is None or self.offline:
            done = replace(sample, error=error)
        else:
            figures = Usage.from_mapping(usage)
            done = replace(
                sample,
                input_tokens=figures.input_tokens,
                cache_read_tokens=figures.cache_read_tokens,
                cache_creation_tokens=figures.cache_creation_tokens,
                output_tokens=figures.output_tokens,
                cost=self.price.cost(figures) if self.price is not None else None,
                error=error,
            )
        self.samples[-1] = done
        return done

    def abandon(self, reason: str) -> ContextSample | None:
        """The newest call never ended (the turn was cancelled or closed): say so on its sample."""
        return self.finish(None, reason) if self._open else None

    @property
    def session_cost(self) -> float | None:
        """The cost of every priced call so far; None when nothing could be priced."""
        return session_cost(self.samples)


def session_cost(samples: Sequence[ContextSample]) -> float | None:
    """The summed cost of `samples` (None when none has a cost)."""
    costs = [sample.cost for sample in samples if sample.cost is not None]
    return sum(costs) if costs else None
