"""The part every passage backend shares: rank docids, then dress the top k as Hits.

Backends return (docid, score) lists from `ranked`; hybrid fuses those lists before
any snippet is made, and snippets are made only for the k hits returned.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from wikisim.errors import IndexNotBuiltError
from wikisim.index.base import Hit, Retriever
from wikisim.index.passages import PassageStore
from wikisim.index.snippets import snippets

EXTRA_DEPTH = 10  # fetch past the cut, so ties there are broken by docid, not by backend order

Ranked = list[tuple[str, float]]


def top_k(found: Sequence[tuple[str, float]], k: int) -> Ranked:
    """The k best (docid, score) pairs, best first, ties by docid."""
    return sorted(found, key=lambda ds: (-ds[1], ds[0]))[:k]


class RankedRetriever(Retriever):
    passages: PassageStore | None

    @abstractmethod
    def ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        """Up to `depth` (docid, score) pairs per query, best first, ties by docid."""

    def _retrieve(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [self.hits(q, r) for q, r in zip(queries, self.ranked(queries, k), strict=True)]

    def hits(self, query: str, ranked: Ranked) -> list[Hit]:
        if self.passages is None:
            raise IndexNotBuiltError(f"{self.name} retriever has no passage store to make hits from")
        found = self.passages.by_docids([d for d, _ in ranked])
        kept = [(d, s, p) for d, s in ranked if (p := found.get(d)) is not None]
        made = snippets([p.text for _, _, p in kept], query)
        return [Hit(d, p.title, p.url, text, s) for (d, s, p), text in zip(kept, made, strict=True)]
