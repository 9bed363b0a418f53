"""Title-aware sparse scoring: a passage whose page title names query terms ranks higher.

Multi-hop questions name their entities ("... the association which published Journal
of Psychotherapy Integration?"), and the page about an entity is the one to find. The
body index sees the title once among 150 words; this adds, for each query term in the
passage's title, `weight` times that term's BM25 idf (Lucene's formula, from the body
index's document frequencies): a title field on top of the body, BM25F-style, computed
over the candidates the body ranking already found, so no second index is built.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from wikisim.index.passages import PassageStore
from wikisim.index.ranked import Ranked, top_k
from wikisim.index.snippets import terms
from wikisim.index.sparse_bm25s import BM25sRetriever


@lru_cache(maxsize=65536)
def title_terms(title: str) -> tuple[str, ...]:
    """The title's distinct terms, sorted: the bonus is summed in one order in every process."""
    return tuple(sorted(set(terms(title))))


class TitleBooster:
    """Re-scores a bm25s ranking with the title field; `idf` comes from the bm25s model's postings."""

    def __init__(self, sparse: BM25sRetriever) -> None:
        self.vocab: dict[str, int] = sparse.model.vocab_dict
        self.indptr = np.asarray(sparse.model.scores["indptr"])
        self.num_docs = int(sparse.model.scores["num_docs"])
        self.passages: PassageStore = sparse.passages

    def idf(self, term: str) -> float:
        t = self.vocab.get(term)
        if t is None:
            return 0.0
        df = int(self.indptr[t + 1] - self.indptr[t])
        return math.log(1.0 + (self.num_docs - df + 0.5) / (df + 0.5))

    def boost(self, query: str, ranked: Ranked, weight: float) -> Ranked:
        """`ranked` re-scored as score + weight * sum of idf(t) over query terms t in the title."""
        if weight == 0.0 or not ranked:
            return ranked
        weights = {t: weight * self.idf(t) for t in set(terms(query))}
        found = self.passages.titles([d for d, _ in ranked])
        out = []
        for docid, score in ranked:
            title = found.get(docid)
            bonus = (
                sum(weights.get(t, 0.0) for t in title_terms(title)) if title is not None else 0.0
            )
            out.append((docid, score + bonus))
        return top_k(out, len(out))
