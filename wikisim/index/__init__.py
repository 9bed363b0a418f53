"""Passages, sparse (bm25s, Lucene) and dense indexes, hybrid fusion, and the manifest.

from wikisim.index import open_index
index = open_index("data/index/sample")
hits = index.retriever("bm25s").search(["who founded anarchism"], k=5)[0]
"""

from wikisim.index.base import DEFAULT_RETRIEVER, DENSE_RETRIEVERS, RETRIEVERS, Hit, Retriever
from wikisim.index.layout import Index, open_index
from wikisim.index.passages import Passage, PassageStore, split_page

__all__ = [
    "RETRIEVERS",
    "DEFAULT_RETRIEVER",
    "DENSE_RETRIEVERS",
    "Hit",
    "Index",
    "Passage",
    "PassageStore",
    "Retriever",
    "open_index",
    "split_page",
]
