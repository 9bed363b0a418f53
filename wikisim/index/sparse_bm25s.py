"""bm25s: Lucene-style BM25 in pure Python (scipy sparse), the backend that needs no JVM.

Documents and queries go through `snippets.terms` (Snowball English, bm25s stop words),
so index, query and snippet agree on what a term is.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import bm25s
import numpy as np

from wikisim.errors import IndexNotBuiltError
from wikisim.index.passages import Passage, PassageStore
from wikisim.index.ranked import EXTRA_DEPTH, Ranked, RankedRetriever, top_k
from wikisim.index.snippets import terms

BM25_K1 = 0.9  # Anserini's defaults, so bm25s and Lucene rank alike
BM25_B = 0.4


def build_bm25s(passages: Iterable[Passage], out: Path) -> int:
    """Index passages (in row order) into `out`; returns how many were indexed."""
    corpus_tokens = [terms(p.contents) for p in passages]
    model = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B)
    model.index(corpus_tokens, show_progress=False)
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out), show_progress=False)
    return len(corpus_tokens)


class BM25sRetriever(RankedRetriever):
    name = "bm25s"

    def __init__(self, path: Path, passages: PassageStore, manifest_hash: str = "") -> None:
        if not (path / "params.index.json").is_file():
            raise IndexNotBuiltError(
                f"no bm25s index in {path}; rebuild with `wikisim build INPUT... --out {path.parent}`"
            )
        self.model = bm25s.BM25.load(str(path), mmap=True, show_progress=False)
        self.passages = passages
        self.manifest_hash = manifest_hash
        self._num_docs = int(self.model.scores["num_docs"])

    def query_ids(self, query: str) -> list[int]:
        vocab = self.model.vocab_dict
        return [vocab[t] for t in terms(query) if t in vocab]

    def ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        ids = [self.query_ids(q) for q in queries]
        asked = [i for i, q in enumerate(ids) if q]
        results: list[Ranked] = [[] for _ in queries]
        if not asked:
            return results
        docs, scores = self.model.retrieve(
            [ids[i] for i in asked], k=min(depth + EXTRA_DEPTH, self._num_docs),
            show_progress=False, n_threads=0,
        )
        docs, scores = np.asarray(docs), np.asarray(scores)
        found = self.passages.docids(np.unique(docs[scores > 0]).tolist())
        for j, i in enumerate(asked):
            pairs = [(found[int(r)], float(s)) for r, s in zip(docs[j], scores[j], strict=True) if s > 0]
            results[i] = top_k(pairs, depth)
        return results
