"""`wikisim search --index DIR QUERY...`: a readable table, or one JSON object per query."""

from __future__ import annotations

import argparse
import json
import shutil
import textwrap
from dataclasses import asdict

from wikisim.errors import ConfigError
from wikisim.index.base import DEFAULT_RETRIEVER, Hit
from wikisim.index.layout import BACKENDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "queries", nargs="+", metavar="QUERY", help="one or more queries (quote each)"
    )
    parser.add_argument(
        "--index", required=True, help="a built index directory (or a bare Lucene index)"
    )
    parser.add_argument(
        "--retriever",
        default=None,
        help=f"one of {', '.join(BACKENDS)} (default: {DEFAULT_RETRIEVER}; on an index built "
        "without dense, bm25s, or lucene for a bare Lucene index)",
    )
    parser.add_argument("-k", type=int, default=10, help="hits per query (default 10)")
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per query, one per line"
    )


def table(query: str, hits: list[Hit], width: int) -> str:
    lines = [f"query: {query}", f"{'#':>3}  {'score':>8}  {'docid':<12} title"]
    if not hits:
        lines.append("     (no hits)")
    for i, h in enumerate(hits, start=1):
        lines.append(f"{i:>3}  {h.score:>8.3f}  {h.docid:<12} {h.title}")
        lines += textwrap.wrap(
            h.snippet,
            width=max(40, width - 27),
            initial_indent=" " * 27,
            subsequent_indent=" " * 27,
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from wikisim.index.layout import open_index

    queries = [q.strip() for q in args.queries]
    for i, q in enumerate(queries):
        if not q:
            raise ConfigError(
                f'query {i + 1} is empty; pass non-empty text, e.g. wikisim search --index DIR "who wrote Hamlet"'
            )
    if args.retriever is not None and args.retriever not in BACKENDS:
        raise ConfigError(
            f"unknown retriever {args.retriever!r}; choose one of {', '.join(BACKENDS)}"
        )
    index = open_index(args.index)
    retriever = args.retriever or next(
        b for b in (DEFAULT_RETRIEVER, "bm25s", "lucene") if b in index.backends
    )
    results = index.retriever(retriever).search(queries, k=args.k)
    width = shutil.get_terminal_size((100, 20)).columns
    for query, hits in zip(queries, results, strict=True):
        if args.json:
            print(
                json.dumps({"query": query, "hits": [asdict(h) for h in hits]}, ensure_ascii=False)
            )
        else:
            print(table(query, hits, width) + "\n")
    return 0
