"""`wikisim search --index DIR QUERY...`: a readable table, or one JSON object per query."""

from __future__ import annotations

import argparse
import json
import shutil
import textwrap
from dataclasses import asdict, dataclass

from wikisim.errors import ConfigError
from wikisim.flags import add_config_arguments, config_from_args, option
from wikisim.index.base import DEFAULT_RETRIEVER, Hit, RetrieverName


@dataclass(frozen=True)
class SearchOptions:
    """What `wikisim search` is asked for (every field a flag and a YAML key)."""

    queries: tuple[str, ...] = option(
        (), "one or more queries (quote each)", positional=True, required=True
    )
    index: str = option("", "a built index directory (or a bare Lucene index)", required=True)
    retriever: RetrieverName | None = option(
        None,
        f"None: {DEFAULT_RETRIEVER}; on an index built without dense, bm25s (lucene for a bare "
        "Lucene index)",
    )
    k: int = option(10, "hits per query", short="-k")
    json: bool = option(False, "one JSON object per query, one per line")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, SearchOptions)


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

    o = config_from_args(SearchOptions, args)
    queries = [q.strip() for q in o.queries]
    for i, q in enumerate(queries):
        if not q:
            raise ConfigError(
                f'query {i + 1} is empty; pass non-empty text, e.g. wikisim search --index DIR "who wrote Hamlet"'
            )
    index = open_index(o.index)
    results = index.retriever(o.retriever or index.default_retriever).search(queries, k=o.k)
    width = shutil.get_terminal_size((100, 20)).columns
    for query, hits in zip(queries, results, strict=True):
        if o.json:
            print(
                json.dumps({"query": query, "hits": [asdict(h) for h in hits]}, ensure_ascii=False)
            )
        else:
            print(table(query, hits, width) + "\n")
    return 0
