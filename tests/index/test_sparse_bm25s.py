"""The bm25s retriever scores and selects exactly as bm25s's own `retrieve` does."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wikisim.index import open_index
from wikisim.index.ranked import top_k
from wikisim.paths import QA_DIR


@pytest.fixture(scope="module")
def bm25(sample_index):
    return open_index(sample_index).retriever("bm25s")


def test_scores_and_top_rows_equal_bm25s_retrieve(bm25) -> None:
    questions = [
        q["question"] for q in json.loads((QA_DIR / "hotpotqa-train-100.json").read_text())
    ]
    questions += ["new new york", "autism autism autism symptoms"]  # repeated terms count each time
    for question in questions:
        ids = bm25.query_ids(question)
        assert np.array_equal(bm25.scores(ids), bm25.model.get_scores(ids))  # bit for bit
        docs, scores = bm25.model.retrieve([ids], k=40, show_progress=False, n_threads=0)
        expected = [
            (bm25.passages.by_rows([int(r)])[int(r)].docid, float(s))
            for r, s in zip(docs[0], scores[0], strict=True)
            if s > 0
        ]
        assert bm25.ranked([question], 10)[0] == top_k(expected, 10)


def test_several_queries_rank_as_one_at_a_time(bm25) -> None:
    queries = ["symptoms of autism", "zzxqj", "anarchism political philosophy"]
    assert bm25.ranked(queries, 5) == [bm25.ranked([q], 5)[0] for q in queries]
    assert bm25.ranked(queries, 5)[1] == []


def test_best_rows_are_the_top_scores_best_first() -> None:
    from wikisim.index.sparse_bm25s import best_rows

    rng = np.random.default_rng(0)
    for size, hits in ((1, 1), (50, 0), (4635, 1600), (20_000, 30)):
        scores = np.zeros(size, np.float32)
        scores[rng.choice(size, hits, replace=False)] = rng.integers(1, 20, hits)  # ties on purpose
        for n in (1, 11, 31, size):
            rows = best_rows(scores, min(n, size))
            assert len(set(rows.tolist())) == len(rows) == min(n, size)
            assert np.array_equal(scores[rows], np.sort(scores)[::-1][: len(rows)])


def test_streamed_build_writes_what_bm25s_index_writes(bm25, tmp_path) -> None:
    """Our two-pass build gives bm25s's own arrays, bit for bit, for the same vocabulary."""
    import bm25s

    from wikisim.index.snippets import terms
    from wikisim.index.sparse_bm25s import build_bm25s

    passages = list(bm25.passages)
    assert build_bm25s(iter(passages), tmp_path) == len(passages)
    vocab = json.loads((tmp_path / "vocab.index.json").read_text(encoding="utf-8"))
    assert list(vocab.values()) == list(range(len(vocab))) and list(vocab)[-1] == ""
    ids = [[vocab[t] for t in terms(p.contents)] for p in passages]
    model = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    model.index(
        bm25s.tokenization.Tokenized(ids=ids, vocab={t: i for t, i in vocab.items() if t}),
        show_progress=False,
    )
    for name in ("data", "indices", "indptr"):
        ours = np.load(tmp_path / f"{name}.csc.index.npy")
        assert ours.dtype == model.scores[name].dtype and np.array_equal(
            ours, model.scores[name]
        ), name
    assert not (tmp_path / "tokens.scratch").exists()
