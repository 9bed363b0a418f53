"""RM3 on the Lucene path: feedback terms from the best documents find what the query never says."""

from __future__ import annotations

import pytest

from wikisim.errors import IndexNotBuiltError
from wikisim.index.jvm import pyserini_module
from wikisim.index.passages import Passage
from wikisim.index.sparse_lucene import LuceneRetriever, build_lucene

TEXTS = [
    "The jaguar engine delivers torque and horsepower.",
    "A jaguar engine: torque, horsepower, and a turbocharger.",
    "Torque and horsepower on the dynamometer, turbocharger tuning.",
    "Rainforest cats hunt at night along the river banks.",
]
# Anserini's RM3 skips feedback terms in more than a tenth of the documents: a corpus of 4 has none
FILLER = [f"Note {i} on gardening, pottery and the weather." for i in range(30)]


@pytest.fixture(scope="module")
def lucene_dir(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("rm3") / "lucene"
    build_lucene(
        (Passage(f"{i}#0", i, f"Doc {i}", "", "", t) for i, t in enumerate(TEXTS + FILLER)), out
    )
    return out


def test_rm3_expands_the_query_with_the_feedback_documents_terms(lucene_dir) -> None:
    plain = LuceneRetriever(lucene_dir, None)
    rm3 = LuceneRetriever(lucene_dir, None, rm3=True)
    assert (plain.name, rm3.name) == ("lucene", "lucene-rm3")
    found = {r.name: [d for d, _ in r.ranked(["jaguar"], 10)[0]] for r in (plain, rm3)}
    assert found["lucene"] == ["0#0", "1#0"]  # the two documents that say "jaguar"
    # the third says only what they say besides (torque, horsepower, turbocharger)
    assert found["lucene-rm3"][:2] == ["0#0", "1#0"] and "2#0" in found["lucene-rm3"]
    assert "3#0" not in found["lucene-rm3"]
    assert rm3.ranked(["jaguar"], 10) == rm3.ranked(["jaguar"], 10)


def test_rm3_on_an_index_without_document_vectors_says_rebuild(tmp_path) -> None:
    indexer = pyserini_module("index.lucene").LuceneIndexer(
        args=["-index", str(tmp_path / "old"), "-storeRaw"], threads=1
    )
    indexer.add_batch_dict([{"id": "0#0", "contents": TEXTS[0]}])
    indexer.close()
    assert LuceneRetriever(tmp_path / "old", None).ranked(["jaguar"], 1)[0][0][0] == "0#0"
    with pytest.raises(IndexNotBuiltError, match="no document vectors.*rebuild"):
        LuceneRetriever(tmp_path / "old", None, rm3=True)
