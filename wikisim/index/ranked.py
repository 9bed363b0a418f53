"""The part every passage backend shares: rank docids, then dress the top k as Hits.

Backends return (docid, score) lists from `ranked`; hybrid fuses those lists before
any snippet is made, and snippets are made only for the k hits returned.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence

from wikisim.errors import IndexNotBuiltError
from wikisim.index.base import SNIPPET_CHARS, Hit, Retriever
from wikisim.index.passages import PassageStore
from wikisim.index.snippets import snippets

Ranked = list[tuple[str, float]]


def top_k(found: Sequence[tuple[str, float]], k: int) -> Ranked:
    """The k best (docid, score) pairs, best first, ties by docid."""
    return sorted(found, key=lambda ds: (-ds[1], ds[0]))[:k]


def cut_at(fetch: Callable[[int], Ranked], depth: int) -> Ranked:
    """The `depth` best of a backend's ranking, ties at the cut broken by docid, not backend order.

    `fetch(n)` gives the backend's n best (docid, score) pairs, best first. One pair past
    the cut is fetched; only while the last one fetched still ties with the cut is the
    fetch repeated deeper, so the usual query costs depth + 1 and a tie costs what it must.
    """
    n = depth + 1
    while True:
        found = fetch(n)
        if len(found) < n or found[depth - 1][1] > found[-1][1]:
            return top_k(found, depth)
        n *= 2


class RankedRetriever(Retriever):
    passages: PassageStore | None

    @abstractmethod
    def ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        """Up to `depth` (docid, score) pairs per query, best first, ties by docid."""

    def _retrieve(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [self.hits(q, r) for q, r in zip(queries, self.ranked(queries, k), strict=True)]

    def hits(self, query: str, ranked: Ranked, max_chars: int = SNIPPET_CHARS) -> list[Hit]:
        """The ranked docids as Hits, each with a snippet of at most `max_chars` characters."""
        if self.passages is None:
            raise IndexNotBuiltError(
                f"{self.name} retriever has no passage store to make hits from"
            )
        found = self.passages.by_docids([d for d, _ in ranked])
        kept = [(d, s, p) for d, s in ranked if (p := found.get(d)) is not None]
        made = snippets([p.text for _, _, p in kept], query, max_chars)
        return [Hit(d, p.title, p.url, text, s) for (d, s, p), text in zip(kept, made, strict=True)]
