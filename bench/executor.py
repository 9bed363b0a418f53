"""The tool executor's overhead per call, with its SQLite cache off, cold and hot.

Usage: .venv/bin/python -m bench.executor [--index DIR] [--queries 300] [--repeat 3]

The provider is the in-process WikiBackend (bm25s) on the bundled sample; the baseline is a
direct `WikiBackend.search` call in the same process, after a warm-up pass (the index memoises
snippets, so the overhead is not confounded with that). "env's wiki executor" is the env's
default backend (`WikiExecutor`: one try, calls passed as made). Cold = every call misses and
records; hot = every call is answered by the cache (target: under 1 ms per call).
Writes bench/results/executor.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from wikisim.backends.cache import ToolCache
from wikisim.backends.executor import Executor
from wikisim.backends.wiki import WikiBackend, WikiExecutor

RESULTS = Path(__file__).resolve().parent / "results"


def summary(lat: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(lat, n=100, method="inclusive")
    return {
        "calls": len(lat),
        "mean_ms": statistics.fmean(lat) * 1000,
        "p50_ms": qs[49] * 1000,
        "p99_ms": qs[98] * 1000,
    }


def interleaved(
    paths: dict[str, Callable[[str], object]], queries: list[str]
) -> dict[str, dict[str, float]]:
    """Each query through every path in turn (rotating the order), so load swings hit all alike."""
    lat: dict[str, list[float]] = {name: [] for name in paths}
    names = list(paths)
    for i, q in enumerate(tqdm(queries, desc=", ".join(paths), leave=False)):
        for name in (
            names[i % len(names) :] + names[: i % len(names)]
        ):  # rotate: no path is always first
            fn = paths[name]
            start = time.perf_counter()
            fn(q)
            lat[name].append(time.perf_counter() - start)
    return {name: summary(values) for name, values in lat.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--index", type=Path, default=None, help="built index (default: the bundled sample)"
    )
    parser.add_argument("--queries", type=int, default=300, help="distinct queries")
    parser.add_argument("--repeat", type=int, default=3, help="hot passes over the queries")
    args = parser.parse_args()
    if args.index is None:
        from wikisim.index.build import ensure_bundled_index

        args.index = ensure_bundled_index()
    backend = WikiBackend(args.index, retriever="bm25s")
    titles = [t for _, t in backend.index.store.titles()]
    suffixes = [
        "",
        " history",
        " origin",
        " people",
        " place",
        " date",
        " definition",
        " war",
        " art",
    ]
    queries = list(dict.fromkeys(t + s for s in suffixes for t in titles))[: args.queries]
    for q in tqdm(
        queries, desc="warm-up", leave=False
    ):  # the index memoises snippets: warm it for all paths
        backend.search([q], 10)

    with tempfile.TemporaryDirectory() as tmp:
        uncached = Executor(backend)
        env_wiki = WikiExecutor(backend.index)  # what the env runs: one try, no normalisation
        cached = Executor(backend, cache=ToolCache(Path(tmp) / "cache.sqlite"))
        rows = interleaved(
            {
                "direct": lambda q: backend.search([q], 10),
                "executor, no cache": lambda q: uncached.search([q], 10),
                "env's wiki executor": lambda q: env_wiki.search([q], 10),
                "executor, cache cold": lambda q: cached.search([q], 10),
            },
            queries,
        )
        rows |= interleaved(
            {"executor, cache hot": lambda q: cached.search([q], 10)}, queries * args.repeat
        )
        assert cached.stats()["search"]["cache"] == len(queries) * args.repeat
    base = rows["direct"]["mean_ms"]
    print(f"index {args.index}  {args.queries} distinct queries, k=10")
    print(
        f"{'path':<22} {'mean ms':>9} {'p50 ms':>9} {'p99 ms':>9} {'vs direct':>10} {'overhead ms':>12}"
    )
    for name, r in rows.items():
        print(
            f"{name:<22} {r['mean_ms']:>9.3f} {r['p50_ms']:>9.3f} {r['p99_ms']:>9.3f} "
            f"{r['mean_ms'] / base:>9.2f}x {r['mean_ms'] - base:>12.3f}"
        )
    hot = rows["executor, cache hot"]["p50_ms"]
    print(f"hot-cache call p50 {hot:.3f} ms (target < 1 ms: {'met' if hot < 1 else 'NOT met'})")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "executor.json").write_text(
        json.dumps({"index": str(args.index), "rows": rows}, indent=2)
    )
    print(f"wrote {RESULTS / 'executor.json'}")


if __name__ == "__main__":
    main()
