"""One conversation's state, in one place: what every part of the agent reads and changes.

`ConversationState` owns the history (through its `Conversation`, which records every change in the
session log), the ledger of what the steps took out, the pins, the model's notes, the compactions
undo can reverse, the turn flag, the timeline of model calls and the prompt cache's accounts. The
agent's parts (the keeper, the schedule, economics, the engine runner, the meter) each hold this state
and the services they use (the compactor, the model, the token counter), never another part: what one
part hands another goes through the agent, which calls them in order. A new or resumed session resets it here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from core.agent.conversation import Conversation
from core.compaction.notes import Notebook
from core.compaction.pins import Pins
from core.compaction.steering import Compaction
from core.facts.ledger import Ledger
from core.history.store import History
from core.tools.base import ToolOutput
from core.tools.note import edit_notes
from core.usage.cache import CacheTracker, Clock
from core.usage.prices import Price
from core.usage.timeline import Timeline
from core.values.notes import NotesChanged
from core.values.records import LedgerEntry

Message = dict[str, Any]


class ConversationState:
    """The state of one conversation (see the module docstring)."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        price: Price | None,
        offline: bool,
        ttl: str,
        auto_compact: bool = True,
        undo_depth: int = 20,
        pins: Pins | None = None,
        notebook: Notebook | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.conversation = conversation
        self.pins = pins if pins is not None else Pins()
        """What every compaction step keeps byte-exact (the compactor reads the same object)."""
        self.notebook = notebook if notebook is not None else Notebook()
        """The model's notes, which every compaction carries verbatim (the compactor reads this object)."""
        self.ledger = Ledger()
        """What every step and drop took out of the context (`Agent.ledger`)."""
        self.compactions: list[Compaction] = []
        """Every compaction applied to this history (the newest `undo_depth`), oldest first."""
        self.undo_depth = undo_depth
        self.auto_compact = auto_compact
        """False pauses the pipeline before each call; reactive_compact still guards an API refusal."""
        self.running = False
        """The turn flag: a turn (or a compaction the person asked for) is running."""
        self.price = price
        self.offline = offline
        self.ttl = ttl
        self.clock: Clock = clock or time.time
        self.timeline = Timeline(price, offline=offline, ttl=ttl)
        """One sample per model call, summary calls included."""
        self.tracker = CacheTracker(ttl=ttl)
        """What the last answered request left cached, until when, and the changes since."""
        self.tokens_ratio: float | None = None
        """The API's prompt tokens per estimated token, at the last call (scales the next estimate)."""
        self.last_input_tokens: int | None = None
        """The API's prompt tokens of the last reply (input, cache reads and writes); None offline."""

    # --- reading --------------------------------------------------------------------------------

    @property
    def history(self) -> History:
        return self.conversation.history

    @property
    def chars(self) -> int:
        return self.conversation.chars

    @property
    def request(self) -> str:
        return self.conversation.request

    @property
    def pinned(self) -> frozenset[str]:
        return self.pins.keys

    @property
    def notes(self) -> tuple[str, ...]:
        """The model's notes, numbered from 1 in this order as the model sees them."""
        return self.notebook.notes

    @property
    def call_number(self) -> int:
        """The number of the model call the next change is made before."""
        return len(self.timeline.samples) + 1

    @property
    def model_calls(self) -> int:
        """The session's model calls so far, summary calls not counted."""
        return sum(1 for sample in self.timeline.samples if sample.kind != "summary")

    # --- changing -------------------------------------------------------------------------------

    def set_pins(self, keys: frozenset[str]) -> None:
        """The pins become `keys` (recorded in the session log)."""
        self.pins.keys = keys
        self.conversation.record_pins(keys)

    def set_notes(self, notes: tuple[str, ...]) -> None:
        """The notes become `notes` (recorded in the session log)."""
        self.notebook.notes = notes
        self.conversation.record_notes(notes)

    def note(
        self, tool_use_id: str, tool_input: dict[str, Any], limit: int
    ) -> tuple[ToolOutput, NotesChanged | None]:
        """Apply one call of the note tool (core/tools/note.py): the result the model reads, and the
        event of the change (None when refused or nothing changed)."""
        edit = edit_notes(self.notes, tool_input, limit)
        if edit.change is None:
            return edit.output, None
        self.set_notes(edit.notes)
        return edit.output, NotesChanged(edit.notes, edit.change, edit.number, edit.text, limit, tool_use_id)

    def remember(self, compaction: Compaction) -> None:
        """Keep a compaction for undo; only the newest `undo_depth` are kept, so what left the history
        is not held forever (the archive keeps every byte of it on disk)."""
        self.compactions.append(compaction)
        del self.compactions[: max(0, len(self.compactions) - self.undo_depth)]

    def reset(self) -> None:
        """A new session: no pins, no notes, nothing to undo, an empty ledger, a new timeline (cost is
        per session), nothing known of any cache."""
        self.compactions.clear()
        self.pins.keys = frozenset()
        self.notebook.notes = ()
        self.ledger = Ledger()
        self.tracker.reset()
        self.timeline = Timeline(self.price, offline=self.offline, ttl=self.ttl)
        self.tokens_ratio = None
        self.last_input_tokens = None

    def take_over(
        self,
        records: Sequence[Compaction],
        pins: Sequence[str],
        ledger: Sequence[LedgerEntry] = (),
        notes: Sequence[str] = (),
    ) -> tuple[Compaction, ...]:
        """A resumed history's ledger and notes become this session's (recorded in the new session
        file), and of its undo records those that still lead to it; returns them. Pins are the
        keeper's (it checks each is still in the history)."""
        self.ledger = Ledger(ledger)
        if ledger:
            self.conversation.record_ledger(self.ledger.carried())
        if notes:
            self.set_notes(tuple(notes))
        usable: list[Compaction] = []
        following: Sequence[Message] = self.history
        for record in reversed(records):  # newest first: what each left must start what followed it
            if len(following) < len(record.after) or any(
                a != b for a, b in zip(following, record.after, strict=False)
            ):
                break
            usable.append(record)
            following = record.before
        self.compactions = usable[::-1][-self.undo_depth :] if self.undo_depth else []
        self.conversation.log_resumed(self.compactions)
        return tuple(self.compactions)


__all__ = ["ConversationState"]
