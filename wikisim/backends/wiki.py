"""The local backend: search, visit and scholar answered from a built index, in-process.

Everything is a pure function of the index and the call, so observations are identical in
every process; the index is opened read-only, so workers share the files through the OS cache.
`WikiExecutor` (what `make_backend("wiki")` and the env use) puts it behind the tool executor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from wikisim.backends.base import PageView, ScholarHit
from wikisim.backends.cache import CacheMode, open_cache
from wikisim.backends.executor import Executor, ExecutorConfig, ToolPolicy
from wikisim.backends.extract import Extractor, LeadExtractor
from wikisim.corpus.page import normalize_title, title_to_url, url_to_title
from wikisim.errors import ConfigError
from wikisim.index import open_index
from wikisim.index.base import (
    DEFAULT_RETRIEVER,
    MIN_SNIPPET_CHARS,
    SNIPPET_CHARS,
    Hit,
    RetrieverName,
)
from wikisim.index.ranked import RankedRetriever
from wikisim.index.small_bm25 import SmallBM25


class _Citations:
    """The corpus's citations, deduplicated (by DOI, else title and year), with the pages citing each."""

    def __init__(self, store) -> None:
        urls = {pid: title_to_url(t) for pid, t in store.titles()}
        records: dict[tuple[str, ...], list] = {}
        for page_id, c in store.citations():
            if not c.title.strip():
                continue
            key = (
                ("doi", c.doi.lower())
                if c.doi
                else ("title", normalize_title(c.title).lower(), str(c.year))
            )
            entry = records.setdefault(key, [c, []])
            url = urls.get(page_id)
            if url and url not in entry[1]:
                entry[1].append(url)
        self.entries = [(c, tuple(sorted(cited))) for c, cited in records.values()]
        self.bm25 = SmallBM25(
            [" ".join([c.title, *c.authors, c.venue, str(c.year or "")]) for c, _ in self.entries]
        )

    def search(self, query: str, k: int) -> list[ScholarHit]:
        return [
            ScholarHit(c.title, c.authors, c.year, c.venue, c.doi, c.url, cited, round(score, 6))
            for (c, cited), score in ((self.entries[i], s) for i, s in self.bm25.top(query, k))
        ]


