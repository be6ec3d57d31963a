"""`ctxtui search QUERY`: search what a workdir's sessions archived, from the shell (core/recall/).

The same index and ranking as the model's search_context tool: the archived tool results, transcripts
and summaries of `--workdir` (default: the current directory) that hold QUERY, plain text, best first.
A table for people, or `{"hits": [{"path", "line", "snippet", "score"}]}` with `--output-format json`;
notes (words left out, a query cut) on stderr. Exit 0 with hits or none; 2 with one line for bad input
(no such workdir, nothing to search for in the query). A workdir with nothing archived is answered
without creating anything in it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.text import visible

EXIT_OK, EXIT_USAGE = 0, 2


def add_search_parser(commands: Any) -> None:
    """The `search` sub-command's flags."""
    search = commands.add_parser(
        "search",
        help="search what this workdir's sessions archived (tool results, transcripts, summaries)",
        description="Search the archive of --workdir as the model's search_context tool does: plain "
        "text (every word must appear; quotes, *, NEAR, - and the like are searched as text), the best "
        "hits first, each with its archive path, line, snippet and score.",
    )
    search.add_argument("query", help="the text to search for")
    search.add_argument(
        "--workdir", type=Path, default=None, help="the workspace (default: the current directory)"
    )
    search.add_argument(
        "--output-format",
        choices=("text", "json"),
        default="text",
        help='text (a table, default) or json ({"hits": [{"path", "line", "snippet", "score"}]})',
    )
    search.add_argument("--limit", type=int, default=5, help="how many hits, 1 to 20 (default 5)")


def run_search(args: argparse.Namespace) -> int:
    """Search and print; the exit status."""
    from core.archive import Archive
    from core.recall import RecallIndex
    from core.recall.index import MAX_LIMIT

    workdir: Path = args.workdir if args.workdir is not None else Path.cwd()
    if not workdir.is_dir():
        return _usage(f"--workdir {visible(str(workdir))} is not a directory")
    if not 1 <= args.limit <= MAX_LIMIT:
        return _usage(f"--limit must be from 1 to {MAX_LIMIT}, got {args.limit}")
    index = RecallIndex(Archive(workdir))
    try:
        result = index.search_now(args.query, args.limit)
    finally:
        index.close()
    if result.problem is not None:
        return _usage(result.problem)
    for note in (*result.query.notes, *result.notes):
        print(f"ctxtui search: note: {visible(note)}", file=sys.stderr)
    if args.output_format == "json":
        print(json.dumps({"hits": [hit.record() for hit in result.hits]}, ensure_ascii=False))
    else:
        print(table(result))
    return EXIT_OK


def table(result: Any) -> str:
    """The hits as a table for people, or one line when there are none."""
    if not result.hits:
        return result.text()
    places = [visible(f"{hit.path}:{hit.line}") for hit in result.hits]
    width = max(len(place) for place in places)
    lines = [f"{'score':>8}  {'path:line':<{width}}  snippet"]
    for hit, place in zip(result.hits, places, strict=True):
        lines.append(f"{hit.score:>8.2f}  {place:<{width}}  {hit.snippet}")
    return "\n".join(lines)


def _usage(message: str) -> int:
    print(f"ctxtui search: error: {visible(message)}", file=sys.stderr)
    return EXIT_USAGE
