"""Lucene search without stored-document reads returns pyserini's own (docid, score) lists."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
from pathlib import Path

import numpy as np

from wikisim.index import layout
from wikisim.index.jvm import pyserini_module
from wikisim.index.lucene_topk import anserini_scores
from wikisim.index.passages import PassageStore
from wikisim.index.ranked import Ranked, cut_at
from wikisim.index.sparse_lucene import LUCENE_B, LUCENE_K1, LuceneRetriever, build_lucene
from wikisim.paths import QA_DIR

EDGE = ["the", "of the", "", "autism", "Zürich café", "who was born in 1946?", "a " * 200]


def _questions() -> list[str]:
    qa = json.loads((QA_DIR / "hotpotqa-train-100.json").read_text(encoding="utf-8"))
    qa += json.loads((QA_DIR / "musique-train-100.json").read_text(encoding="utf-8"))
    return [q["question"] for q in qa] + EDGE


def _pyserini(path: Path, queries: list[str], depth: int) -> list[Ranked]:
    """What LuceneRetriever.ranked returned before: pyserini's search, cut by `cut_at`."""
    searcher = pyserini_module("search.lucene").LuceneSearcher(str(path))
    searcher.set_bm25(LUCENE_K1, LUCENE_B)

    def fetch(query: str, n: int) -> Ranked:
        return [(h.docid, float(h.score)) for h in searcher.search(query, n)]

    return [cut_at(functools.partial(fetch, q), depth) for q in queries]


def test_same_rankings_and_scores_as_pyserini_on_the_sample(sample_index: Path) -> None:
    path = sample_index / "lucene"
    retriever = LuceneRetriever(path, PassageStore(sample_index / layout.PASSAGES))
    assert retriever._topk is not None  # the index sorts ties by docid: no stored documents read
    queries = _questions()
    for depth in (1, 10, 100):
        assert retriever.ranked(queries, depth) == _pyserini(path, queries, depth)


def test_ties_are_rounded_and_broken_as_anserini_does(sample_index: Path, tmp_path) -> None:
    """Three copies of each passage score alike: every list is runs of ties, cut inside them."""
    store = PassageStore(sample_index / layout.PASSAGES)
    passages = list(itertools.islice(store, 300))
    copies = [
        dataclasses.replace(p, docid=f"{k}{p.docid}") for k in ("", "x", "y") for p in passages
    ]
    build_lucene(copies, tmp_path / "lucene")
    retriever = LuceneRetriever(tmp_path / "lucene", None)
    assert retriever._topk is not None
    queries = [q for q in _questions() if retriever.ranked([q], 1)[0]][:60]
    assert len(queries) == 60
    for depth in (2, 7, 10, 31, 100):
        assert retriever.ranked(queries, depth) == _pyserini(tmp_path / "lucene", queries, depth)
    assert retriever.ranked(queries[:1], 100) != []


def test_anserini_score_rounding() -> None:
    """Anserini's ScoreTiesAdjusterReranker's own example: rounded to 1e-4, ties lowered 1e-6."""
    raw = [23.439316, 22.087432, 22.087432, 22.087430, 21.602508, 14.499449729919434]
    f = np.float32
    assert anserini_scores(raw) == [
        float(f(23.4393)),
        float(f(22.0874)),
        float(f(f(22.0874) - f(1e-6))),
        float(f(f(22.0874) - f(2e-6))),
        float(f(21.6025)),
        float(f(14.4994)),  # rounded in double: 144994.497..., not the float 144994.5
    ]
    assert anserini_scores([]) == []
