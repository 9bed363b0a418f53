"""Every backend over the bundled sample (built once, with dense, by the `sample_index` fixture)."""

from __future__ import annotations

import pytest

from wikisim.errors import ConfigError, IndexNotBuiltError
from wikisim.index import RETRIEVERS, open_index
from wikisim.index.hybrid import FusionParams, fuse


@pytest.fixture(scope="module")
def index(sample_index):
    return open_index(sample_index)


def test_index_layout_and_manifest(index) -> None:
    assert set(index.retrievers) == set(RETRIEVERS)
    m = index.manifest
    assert (
        m["inputs"][0]["name"] == "enwiki-2014-sample.xml.bz2"
        and len(m["inputs"][0]["sha256"]) == 64
    )
    assert m["params"]["passage_words"] == 150
    assert {"pyserini", "faiss-cpu", "bm25s", "wikisim"} <= set(m["versions"])
    assert len(m["versions"]["embedding_model"]["sha256"]) == 64
    assert set(m["indexes"]) == {"bm25s", "lucene", "dense"}
    assert (
        m["counts"]["pages"] == index.store.counts()["pages"]
        if hasattr(index.store, "counts")
        else True
    )
    assert m["counts"]["passages"] == len(index.passages)
    assert len(index.manifest_hash) == 16


@pytest.mark.parametrize("backend", RETRIEVERS)
def test_backend_finds_the_right_article(index, backend: str) -> None:
    retriever = index.retriever(backend)
    assert retriever.manifest_hash == index.manifest_hash
    queries = ["symptoms of autism in children", "anarchism as a political philosophy"]
    results = retriever.search(queries, k=5)
    assert [len(hits) for hits in results] == [5, 5]
    assert results[0][0].title == "Autism"
    assert results[1][0].title == "Anarchism"
    for hits in results:
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        for h in hits:
            p = index.passages.get(h.docid)
            assert (h.title, h.url) == (p.title, p.url)
            assert h.snippet and len(h.snippet) <= 300
            assert h.snippet.split()[0] in p.text  # snippets are cut from the passage itself
    assert retriever.search(queries, k=5) == results  # a pure function of (index, query, k)


def test_query_without_known_terms_gives_no_sparse_hits(index) -> None:
    assert index.retriever("bm25s").search(["the of and"], k=3) == [[]]
    assert index.retriever("bm25s").search(["zzxqj"], k=3) == [[]]


def test_bad_calls_are_refused(index) -> None:
    with pytest.raises(ConfigError, match="unknown retriever 'elastic'"):
        index.retriever("elastic")
    with pytest.raises(ConfigError, match="empty"):
        index.retriever("bm25s").search(["  "], k=3)


def test_fusion_is_weighted_rrf_with_docid_ties() -> None:
    sparse = [("a", 9.0), ("b", 5.0)]
    dense = [("b", 0.9), ("c", 0.8)]
    fused = fuse(sparse, dense, FusionParams(rrf_k=0.0, dense_weight=0.5))
    assert fused == [("b", 0.5 / 2 + 0.5 / 1), ("a", 0.5), ("c", 0.25)]
    # equal weights and mirrored ranks tie: docid decides
    assert [d for d, _ in fuse([("x", 1.0)], [("w", 1.0)], FusionParams(dense_weight=0.5))] == [
        "w",
        "x",
    ]
    assert [d for d, _ in fuse(sparse, dense, FusionParams(dense_weight=0.0))][:2] == ["a", "b"]
    with pytest.raises(ConfigError, match="dense_weight"):
        FusionParams(dense_weight=1.5)


def test_bare_lucene_directory_opens_as_a_prebuilt_index(sample_index) -> None:
    """What a user with a pyserini prebuilt index (e.g. wikipedia-kilt-doc) does."""
    bare = open_index(sample_index / "lucene")
    assert bare.retrievers == ("lucene",) and bare.manifest["kind"] == "lucene-prebuilt"
    hits = bare.retriever("lucene").search(["symptoms of autism in children"], k=3)[0]
    assert hits[0].title == "Autism" and hits[0].url == "https://en.wikipedia.org/wiki/Autism"
    assert hits[0].snippet
    with pytest.raises(IndexNotBuiltError, match="no 'bm25s' index"):
        bare.retriever("bm25s")


def test_pyserini_prebuilt_index_opens_by_name(tmp_path, monkeypatch) -> None:
    """A prebuilt index is found by name where pyserini's download leaves it (here a small
    Lucene index of ours under that name: the real ones are 9-11 GB and cannot be fetched here)."""
    from wikisim.corpus import Page
    from wikisim.index.layout import prebuilt_path
    from wikisim.index.passages import split_page
    from wikisim.index.sparse_lucene import build_lucene

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    with pytest.raises(IndexNotBuiltError, match="'wikipedia-kilt-doc' is not downloaded"):
        open_index("wikipedia-kilt-doc")
    local = prebuilt_path("wikipedia-kilt-doc")
    assert local.parent == tmp_path / "indexes"
    assert local.name.startswith("lucene-index.wikipedia-kilt-doc.")
    pages = [
        Page(1, "Hamlet", "Hamlet is a tragedy written by William Shakespeare around 1600."),
        Page(2, "Autism", "Autism is a neurodevelopmental condition with symptoms in children."),
    ]
    build_lucene([p for page in pages for p in split_page(page)], local)
    by_name = open_index("wikipedia-kilt-doc")
    assert by_name.path == local and by_name.retrievers == ("lucene",)
    hits = by_name.retriever("lucene").search(["who wrote hamlet"], k=1)[0]
    assert hits[0].title == "Hamlet" and hits[0].docid == "1#0"


def test_hybrid_fuses_lucene_past_the_bm25s_limit(sample_index, monkeypatch) -> None:
    from wikisim.index import layout

    assert open_index(sample_index).sparse == "bm25s"  # 4.6k passages: well under the limit
    monkeypatch.setattr(layout, "BM25S_MAX_PASSAGES", 1000)
    index = open_index(sample_index)
    assert index.sparse == "lucene"
    assert index.retriever("hybrid").sparse is index.retriever("lucene")
    assert index.retriever("hybrid").search(["symptoms of autism"], k=3)[0][0].title == "Autism"
