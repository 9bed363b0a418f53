"""The title field: a passage whose page title names the query's terms moves up, by idf."""

from __future__ import annotations

import json
import math

import pytest

from wikisim.index import open_index
from wikisim.index.build import build
from wikisim.index.sparse_bm25s import BM25sRetriever
from wikisim.index.titles import TitleBooster, title_terms

CORPUS = {
    "Journal of Psychotherapy Integration": [
        "A peer-reviewed periodical published by an association."
    ],
    "Person-centered therapy": [
        "The Journal of Psychotherapy Integration, a journal on psychotherapy integration, reviewed it."
    ],
    "Riemann integral": ["The integral of a function, named after Bernhard Riemann."],
    "Society for the Exploration of Psychotherapy Integration": ["An association founded in 1983."],
}
QUERY = "journal of psychotherapy integration"


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> BM25sRetriever:
    root = tmp_path_factory.mktemp("titles")
    (root / "corpus.json").write_text(json.dumps(CORPUS), encoding="utf-8")
    build([root / "corpus.json"], root / "index", dense=False, lucene=False, progress=False)
    return open_index(root / "index").retriever("bm25s")


def test_the_page_named_by_the_query_moves_up(sparse: BM25sRetriever) -> None:
    booster = TitleBooster(sparse)
    ranked = sparse.ranked([QUERY], 10)[0]
    title = {d: sparse.passages.get(d).title for d, _ in ranked}
    assert (
        title[ranked[0][0]] == "Person-centered therapy"
    )  # the body alone prefers the long mention
    boosted = booster.boost(QUERY, ranked, 0.5)
    assert title[boosted[0][0]] == "Journal of Psychotherapy Integration"
    body = dict(ranked)
    query_terms = {"journal", "psychotherapi", "integr"}
    for docid, score in boosted:  # the bonus: weight x the idf of each query term in the title
        bonus = 0.5 * sum(booster.idf(t) for t in query_terms & set(title_terms(title[docid])))
        assert score == pytest.approx(body[docid] + bonus)
    assert booster.boost(QUERY, ranked, 0.0) == ranked


def test_idf_is_lucenes_formula(sparse: BM25sRetriever) -> None:
    booster = TitleBooster(sparse)
    n = booster.num_docs
    assert n == 4
    assert booster.idf("riemann") == pytest.approx(math.log(1 + (n - 1 + 0.5) / 1.5))
    assert booster.idf("absent") == 0.0
