"""The per-call timeline: one `ContextSample` (core/values/samples.py) per model call (what was sent,
the steps before it, its usage and cost), as the agent records it and `ctxtui -p -v` prints it.

Figures come from the API when online and are the tiktoken estimate offline, and each says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from core.text import one_line, visible
from core.usage.prices import Price, Usage
from core.values.samples import ContextSample

CLIENT_COMPACTION = "client compaction"
"""The step a sample names when the client compacted its history before this call (the proxy's calls)."""


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
    known = (
        sample.input_tokens,
        sample.cache_read_tokens,
        sample.cache_creation_tokens,
        sample.output_tokens,
    )
    if sample.prompt_tokens is not None or any(figure is not None for figure in known):
        total = f"{sample.prompt_tokens:,}" if sample.prompt_tokens is not None else "? (unknown)"
        parts.append(
            f"{total} tokens (input {_count(sample.input_tokens)}, "
            f"cache read {_count(sample.cache_read_tokens)}, cache write {_count(sample.cache_creation_tokens)})"
        )
        parts.append(f"output {_count(sample.output_tokens)}")
        if sample.thinking_tokens:
            parts.append(f"thinking {sample.thinking_tokens:,}")
    elif sample.estimated_tokens is not None:
        parts.append(f"~{sample.estimated_tokens:,} tokens (tiktoken estimate)")
    if sample.kind != "turn":
        parts.insert(1, sample.kind)
    if sample.cost is not None:
        cost = f"${sample.cost:.4f}"
        if sample.cost_parts is not None:
            split = sample.cost_parts
            cost += (
                f" (input ${split.input:.4f}, cache write ${split.cache_write:.4f}, "
                f"cache read ${split.cache_read:.4f}, output ${split.output:.4f})"
            )
        parts.append(cost)
    elif sample.offline:
        parts.append("no cost offline")
    if sample.cache_miss is not None:
        parts.append(f"cache miss: {sample.cache_miss.describe()}")
    elif sample.api_miss_reason not in (None, "none"):
        parts.append(f"API reports a cache miss ({sample.api_miss_reason}) where ctxtui saw none")
    if sample.held:
        parts.append(f"waited for the cache: {', '.join(sample.held)}")
    if sample.error:
        parts.append(f"failed: {visible(one_line(sample.error, 200))}")
    return " · ".join(parts)


def _count(figure: int | None) -> str:
    """A usage figure as the context line shows it ("?" when the API gave no count)."""
    return "?" if figure is None else f"{figure:,}"


@dataclass
class Timeline:
    """The agent's record of its model calls: `start` when a request goes out, `finish` after it.

    `note_step` collects the compaction steps between two calls; `note_before` keeps the history size
    before the first of them (what the call after them is compared with). Cache writes are priced at
    `ttl`'s price unless the usage splits them by TTL. A summary call is recorded whole by `summary`.
    """

    price: Price | None = None
    offline: bool = False
    ttl: str = "5m"
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

    def finish(self, usage: Mapping[str, int | None] | None, error: str | None = None) -> ContextSample:
        """The newest call ended: its usage (None when it failed) and cost."""
        sample = self.samples[-1]
        self._open = False
        done = self._priced(sample, usage, error)
        self.samples[-1] = done
        return done

    def _priced(
        self, sample: ContextSample, usage: Mapping[str, int | None] | None, error: str | None
    ) -> ContextSample:
        if usage is None or self.offline:
            return replace(sample, error=error)
        figures = Usage.from_figures(usage)
        # A figure the API gave as no count is unknown, and so is a cost that needs it.
        parts = self.price.parts(figures, self.ttl) if self.price is not None and figures.complete else None
        return replace(
            sample,
            input_tokens=figures.figure("input_tokens"),
            cache_read_tokens=figures.figure("cache_read_tokens"),
            cache_creation_tokens=figures.figure("cache_creation_tokens"),
            output_tokens=figures.figure("output_tokens"),
            thinking_tokens=figures.thinking_tokens,
            cost=parts.total if parts is not None else None,
            cost_parts=parts,
            cache_ttl=self.ttl,
            error=error,
        )

    def summary(
        self, usage: Mapping[str, int | None], chars: int, started_at: float | None = None
    ) -> ContextSample:
        """A summary call that ended (its prompt was `chars` characters): recorded and priced whole.
        The steps and size noted for the next turn call stay for it."""
        sample = ContextSample(
            call=len(self.samples) + 1,
            chars_before=chars,
            chars_after=chars,
            messages=1,
            offline=self.offline,
            kind="summary",
            started_at=started_at,
        )
        done = self._priced(sample, usage, None)
        self.samples.append(done)
        return done

    def amend(self, sample: ContextSample) -> ContextSample:
        """Replace the newest sample with `sample` (the same call, with more figures)."""
        self.samples[-1] = sample
        return sample

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
