"""Where a Lucene query's CPU time goes, at several index sizes in one process (issue 15).

Per question of bench/scale.py's search sample (200 HotpotQA and MuSiQue questions, after
100 warm-up sentences), thread CPU ms of the calling thread (Lucene runs there through JNI),
every path at every index interleaved question by question, twice over:

    pyserini    LuceneRetriever.ranked as it was: pyserini's LuceneSearcher.search (Anserini
                reads every hit's stored document for its docid), cut by cut_at
    ranked      LuceneRetriever.ranked now: the same search, docids from doc values (TopK)
    search      ranked, then its hits made (passage lookups, snippets): the env's search step
    lucene      Lucene alone: IndexSearcher.search(query, n), block-max pruning, no docids
    exhaustive  Lucene scoring every matching passage (no pruning): the linear bound

at k=10 (11 fetched) and 100 deep (what the hybrid fuses). Every question's ranked list is
checked equal to pyserini's. A passage store must hold every index's docids (the largest).

    nice -n 10 .venv/bin/python bench/lucene_search.py --index 10k=DIR10/lucene \
        --index 50k=DIR50/lucene --passages DIR50/passages.sqlite --out OUT.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import QUERIES, _queries  # noqa: E402

from wikisim.index.jvm import pyserini_module  # noqa: E402
from wikisim.index.passages import PassageStore  # noqa: E402
from wikisim.index.ranked import cut_at  # noqa: E402
from wikisim.index.sparse_lucene import LuceneRetriever  # noqa: E402

DEPTHS = {"k10": 10, "deep": 100}
REPEATS = 2
TERM_BUCKETS = ((1, 7), (8, 10), (11, 13), (14, 99))  # query terms after analysis


def _lucene(retriever: LuceneRetriever) -> dict[str, Callable[[str, int], Any]]:
    """Lucene alone over the retriever's own IndexSearcher: pruned and exhaustive top n."""
    import jnius

    topk = retriever._topk
    assert topk is not None, "an index whose ties Anserini breaks by docid"
    searcher, analyzer, generator = topk._searcher, topk._analyzer, topk._generator
    collector = jnius.autoclass("org.apache.lucene.search.TopScoreDocCollector")

    def query(q: str) -> Any:
        return generator.buildQuery("contents", analyzer, q)

    return {
        "lucene": lambda q, n: searcher.search(query(q), n + 1),
        "exhaustive": lambda q, n: searcher.search(
            query(q),
            jnius.cast("org.apache.lucene.search.Collector", collector.create(n + 1, 2**31 - 1)),
        ),
    }


def _terms(retriever: LuceneRetriever, question: str) -> int:
    """How many terms the question's query has after Anserini's analyzer."""
    import jnius

    topk = retriever._topk
    assert topk is not None
    query = topk._generator.buildQuery("contents", topk._analyzer, question)
    return jnius.cast("org.apache.lucene.search.BooleanQuery", query).clauses().size()


def _paths(path: Path, store: PassageStore | None) -> tuple[LuceneRetriever, dict[str, Any]]:
    retriever = LuceneRetriever(path, store, threads=1)  # its CPU is on the calling thread

    def old(q: str, n: int) -> list:
        def fetch(m: int) -> list:
            return [(h.docid, float(h.score)) for h in retriever.searcher.search(q, m)]

        return cut_at(fetch, n)

    return retriever, {
        "pyserini": old,
        "ranked": lambda q, n: retriever.ranked([q], n)[0],
        "search": lambda q, n: retriever.hits(q, retriever.ranked([q], n)[0]),
        **_lucene(retriever),
    }


def measure(
    indexes: dict[str, Path], store: PassageStore | None, warm_passes: int
) -> dict[str, Any]:
    """Every path of every index, interleaved question by question (in alternating order), so
    that the machine's load, which moves CPU time too, falls on all of them alike; and the
    CPU the process's other threads spent meanwhile, a call. Without a store, the search
    path's hits come from the documents Lucene stores (what `LuceneRetriever` does then)."""
    queries, warm = _queries()
    opened = {label: _paths(path, store) for label, path in indexes.items()}
    lengths = np.array([_terms(next(iter(opened.values()))[0], q) for q in queries])
    out: dict[str, Any] = {}
    for _ in range(warm_passes):
        for _, paths in opened.values():
            for q in warm:
                for fn in paths.values():
                    for n in DEPTHS.values():
                        fn(q, n)
    for label, (retriever, paths) in opened.items():
        differ = sum(
            paths["pyserini"](q, n) != paths["ranked"](q, n)
            for q in queries
            for n in DEPTHS.values()
        )
        out[label] = {"docs": retriever.searcher.num_docs, "differ": differ}
    times: dict[tuple[str, str], list[float]] = {}
    steps = [
        (label, name, key, n, fn)
        for label, (_, paths) in opened.items()
        for name, fn in paths.items()
        for key, n in DEPTHS.items()
        if not (name == "search" and key == "deep")  # the env makes hits for k=10 only
    ]
    p0, t0 = time.process_time(), time.thread_time()
    for rep in range(REPEATS):
        for i, q in enumerate(queries):
            for label, name, key, n, fn in steps if (i + rep) % 2 == 0 else steps[::-1]:
                c0 = time.thread_time()
                fn(q, n)
                times.setdefault((label, f"{name}_{key}"), []).append(
                    (time.thread_time() - c0) * 1000
                )
    # CPU of the process's other threads (the JVM's JIT compilers and GC) while it timed
    other = (time.process_time() - p0) - (time.thread_time() - t0)
    out["other_threads_cpu_ms_per_call"] = other * 1000 / sum(len(ts) for ts in times.values())
    for (label, key), ts in times.items():
        out[label][f"{key}_p50_ms"] = float(np.percentile(ts, 50))
        out[label][f"{key}_p99_ms"] = float(np.percentile(ts, 99))
        if key in ("lucene_k10", "exhaustive_k10"):  # by the question's length in terms
            per_query = np.median(np.reshape(ts, (REPEATS, len(queries))), axis=0)
            out[label][f"{key}_p50_ms_by_terms"] = {
                f"{lo}-{hi}": float(np.median(per_query[(lengths >= lo) & (lengths <= hi)]))
                for lo, hi in TERM_BUCKETS
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", action="append", required=True, help="LABEL=LUCENE_DIR")
    parser.add_argument("--passages", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--warm-passes",
        type=int,
        default=1,
        help="passes over the warm-up sentences before timing (bench/scale.py makes 1; the "
        "JVM's C2 compiler keeps compiling for ~1,000 queries)",
    )
    args = parser.parse_args()
    pyserini_module("search.lucene")
    indexes = {label: Path(path) for label, _, path in (s.partition("=") for s in args.index)}
    result: dict[str, Any] = {
        "queries": QUERIES,
        "repeats": REPEATS,
        "warm_passes": args.warm_passes,
    }
    measured = measure(indexes, PassageStore(args.passages), args.warm_passes)
    result["other_threads_cpu_ms_per_call"] = measured.pop("other_threads_cpu_ms_per_call")
    result["indexes"] = measured
    print(json.dumps(result, indent=1))
    labels = list(result["indexes"])
    if len(labels) > 1:
        first, last = (result["indexes"][label] for label in (labels[0], labels[-1]))
        result["growth"] = {
            k: last[k] / first[k] for k in first if k.endswith("_p50_ms") and first[k] > 0
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
