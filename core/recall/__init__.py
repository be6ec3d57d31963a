"""Recall: the model (and the person) can search everything the session archived.

`index` keeps an SQLite FTS5 index of the archive's tool results, transcripts and summaries under
`.ctxtui/recall.sqlite`, following the archive's writes and rebuilt from its manifests; `query` makes
plain text a safe query; `extract` says what of each file is searched and at which line; `hits` the
ranked hits and the answer the model reads. The names below are imported on first use
(core/lazy.py), so a view that shows hits does not load the index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.recall.hits import Hit, SearchResult
    from core.recall.index import TOKENIZER, RecallIndex

__getattr__ = lazy_exports(
    __name__,
    {
        "Hit": "core.recall.hits",
        "SearchResult": "core.recall.hits",
        "RecallIndex": "core.recall.index",
        "TOKENIZER": "core.recall.index",
    },
)

__all__ = ["TOKENIZER", "Hit", "RecallIndex", "SearchResult"]
