"""Search latency and throughput per backend, against the raw backend calls, in one process.

Raw calls: pyserini's LuceneSearcher.search, bm25s tokenize + retrieve, and the model's
encode + faiss search over the very same index files. Ours: `Retriever.search` (which adds
docid/title/url lookup, query-focused snippets, validation and tie-ordering). Both encode a
query on one torch thread. "hybrid-v0" is the previous default hybrid (RRF k 60, depth 100,
no title field) timed beside the current default, whose latency must stay within 1.5x of
it. Queries: the
100 HotpotQA-100 questions over the bundled 2014 sample (built once into the cache).

    .venv/bin/python bench/search.py [--repeat 3] [--index DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import Stemmer
import torch
from tqdm import tqdm

from wikisim.index import open_index
from wikisim.index.base import Retriever
from wikisim.index.bm25s_import import bm25s
from wikisim.index.build import ensure_bundled_index
from wikisim.index.dense import DenseRetriever
from wikisim.index.hybrid import FusionParams, HybridRetriever, fuse
from wikisim.index.sparse_bm25s import BM25sRetriever
from wikisim.index.sparse_lucene import LuceneRetriever
from wikisim.paths import QA_DIR

RESULTS = Path(__file__).resolve().parent / "results"
K = 10
PREVIOUS = FusionParams(
    rrf_k=60.0, dense_weight=0.6, depth=100, title_weight=0.0, expand_top=0, hop_seeds=0
)  # the default before issue 17: fusion alone


def stats(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {
        "p50_ms": 1e3 * statistics.median(times),
        "p99_ms": 1e3 * times[int(0.99 * (len(times) - 1))],
        "qps": len(times) / sum(times),
    }


def search_one(retriever: Retriever, query: str) -> object:
    return retriever.search([query], k=K)


def paired(
    raw: Callable[[str], object],
    ours: Callable[[str], object],
    queries: list[str],
    repeat: int,
    label: str,
) -> tuple[dict[str, float], dict[str, float]]:
    """Raw and ours timed back to back on each query, so both see the same load on a shared machine."""
    for q in queries[:10]:  # warm-up: JIT, caches, lazy loads
        raw(q)
        ours(q)
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for q in tqdm(queries, desc=label, leave=False):
            for fn, out in ((raw, times[0]), (ours, times[1])):
                t0 = time.perf_counter()
                fn(q)
                out.append(time.perf_counter() - t0)
    return stats(times[0]), stats(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="passes over the 100 queries")
    parser.add_argument(
        "--index",
        type=Path,
        default=None,
        help="a built index with every backend (default: the bundled sample, built once)",
    )
    args = parser.parse_args()
    index = open_index(args.index or ensure_bundled_index(dense=True))
    queries = [q["question"] for q in json.loads((QA_DIR / "hotpotqa-train-100.json").read_text())]
    print(
        f"{len(queries)} queries x {args.repeat} over {len(index.require_passages())} passages "
        f"(manifest {index.manifest_hash})"
    )
    ours = {b: index.retriever(b) for b in ("lucene", "bm25s", "dense", "hybrid")}
    lucene_r, sparse, dense, hybrid = (ours[b] for b in ("lucene", "bm25s", "dense", "hybrid"))
    assert isinstance(lucene_r, LuceneRetriever) and isinstance(sparse, BM25sRetriever)
    assert isinstance(dense, DenseRetriever) and isinstance(hybrid, HybridRetriever)
    ours["hybrid-v0"] = HybridRetriever(sparse, dense, index.manifest_hash, PREVIOUS)

    lucene = lucene_r.searcher  # the same pyserini LuceneSearcher object, called directly
    bm25 = bm25s.BM25.load(str(index.path / "bm25s"), mmap=True, show_progress=False)
    stemmer = Stemmer.Stemmer("english")
    model, faiss_index = dense.model, dense.index
    # ours encodes a query on one thread (far faster on a shared machine); so does the raw call
    torch.set_num_threads(1)

    def raw_bm25s(q: str):
        tokens = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        return bm25.retrieve(tokens, k=K, show_progress=False, n_threads=0)

    def raw_dense(q: str):
        vec = model.encode(
            [q], show_progress_bar=False, normalize_embeddings=True, convert_to_numpy=True
        )
        return faiss_index.search(np.asarray(vec, dtype=np.float32), K)

    def raw_hybrid(q: str):  # both raw calls plus the fusion itself, without lookups or snippets
        b = raw_bm25s(q)
        d = raw_dense(q)
        return fuse(
            [(str(i), 0.0) for i in b[0][0]],
            [(str(i), 0.0) for i in d[1][0]],
            hybrid.params,
        )

    raw = {
        "lucene": lambda q: lucene.search(q, K),
        "bm25s": raw_bm25s,
        "dense": raw_dense,
        "hybrid": raw_hybrid,
    }
    report: dict = {
        "queries": len(queries),
        "repeat": args.repeat,
        "passages": len(index.require_passages()),
        "manifest_hash": index.manifest_hash,
        "backends": {},
    }
    for backend in ("lucene", "bm25s", "dense", "hybrid"):
        r, o = paired(
            raw[backend],
            functools.partial(search_one, ours[backend]),
            queries,
            args.repeat,
            backend,
        )
        report["backends"][backend] = {
            "raw": r,
            "wikisim": o,
            "overhead_p50": o["p50_ms"] / r["p50_ms"],
        }
    print(
        f"\n{'backend':<8}{'raw p50':>10}{'raw p99':>10}{'raw qps':>9}{'ours p50':>10}{'ours p99':>10}"
        f"{'ours qps':>10}{'p50 ratio':>11}"
    )
    for b, e in report["backends"].items():
        r, o = e["raw"], e["wikisim"]
        print(
            f"{b:<8}{r['p50_ms']:>8.2f}ms{r['p99_ms']:>8.2f}ms{r['qps']:>9.0f}{o['p50_ms']:>8.2f}ms"
            f"{o['p99_ms']:>8.2f}ms{o['qps']:>10.0f}{e['overhead_p50']:>10.2f}x"
        )
    print("raw hybrid = raw bm25s + raw dense + fusion (no lookups, no snippets)")
    v0, now = paired(
        lambda q: ours["hybrid-v0"].search([q], k=K),
        lambda q: ours["hybrid"].search([q], k=K),
        queries,
        args.repeat,
        "hybrid-v0 vs hybrid",
    )
    report["default_vs_previous"] = {
        "hybrid-v0": v0,
        "hybrid": now,
        "p50_ratio": now["p50_ms"] / v0["p50_ms"],
    }
    print(
        f"default hybrid {now['p50_ms']:.2f} ms p50 vs the previous default (hybrid-v0) {v0['p50_ms']:.2f} ms: "
        f"{now['p50_ms'] / v0['p50_ms']:.2f}x (target <= 1.5x), timed back to back on each query"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "search.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {RESULTS / 'search.json'}")


if __name__ == "__main__":
    main()
