"""One retrieval interface for every retriever (Lucene, bm25s, dense, hybrid, remote)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

from wikisim.errors import ConfigError

#: The retrievers a built index can serve, by name.
RetrieverName = Literal["hybrid", "lucene", "bm25s", "dense", "lucene-rm3"]
RETRIEVERS: Final[tuple[str, ...]] = get_args(RetrieverName)
#: The retriever every command and the env use unless told otherwise: bm25s fused with dense,
#: re-ranked by page with the pages the best ones link to or name and the pages the question
#: names (see `wikisim.index.hybrid`, `wikisim.index.expand`, and bench/recall.py for how it
#: was chosen). "lucene-rm3" is Lucene with RM3 query expansion, an option.
DEFAULT_RETRIEVER: Final = "hybrid"
#: the retrievers that need the dense index (and so an index built with it)
DENSE_RETRIEVERS: Final = ("dense", "hybrid")
#: Characters of a search result's snippet unless the env asks for fewer or more
#: (`EnvConfig.snippet_chars`; see `wikisim.index.snippets`).
SNIPPET_CHARS: Final = 300
#: The shortest snippet setting: a sentence cut to fit ends with "...".
MIN_SNIPPET_CHARS: Final = 16


@dataclass(frozen=True)
class Hit:
    docid: str  # "<page_id>#<n>" for passages of a built corpus
    title: str
    url: str
    snippet: str
    score: float


class Retriever(ABC):
    """`search` validates and orders; subclasses implement `_retrieve` only.

    Results are a pure function of (index, query, k): ties break by docid.
    """

    #: content hash of the index this retriever reads (from its manifest.json)
    manifest_hash: str = ""
    name: str = ""

    @property
    def settings(self) -> str:
        """What besides its index and name decides its results ("": nothing); tool caches key on it."""
        return ""

    def search(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]:
        if isinstance(queries, str):
            raise ConfigError(f"queries must be a list of strings, got the string {queries!r}")
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        for i, q in enumerate(queries):
            if not isinstance(q, str) or not q.strip():
                raise ConfigError(f"query {i} is empty or not a string: {q!r}")
        if not queries:
            return []
        results = self._retrieve(list(queries), k)
        return [sorted(hits, key=lambda h: (-h.score, h.docid))[:k] for hits in results]

    @abstractmethod
    def _retrieve(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Up to k hits per query, in any order (`search` sorts them)."""
