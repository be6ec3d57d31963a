"""Recall: the model (and the person) can search everything the session archived.

`index` keeps an SQLite FTS5 index of the archive's tool results, transcripts and summaries under
`.ctxtui/recall.sqlite`, following the archive's writes and rebuilt from its manifests; `query` makes
plain text a safe query; `extract` says what of each file is searched and at which line; `hits` the
ranked hits and the answer the model reads.
"""

from __future__ import annotations

from core.recall.hits import Hit, SearchResult
from core.recall.index import TOKENIZER, RecallIndex

__all__ = ["TOKENIZER", "Hit", "RecallIndex", "SearchResult"]
