"""Fixtures the index tests share."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from wikisim.index import Index, open_index
from wikisim.index.build import build

QaIndex = Callable[[str, dict[str, list[str]]], tuple[Index, dict[str, str]]]


@pytest.fixture(scope="session")
def qa_corpus_index(tmp_path_factory: pytest.TempPathFactory) -> QaIndex:
    """Builds a bm25s index of a QA set's paragraphs ({title: [paragraph]}, no links):
    (the index, title -> docid)."""

    def make(name: str, corpus: dict[str, list[str]]) -> tuple[Index, dict[str, str]]:
        root = tmp_path_factory.mktemp(name)
        (root / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
        build([root / "corpus.json"], root / "index", dense=False, lucene=False, progress=False)
        index = open_index(root / "index")
        return index, {p.title: p.docid for p in index.require_passages()}

    return make
