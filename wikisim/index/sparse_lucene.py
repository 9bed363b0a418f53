"""Lucene BM25 through pyserini: the reference sparse backend.

Built in-process with pyserini's LuceneIndexer (Anserini's JsonCollection, raw documents
and document vectors stored: the vectors are what RM3 query expansion reads). Lucene writes random segment ids into its files, so the index's manifest hash
is over what went in (docids, contents, analyzer settings), not over its bytes.
A pyserini prebuilt index (e.g. `wikipedia-kilt-doc`) is read the same way, with hits
made from its stored documents. BM25 rankings come from `lucene_topk.TopK`: pyserini's lists,
without the stored document pyserini reads for each hit's docid.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wikisim.corpus.page import title_to_url
from wikisim.errors import BackendError, ConfigError, IndexNotBuiltError
from wikisim.index.base import SNIPPET_CHARS, Hit
from wikisim.index.jvm import pyserini_module
from wikisim.index.layout import is_lucene_dir
from wikisim.index.lucene_topk import TopK
from wikisim.index.passages import Passage, PassageStore
from wikisim.index.ranked import Ranked, RankedRetriever, cut_at
from wikisim.index.snippets import snippet

LUCENE_K1 = 0.9  # Anserini's BM25 defaults
LUCENE_B = 0.4
#: RM3 pseudo-relevance feedback, Anserini's defaults: the 10 best terms of the 10 best
#: documents, the original query kept at half the weight. An option (`rm3=True`), not the
#: default: on the bundled QA sets' TRAIN questions it lowers recall (bench/recall.py).
RM3 = {"fb_terms": 10, "fb_docs": 10, "original_query_weight": 0.5}
_BATCH = 2000
#: Lucene's indexing buffer in MB: documents are held in the JVM heap until it fills, then
#: flushed as a segment, so it bounds the Lucene stage's memory whatever the dump's size.
#: Anserini's SimpleIndexer fixes it at 2048, more than the JVM's default heap (a quarter
#: of RAM) on an 8 GB machine; past a few hundred MB a bigger buffer only saves merges.
#: It never changes what a search returns (collection statistics span the segments, and
#: Anserini breaks score ties by docid), so it is a setting of the build, not of the index.
LUCENE_BUFFER_MB = 512
#: Passages a Lucene segment holds. A query's segments are searched on threads of their own
#: (8.75M passages in 18 segments on 2 cores: 1.55x faster than one segment, with a segment's
#: search ~4 ms; bench/lucene_threads.py); below it (the bundled indexes) an index is one
#: segment, as before. Lucene gives a thread to each segment past 250k documents
#: (IndexSearcher.slices).
LUCENE_SEGMENT_PASSAGES = 500_000
#: How many threads a Lucene query's segments are searched on in this process, where no
#: `threads` is passed (like OMP_NUM_THREADS; unset: the cores). Lists never depend on it.
#: Processes that share a machine split its cores: `wikisim serve --workers N` and
#: `wikisim sweep --workers N` set it in each of theirs (`share_cores`) unless it is set.
SEARCH_THREADS_VAR = "WIKISIM_SEARCH_THREADS"


def cores() -> int:
    """The cores this process may run on (its affinity where the OS has one: Linux, not macOS)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _environment() -> str:
    return os.environ.get(SEARCH_THREADS_VAR, "").strip()


def search_threads(threads: int | None = None) -> int:
    """Threads a query's segments are searched on: `threads`, else $WIKISIM_SEARCH_THREADS,
    else this process's cores."""
    where = "Lucene search threads"
    if threads is None:
        raw = _environment()
        if not raw:
            return cores()
        where = f"${SEARCH_THREADS_VAR}"
        try:
            threads = int(raw)
        except ValueError:
            raise ConfigError(f"{where} must be a whole number >= 1, got {raw!r}") from None
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ConfigError(f"{where} must be an integer >= 1, got {threads!r}")
    return threads


