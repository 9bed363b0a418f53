"""An IVF-SQ8 index built end to end with each coarse quantizer: the add's CPU time and recall@10.

bench/ivf_quantizer.py timed the assignment alone: the flat quantizer costs ~n^1.5 to add n
vectors, an HNSW graph over the centroids ~n, but at 8.75M vectors the graph sends only 62%
of them to their nearest list. What that does to search is the open question, answered here:
for each size, one k-means (on TRAIN_PER_LIST points a list, as the build samples; 5
iterations, since both quantizers share it) fills both quantizers; each index trains only its
8-bit scalar quantizer, adds the same clustered unit vectors in chunks on `--threads` threads
(process CPU time), and is searched with 200 queries (midpoints of neighbouring vectors, as
the build tunes) at several nprobe; recall@10 is against exact search over the same vectors.

    .venv/bin/python bench/ivf_quantizer_recall.py --sizes 437373,2186252 --quantizers flat,hnsw
    .venv/bin/python bench/ivf_quantizer_recall.py --sizes 8745112 --quantizers hnsw
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import faiss
import numpy as np

from bench.ivf_quantizer import EF, _unit
from wikisim.index.dense import HNSW_M, TRAIN_PER_LIST, _exact_top, _nlist, _recall

CHUNK = 262_144  # vectors generated and added at a time
QUERIES, K = 200, 10


def _vectors(size: int, dim: int, seed: int) -> np.ndarray:
    """`size` clustered unit vectors, made a chunk at a time (float64 temporaries stay small)."""
    out = np.empty((size, dim), dtype=np.float32)
    for i, start in enumerate(range(0, size, CHUNK)):
        stop = min(size, start + CHUNK)
        out[start:stop] = _unit(np.random.default_rng([seed, i]), stop - start, dim)
    return out


def measure(size: int, quantizers: list[str], dim: int, seed: int, nprobes: list[int]) -> dict:
    nlist = _nlist(size)
    x = _vectors(size, dim, seed)
    sample = x[np.linspace(0, size - 1, TRAIN_PER_LIST * nlist).astype(np.int64)]
    t0 = time.process_time()
    kmeans = faiss.Kmeans(dim, nlist, niter=5, seed=seed, spherical=True)  # shared by both
    kmeans.train(sample)
    centroids = kmeans.centroids
    assert centroids is not None
    row: dict = {"size": size, "nlist": nlist, "kmeans_cpu_s": time.process_time() - t0}
    rows = np.linspace(0, size - 2, QUERIES).astype(np.int64)
    queries = x[rows] + x[rows + 1]
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    chunks = [x[start : start + CHUNK] for start in range(0, size, CHUNK)]  # views, no copies
    exact = _exact_top(chunks, queries, K)
    for name in quantizers:
        quantizer: faiss.Index
        if name == "hnsw":
            quantizer = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)  # the graph's shape would vary with insertion order
            quantizer.add(centroids)
            faiss.omp_set_num_threads(threads)
            quantizer.hnsw.efSearch = EF  # the depth it assigns vectors with
        else:
            quantizer = faiss.IndexFlatIP(dim)
            quantizer.add(centroids)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.train(sample)  # the quantizer holds nlist centroids: only the 8-bit ranges train
        t0 = time.process_time()
        for chunk in chunks:
            index.add(chunk)
        row[f"{name}_add_cpu_s"] = time.process_time() - t0
        for nprobe in nprobes:
            index.nprobe = nprobe
            if isinstance(quantizer, faiss.IndexHNSWFlat):  # the graph's depth covers nprobe
                quantizer.hnsw.efSearch = max(EF, nprobe)
            row[f"{name}_recall@10_nprobe{nprobe}"] = _recall(index, queries, exact, K)
        print(
            json.dumps({k: v for k, v in row.items() if k.startswith((name, "size"))}), flush=True
        )
        del index
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="437373,2186252", help="vectors per index")
    parser.add_argument("--quantizers", default="flat,hnsw")
    parser.add_argument("--nprobes", default="8,16,32,64")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args()
    faiss.omp_set_num_threads(args.threads)
    rows = [
        measure(
            int(s),
            args.quantizers.split(","),
            args.dim,
            args.seed,
            [int(n) for n in args.nprobes.split(",")],
        )
        for s in args.sizes.split(",")
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
