"""Anserini's BM25 top k, without the stored document it reads for every hit.

pyserini's `LuceneSearcher.search` (Anserini's SimpleSearcher) decompresses each hit's
stored document (the raw passage) only to take its docid from it. At the hybrid's depth
of 100 that is a third of a query's CPU time. `TopK` runs the same search on the
same IndexSearcher: Anserini's query generator and analyzer, its BM25 similarity, its
sort (score, then docid). It reads the docids from the "id" doc values that Anserini
indexes for that sort, and rounds the scores as Anserini's ScoreTiesAdjusterReranker does.
The (docid, score) lists are pyserini's, value for value (tests/index/test_lucene_topk.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_ID, _CONTENTS = "id", "contents"  # Anserini's Constants.ID and Constants.CONTENTS
_TIE = np.float32(1e-4)  # ScoreTiesAdjusterReranker: scores within 1e-4f of the one before
_STEP = np.float32(1e-6)  # are lowered by 1e-6f per tie, in float arithmetic


def anserini_scores(raw: list[float]) -> list[float]:
    """Scores as Anserini 1.7.1 returns them: rounded to 1e-4 (in double, kept as float), and
    each score within 1e-4 of the one before lowered by 1e-6 per tie in a row, so that the
    scores alone give the order (score, then docid) the list was sorted in."""
    out = [np.float32(math.floor(s * 1e4 + 0.5) / 1e4) for s in raw]
    dup = 0
    for i in range(1, len(out)):
        if out[i - 1] - out[i] > _TIE:
            dup = 0
        else:
            dup += 1
            out[i] = out[i] - _STEP * np.float32(dup)
    return [float(s) for s in out]


def concurrent_searcher(searcher: Any, executor: Any) -> Any:
    """An IndexSearcher over `searcher`'s reader, with its similarity, whose queries run their
    segments as tasks of `executor` (a java.util.concurrent.Executor)."""
    import jnius

    out = jnius.autoclass("org.apache.lucene.search.IndexSearcher")(
        searcher.getIndexReader(), executor
    )
    out.setSimilarity(searcher.getSimilarity())
    return out


class TopK:
    """BM25 search over the IndexSearcher of a pyserini `LuceneSearcher`'s SimpleSearcher
    (after `set_bm25`, which makes it); docids from doc values, never from stored documents.
    With `threads` > 1 and an index of several segments, a query searches its segments on that
    many threads (Lucene's own concurrent search: same statistics, same sort, same list)."""

    def __init__(self, searcher: Any, analyzer: Any, threads: int = 1) -> None:
        import jnius

        auto = jnius.autoclass
        self._reader = searcher.getIndexReader()
        self.threads = min(threads, self._reader.leaves().size())
        if self.threads > 1:  # a ForkJoinPool's threads are daemons: they never hold the JVM up
            self._pool = auto("java.util.concurrent.ForkJoinPool")(self.threads)
            searcher = concurrent_searcher(searcher, self._pool)
        self._searcher = searcher
        self._analyzer = analyzer
        self._generator = auto("io.anserini.search.query.BagOfWordsQueryGenerator")()
        sort_field = auto("org.apache.lucene.search.SortField")
        string = auto("org.apache.lucene.search.SortField$Type").STRING_VAL
        self._sort = auto("org.apache.lucene.search.Sort")(
            sort_field.FIELD_SCORE, sort_field(_ID, string, False)
        )
        self._values = auto("org.apache.lucene.index.MultiDocValues")

    @classmethod
    def over(cls, simple: Any, threads: int = 1) -> TopK | None:
        """A TopK over a SimpleSearcher, or None where pyserini's own search must stay the one:
        an index Anserini does not sort by docid (Lucene 8: no "id" doc values), or an Anserini
        whose SimpleSearcher keeps its searcher elsewhere than 1.7.1's fields."""
        import jnius

        fields = jnius.autoclass("org.apache.commons.lang3.reflect.FieldUtils")
        try:
            lucene8 = bool(fields.readField(simple, "backwardsCompatibilityLucene8", True))
            searcher = fields.readField(simple, "searcher", True)
        except jnius.JavaException:
            return None
        if lucene8 or searcher is None:
            return None
        topk = cls(
            jnius.cast("org.apache.lucene.search.IndexSearcher", searcher),
            simple.get_analyzer(),
            threads,
        )
        return topk if topk._values.getBinaryValues(topk._reader, _ID) is not None else None

    def search(self, query: str, n: int) -> list[tuple[str, float]]:
        """The n best (docid, score) pairs, as pyserini's `LuceneSearcher.search(query, n)`."""
        built = self._generator.buildQuery(_CONTENTS, self._analyzer, query)
        top = self._searcher.search(built, n, self._sort, True)
        found = [(d.doc, d.score) for d in top.scoreDocs]
        ids = self._values.getBinaryValues(self._reader, _ID)  # a forward-only iterator
        docid = {}
        for doc in sorted(doc for doc, _ in found):
            ids.advanceExact(doc)
            docid[doc] = ids.binaryValue().utf8ToString()
        scores = anserini_scores([score for _, score in found])
        return [(docid[doc], score) for (doc, _), score in zip(found, scores, strict=True)]
