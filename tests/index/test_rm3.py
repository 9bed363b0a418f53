"""RM3 on the Lucene path: feedback terms from the best documents find what the query never says."""

from __future__ import annotations

import json

import pytest

from wikisim.errors import IndexNotBuiltError
from wikisim.index import Index, open_index
from wikisim.index.build import build
from wikisim.index.jvm import pyserini_module
from wikisim.index.sparse_lucene import LuceneRetriever

TEXTS = [
    "The jaguar engine delivers torque and horsepower.",
    "A jaguar engine: torque, horsepower, and a turbocharger.",
    "Torque and horsepower on the dynamometer, turbocharger tuning.",
    "Rainforest cats hunt at night along the river banks.",
]
# Anserini's RM3 skips feedback terms in more than a tenth of the documents: a corpus of 4 has none
FILLER = [f"Note {i} on gardening, pottery and the weather." for i in range(30)]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("rm3")
    corpus = {f"Doc {i}": [text] for i, text in enumerate(TEXTS + FILLER)}
    (root / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    build([root / "corpus.json"], root / "index", dense=False, progress=False)
    return open_index(root / "index")


def test_rm3_expands_the_query_with_the_feedback_documents_terms(index: Index) -> None:
    assert index.retrievers == ("lucene", "bm25s", "lucene-rm3")
    plain, rm3 = index.retriever("lucene"), index.retriever("lucene-rm3")
    assert (plain.name, rm3.name) == ("lucene", "lucene-rm3")
    title = {p.docid: p.title for p in index.require_passages()}
    found = {r.name: [title[h.docid] for h in r.search(["jaguar"], 10)[0]] for r in (plain, rm3)}
    assert found["lucene"] == ["Doc 0", "Doc 1"]  # the two documents that say "jaguar"
    # the third says only what they say besides (torque, horsepower, turbocharger)
    assert found["lucene-rm3"][:2] == ["Doc 0", "Doc 1"] and "Doc 2" in found["lucene-rm3"]
    assert "Doc 3" not in found["lucene-rm3"]
    assert rm3.search(["jaguar"], 10) == rm3.search(["jaguar"], 10)


def test_an_index_built_without_document_vectors_offers_no_rm3(index: Index) -> None:
    manifest = json.loads(json.dumps(index.manifest))
    del manifest["indexes"]["lucene"]["docvectors"]
    older = Index(index.path, manifest)
    assert older.retrievers == ("lucene", "bm25s")
    with pytest.raises(IndexNotBuiltError, match="no 'lucene-rm3' index.*rebuild"):
        older.retriever("lucene-rm3")


def test_rm3_on_an_index_without_document_vectors_says_rebuild(tmp_path) -> None:
    indexer = pyserini_module("index.lucene").LuceneIndexer(
        args=["-index", str(tmp_path / "old"), "-storeRaw"], threads=1
    )
    indexer.add_batch_dict([{"id": "0#0", "contents": TEXTS[0]}])
    indexer.close()
    assert LuceneRetriever(tmp_path / "old", None).ranked(["jaguar"], 1)[0][0][0] == "0#0"
    with pytest.raises(IndexNotBuiltError, match="no document vectors.*rebuild"):
        LuceneRetriever(tmp_path / "old", None, rm3=True)
