"""A small in-memory BM25 for ranking a handful of documents: one page's passages for `visit`,
the corpus's citations for `scholar`. Pure Python, deterministic, built in milliseconds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from wikisim.index.snippets import terms


class SmallBM25:
    """Lucene-style BM25 (k1=0.9, b=0.4) over pre-analysed documents."""

    def __init__(self, texts: Sequence[str], k1: float = 0.9, b: float = 0.4) -> None:
        self.k1, self.b = k1, b
        self._docs = [Counter(terms(t)) for t in texts]
        self._lens = [sum(d.values()) for d in self._docs]
        self._avg = (sum(self._lens) / len(self._lens)) if self._lens else 0.0
        df: Counter[str] = Counter()
        for d in self._docs:
            df.update(d.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def __len__(self) -> int:
        return len(self._docs)

    def scores(self, query: str) -> list[float]:
        q = [t for t in dict.fromkeys(terms(query)) if t in self._idf]
        out = []
        for doc, length in zip(self._docs, self._lens, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self._avg) if self._avg else self.k1
            out.append(
                sum(self._idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in q if t in doc)
            )
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(document index, score) of the best `k` documents with a positive score; ties by index."""
        ranked = sorted(
            ((i, s) for i, s in enumerate(self.scores(query)) if s > 0), key=lambda x: (-x[1], x[0])
        )
        return ranked[:k]
