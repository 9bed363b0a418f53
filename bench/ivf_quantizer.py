"""What an IVF index's coarse quantizer costs per added vector: exact (flat) against an HNSW graph.

Adding a vector to an IVF index first finds its list: the flat quantizer compares it with
every centroid (nlist ~ 4 sqrt(n), so adding n vectors costs ~n^1.5), the HNSW quantizer
walks a graph over the centroids (~log nlist). bench/scale.py's dense stage (which builds
with the flat one) measured the index's time exponent at 1.21 from 437k to 8.75M vectors.
Here, for the nlist that
`wikisim.index.dense` picks at each size, one set of centroids (k-means on a sample) goes
into both quantizers, the same unit vectors are assigned through each, one thread, CPU
time per vector, and the share of vectors the graph sends to their exact nearest centroid:

    .venv/bin/python bench/ivf_quantizer.py --sizes 437373,2186252,8745112 --vectors 100000

The committed results (bench/results/scale/ivf-quantizer.json) predate NLIST_MAX: the build now
stops at 8,192 lists, so past ~4.2M vectors it adds at a fixed cost a vector with the flat
quantizer. The graph was tried in the build and dropped (see NLIST_MAX in wikisim.index.dense).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import faiss
import numpy as np

from wikisim.index.dense import HNSW_M, TRAIN_PER_LIST, _nlist

EF = 128  # the graph's search depth when assigning a vector


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """Clustered unit vectors (a mixture around random centres), like sentence embeddings."""
    centres = rng.normal(size=(256, dim)).astype(np.float32)
    x = centres[rng.integers(0, 256, n)] + rng.normal(0, 0.6, (n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def measure(size: int, vectors: int, dim: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    nlist = _nlist(size)
    train = _unit(rng, TRAIN_PER_LIST * nlist, dim)
    kmeans = faiss.Kmeans(dim, nlist, niter=5, seed=seed, spherical=True)
    kmeans.train(train)
    centroids = kmeans.centroids
    assert centroids is not None
    flat = faiss.IndexFlatIP(dim)
    flat.add(centroids)
    graph = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    t0 = time.process_time()
    graph.add(centroids)
    build_s = time.process_time() - t0
    graph.hnsw.efSearch = EF
    x = _unit(rng, vectors, dim)
    out: dict[str, float] = {"size": size, "nlist": nlist, "graph_build_s": build_s}
    assigned = {}
    for name, quantizer in (("flat", flat), ("hnsw", graph)):
        t0 = time.process_time()
        _, assigned[name] = quantizer.search(x, 1)
        out[f"{name}_us_per_vector"] = (time.process_time() - t0) / vectors * 1e6
    out["hnsw_exact_share"] = float(np.mean(assigned["flat"][:, 0] == assigned["hnsw"][:, 0]))
    out["ratio"] = out["flat_us_per_vector"] / out["hnsw_us_per_vector"]
    for name in ("flat", "hnsw"):  # adding every vector of that size, on one core
        out[f"{name}_assign_s_at_size"] = out[f"{name}_us_per_vector"] * size / 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="437373,2186252,8745112", help="vectors per index")
    parser.add_argument("--vectors", type=int, default=100_000, help="vectors assigned per size")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale/ivf-quantizer.json"))
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        row = measure(size, args.vectors, args.dim, args.seed)
        rows.append(row)
        print(
            f"{size:>10,} vectors, nlist {row['nlist']:>6}: flat {row['flat_us_per_vector']:7.1f} µs, "
            f"HNSW {row['hnsw_us_per_vector']:6.1f} µs a vector ({row['ratio']:.1f}x), "
            f"same list as exact {row['hnsw_exact_share']:.3f}; assigning all: "
            f"{row['flat_assign_s_at_size']:,.0f} s vs {row['hnsw_assign_s_at_size']:,.0f} s",
            flush=True,
        )
    xs = [r["size"] for r in rows]
    fits = {
        name: float(
            np.polyfit(np.log(xs), np.log([r[f"{name}_assign_s_at_size"] for r in rows]), 1)[0]
        )
        for name in ("flat", "hnsw")
    }
    print(
        f"time exponent of assigning every vector: flat {fits['flat']:.2f}, HNSW {fits['hnsw']:.2f}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"args": vars(args) | {"out": str(args.out)}, "rows": rows, "exponents": fits}, indent=1
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