def share_cores(processes: int) -> None:
    """Make this process search on its share of the cores, one of `processes` alike on this
    machine (so that their search threads do not outnumber the cores), unless
    $WIKISIM_SEARCH_THREADS already says how many."""
    if not _environment():
        os.environ[SEARCH_THREADS_VAR] = str(max(1, cores() // max(1, processes)))


def check_buffer_mb(buffer_mb: int) -> int:
    if not isinstance(buffer_mb, int) or isinstance(buffer_mb, bool) or buffer_mb < 1:
        raise ConfigError(f"lucene_buffer_mb must be a whole number of MB >= 1, got {buffer_mb!r}")
    return buffer_mb


def _check_heap(buffer_mb: int) -> None:
    import jnius

    heap_mb = jnius.autoclass("java.lang.Runtime").getRuntime().maxMemory() / 2**20
    if buffer_mb > heap_mb * 0.75:
        raise ConfigError(
            f"lucene_buffer_mb={buffer_mb} does not fit the JVM's heap ({heap_mb:.0f} MB, "
            f"a quarter of RAM by default): use at most {int(heap_mb * 0.75)}"
        )


def _cap_buffer(indexer: Any, buffer_mb: int) -> None:
    """Set the buffer of the IndexWriter inside pyserini's LuceneIndexer (Anserini's
    SimpleIndexer keeps it private and ignores -memoryBuffer; the writer's config is live)."""
    import jnius

    fields = jnius.autoclass("org.apache.commons.lang3.reflect.FieldUtils")
    try:
        writer = jnius.cast(
            "org.apache.lucene.index.IndexWriter", fields.readField(indexer.object, "writer", True)
        )
        writer.getConfig().setRAMBufferSizeMB(float(buffer_mb))
    except jnius.JavaException as e:  # another Anserini whose SimpleIndexer has no `writer`
        indexer.close()
        raise BackendError(
            f"cannot set Lucene's indexing buffer on this pyserini's indexer ({e}); wikisim "
            "is tested with pyserini==1.6.0"
        ) from e


def build_lucene(
    passages: Iterable[Passage],
    out: Path,
    buffer_mb: int = LUCENE_BUFFER_MB,
    threads: int = 1,
    segment_passages: int = LUCENE_SEGMENT_PASSAGES,
) -> dict[str, Any]:
    """Index passages into `out` with `threads` indexing threads (Anserini's), holding at most
    `buffer_mb` of them in the JVM's heap before flushing a segment, and cut into segments of
    `segment_passages` passages in their order (the last one shorter): a search runs them on
    threads of its own (`LuceneRetriever`).

    Each segment is indexed apart, merged into one, and added to `out` as it is, so the
    extra disk a build needs is one segment's. Threads change Lucene's doc order inside a
    segment, and segments what runs in parallel, never a result: BM25's statistics are the
    whole index's and ties are broken by docid string (Anserini's sort, `lucene_topk`)."""
    check_buffer_mb(buffer_mb)
    if not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"Lucene indexing threads must be an integer >= 1, got {threads!r}")
    if not isinstance(segment_passages, int) or segment_passages < 1:
        raise ConfigError(
            f"Lucene segment_passages must be an integer >= 1, got {segment_passages!r}"
        )
    indexer_mod = pyserini_module("index.lucene")
    _check_heap(buffer_mb)
    digest = hashlib.sha256(b"lucene JsonCollection storeRaw storeDocvectors default-analyzer\n")
    writer = _segment_writer(out)
    part = out.parent / f".{out.name}.segment"
    n = 0
    stream = iter(passages)
    try:
        while (first := next(stream, None)) is not None:
            shutil.rmtree(part, ignore_errors=True)
            indexer = indexer_mod.LuceneIndexer(
                args=["-index", str(part), "-storeRaw", "-storeDocvectors"], threads=threads
            )
            _cap_buffer(indexer, buffer_mb)
            batch: list[dict[str, str]] = []
            for p in itertools.chain([first], itertools.islice(stream, segment_passages - 1)):
                doc = {"id": p.docid, "contents": p.contents}
                digest.update(json.dumps(doc, ensure_ascii=False).encode() + b"\n")
                batch.append(doc)
                if len(batch) >= _BATCH:
                    indexer.add_batch_dict(batch)
                    n += len(batch)
                    batch = []
            if batch:
                indexer.add_batch_dict(batch)
                n += len(batch)
            indexer.object.close(True)  # Anserini's close, merging the segment's flushes into one
            _add_segment(writer, part)
        writer.commit()
    finally:
        writer.close()
        shutil.rmtree(part, ignore_errors=True)
    return {
        "docs": n,
        "k1": LUCENE_K1,
        "b": LUCENE_B,
        "docvectors": True,
        "content_sha256": digest.hexdigest(),
    }


def _directory(path: Path) -> Any:
    import jnius

    auto = jnius.autoclass
    return auto("org.apache.lucene.store.FSDirectory").open(
        auto("java.nio.file.Paths").get(str(path))
    )


def _segment_writer(out: Path) -> Any:
    """An IndexWriter on `out` that takes whole segments and never merges them."""
    import jnius

    auto = jnius.autoclass
    config = auto("org.apache.lucene.index.IndexWriterConfig")()
    config.setMergePolicy(auto("org.apache.lucene.index.NoMergePolicy").INSTANCE)
    config.setOpenMode(auto("org.apache.lucene.index.IndexWriterConfig$OpenMode").CREATE)
    return auto("org.apache.lucene.index.IndexWriter")(_directory(out), config)


def _add_segment(writer: Any, part: Path) -> None:
    """Copy the one-segment index in `part` into `writer`'s index, as its next segment."""
    import jnius

    directory = _directory(part)
    try:
        writer.addIndexes(jnius.cast("org.apache.lucene.store.Directory", directory))
    finally:
        directory.close()


def _hit_from_raw(docid: str, raw: str | None, query: str, score: float, max_chars: int) -> Hit:
    """A hit from a document we did not index ourselves: pyserini's JSON ("contents" or title/text)."""
    try:
        doc = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        doc = {"contents": raw or ""}
    if not isinstance(doc, dict):
        doc = {"contents": str(doc)}
    title = str(doc.get("title", ""))
    text = str(doc.get("text", "") or doc.get("contents", ""))
    if not title and "\n" in text:
        title, text = text.split("\n", 1)
    title = title.strip().strip('"')
    url = title_to_url(title) if title else ""
    return Hit(docid, title, url, snippet(text, query, max_chars), score)


class LuceneRetriever(RankedRetriever):
    """BM25 over a Lucene index; with `rm3`, the query is first expanded by RM3 feedback.

    `threads`: how many of a query's segments are searched at once, at most one a segment
    (None: $WIKISIM_SEARCH_THREADS, else this machine's cores; 1 where processes already fill
    the cores, e.g. many env workers). An index of LUCENE_SEGMENT_PASSAGES passages or fewer
    is one segment."""

    name = "lucene"

    def __init__(
        self,
        path: Path,
        passages: PassageStore | None,
        manifest_hash: str = "",
        rm3: bool = False,
        threads: int | None = None,
    ) -> None:
        threads = search_threads(threads)
        if not is_lucene_dir(path):
            raise IndexNotBuiltError(
                f"no Lucene index in {path}; rebuild without --no-lucene: `wikisim build INPUT... --out {path.parent}`"
            )
        self.searcher = pyserini_module("search.lucene").LuceneSearcher(str(path))
        self.searcher.set_bm25(LUCENE_K1, LUCENE_B)
        if rm3:
            try:
                self.searcher.set_rm3(**RM3)
            except TypeError as e:  # pyserini's word for an index without document vectors
                raise IndexNotBuiltError(
                    f"the Lucene index in {path} has no document vectors, which RM3 reads "
                    f"({e}); rebuild it with this wikisim: `wikisim build INPUT... --out {path.parent}`"
                ) from e
            self.name = "lucene-rm3"
        # RM3 reranks inside pyserini's search; plain BM25 skips its stored-document reads
        self._topk = None if rm3 else TopK.over(self.searcher.object, threads)
        self.passages = passages
        self.manifest_hash = manifest_hash

    def ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        def fetch(query: str, n: int) -> Ranked:
            if self._topk is not None:
                return self._topk.search(query, n)
            return [(h.docid, float(h.score)) for h in self.searcher.search(query, n)]

        return [cut_at(functools.partial(fetch, q), depth) for q in queries]

    def hits(self, query: str, ranked: Ranked, max_chars: int = SNIPPET_CHARS) -> list[Hit]:
        if self.passages is not None:
            return super().hits(query, ranked, max_chars)
        return [
            _hit_from_raw(d, self.searcher.doc(d).raw(), query, s, max_chars) for d, s in ranked
        ]