class WikiBackend:
    """`WikiBackend(index_dir_or_Index, retriever="hybrid")`: the Backend over a built index.

    `snippet_chars` caps each search result's snippet (a small model's context affords fewer).
    """

    name = "wiki"

    def __init__(
        self,
        index,
        retriever: RetrieverName = DEFAULT_RETRIEVER,
        extractor: Extractor | None = None,
        overfetch: int = 3,
        snippet_chars: int = SNIPPET_CHARS,
    ) -> None:
        if snippet_chars < MIN_SNIPPET_CHARS:
            raise ConfigError(f"snippet_chars={snippet_chars} must be >= {MIN_SNIPPET_CHARS}")
        self.index = open_index(Path(index)) if isinstance(index, str | Path) else index
        self.retriever = self.index.retriever(retriever)
        if snippet_chars != SNIPPET_CHARS and not isinstance(self.retriever, RankedRetriever):
            raise ConfigError(
                f"retriever {retriever!r} makes its own snippets; snippet_chars={snippet_chars} "
                f"needs a ranked retriever"
            )
        self.snippet_chars = snippet_chars
        self.manifest_hash: str = self.index.manifest_hash
        self.extractor = extractor or LeadExtractor()
        self.overfetch = overfetch
        self._citations: _Citations | None = None

    def manifest(self) -> Mapping[str, Any]:
        return self.index.manifest

    def trace(self) -> list[Any]:
        """Nothing is traced below the executor: the bare index is called directly."""
        return []

    def close(self) -> None:
        self.index.close()

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Top `k` pages per query: the best passage of each page, as a web engine lists one URL once.

        Passages are ranked `overfetch` times `k` deep, deeper (x4, up to 64 k) for a query whose
        passages come from fewer than `k` pages while more may exist. Retrievers that rank before
        dressing hits (RankedRetriever) make snippets for the `k` kept passages only.
        """
        queries = list(queries)
        retriever = self.retriever
        if not isinstance(retriever, RankedRetriever):
            return [self._pages(h, k) for h in retriever.search(queries, k * self.overfetch)]
        ranked = retriever.ranked
        bad = [q for q in queries if not isinstance(q, str) or not q.strip()]
        if bad:
            raise ConfigError(f"search queries must be non-empty strings, got {bad[0]!r}")
        depth = k * self.overfetch
        raw = ranked(queries, depth)
        out = [self._pages(r, k) for r in raw]
        todo = [i for i, r in enumerate(raw) if len(out[i]) < k and len(r) == depth]
        while todo and depth < k * 64:
            depth *= 4
            raw = ranked([queries[i] for i in todo], depth)
            for i, r in zip(todo, raw, strict=True):
                out[i] = self._pages(r, k)
            todo = [
                i for i, r in zip(todo, raw, strict=True) if len(out[i]) < k and len(r) == depth
            ]
        return [
            retriever.hits(q, picked, self.snippet_chars)
            for q, picked in zip(queries, out, strict=True)
        ]

    @staticmethod
    def _pages(ranked: Sequence, k: int) -> list:
        """The first entry per page (a Hit, or a ranked (docid, score) pair), up to k."""
        seen: dict[str, Any] = {}
        for item in ranked:
            page = item.url if isinstance(item, Hit) else item[0].rsplit("#", 1)[0]
            if page not in seen:
                seen[page] = item
        return list(seen.values())[:k]

    def _closest(self, text: str) -> tuple[str, ...]:
        return tuple(f"{t} ({title_to_url(t)})" for t in self.index.store.closest_titles(text, 5))

    def visit(self, url: str, goal: str, max_tokens: int) -> PageView:
        text = url.strip()
        if "://" in text:
            title = url_to_title(text)
            if title is None:
                stem = (
                    unquote(urlsplit(text).path.rstrip("/").rsplit("/", 1)[-1]).replace("_", " ")
                    or text
                )
                return PageView(
                    url,
                    "",
                    False,
                    f"{text} is not a page of this corpus, which holds only "
                    "https://en.wikipedia.org/wiki/ pages.",
                    self._closest(stem),
                )
        else:
            title = normalize_title(text)
        page = self.index.store.resolve(text) if title else None
        if page is None:
            return PageView(
                url,
                title or "",
                False,
                f"There is no page titled {title!r} in this corpus.",
                self._closest(title or text),
            )
        passages = self.index.require_passages().for_page(page.id)
        return PageView(
            page.url, page.title, True, self.extractor(page, passages, goal, max_tokens)
        )

    def scholar(self, queries: Sequence[str], k: int) -> list[list[ScholarHit]]:
        if self._citations is None:
            self._citations = _Citations(self.index.store)
        return [self._citations.search(q, k) for q in queries]


#: The local index has no rate limit and no transient failures, and its answers must not depend
#: on the clock: one try, a breaker that never skips (reset after 0 s), and a failure is an error
#: observation (a bug to see), not "tool unavailable" (degrade=True is there to ask for).
WIKI_POLICY = ToolPolicy(concurrency=64, max_attempts=1, breaker_reset_s=0.0, degrade=False)


class WikiExecutor(Executor):
    """A `WikiBackend` behind the tool executor, as every backend is (the env's "wiki" backend).

    Why: one layer for all backends, so a wiki run gets the same call trace in the step info and
    the same cache and degradation options as a web or remote run. Calls reach the index exactly
    as made (no normalisation), so observations are those of the bare `WikiBackend`.

    Args:
        index, retriever, extractor, overfetch, snippet_chars: as for `WikiBackend`.
        config: per-tool policies (default `WIKI_POLICY` for every tool).
        cache_mode: "off" (default), "read-write" or "replay-only".
        cache_path: the SQLite cache (None: `cache_dir()/wiki-cache.sqlite`; keys carry the
            manifest hash, the retriever and its settings, and the snippet length, so indexes
            and settings never share answers).
    """

    def __init__(
        self,
        index,
        retriever: RetrieverName = DEFAULT_RETRIEVER,
        extractor: Extractor | None = None,
        overfetch: int = 3,
        *,
        config: ExecutorConfig | None = None,
        cache_mode: CacheMode = "off",
        cache_path: str | Path | None = None,
        snippet_chars: int = SNIPPET_CHARS,
    ) -> None:
        self.wiki = WikiBackend(index, retriever, extractor, overfetch, snippet_chars)
        self.index = self.wiki.index
        config = config or ExecutorConfig(
            search=WIKI_POLICY, visit=WIKI_POLICY, scholar=WIKI_POLICY
        )
        super().__init__(
            self.wiki,
            config=config,
            cache=open_cache(cache_mode, cache_path, "wiki"),
            name="wiki",
            normalize=False,
            scope=f"{retriever}({self.wiki.retriever.settings}),overfetch={overfetch},snippet={snippet_chars}",
        )
        self._manifest = self.index.manifest

    def close(self) -> None:
        super().close()
        self.index.close()
