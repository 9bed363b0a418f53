"""Throughput and latency of `wikisim serve` (BM25 search) vs the in-process backend, same run.

Usage: .venv/bin/python -m bench.serve [--index DIR] [--requests 3000] [--clients 1 4 16]

Starts `wikisim serve --index DIR --port 0` as a subprocess, then for each client count runs
that many threads, each with its own RemoteBackend (keep-alive httpx, through the executor),
issuing one-query searches (k=10) from a fixed list of 200 page-title queries, once with the
server's memo off (every request searches) and once on (repeats are memo hits). The baseline is
WikiBackend.search in this process on the same queries. Checks that every remote answer
equals the in-process one and counts failures. Writes bench/results/serve.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm import tqdm

from wikisim.tools.remote import RemoteBackend
from wikisim.tools.wiki_backend import WikiBackend

RESULTS = Path(__file__).resolve().parent / "results"


def start_server(index: Path, memo_size: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "wikisim", "serve", "--index", str(index), "--port", "0",
                             "--memo-size", str(memo_size)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split("listening on ")[1].split()[0]


def percentiles(latencies: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"p50_ms": qs[49] * 1000, "p99_ms": qs[98] * 1000, "mean_ms": statistics.fmean(latencies) * 1000}


def run_level(clients: list, queries: list[str], n: int, expected: dict[str, list]) -> dict:
    latencies: list[float] = []
    failures = mismatches = 0
    lock = threading.Lock()
    bar = tqdm(total=n, desc=f"{len(clients)} clients", leave=False)

    def worker(c: int) -> None:
        nonlocal failures, mismatches
        mine, bad, wrong = [], 0, 0
        for i in range(c, n, len(clients)):
            q = queries[i % len(queries)]
            start = time.perf_counter()
            try:
                hits = clients[c].search([q], 10)[0]
            except Exception:  # noqa: BLE001 - a benchmark counts failures, it does not stop
                bad += 1
                continue
            mine.append(time.perf_counter() - start)
            wrong += hits != expected[q]
            bar.update(1)
        with lock:
            latencies.extend(mine)
            failures += bad
            mismatches += wrong

    start = time.perf_counter()
    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(worker, range(len(clients))))
    elapsed = time.perf_counter() - start
    bar.close()
    degraded = sum(c.stats().get("search", {}).get("degraded", 0) for c in clients)
    return {"clients": len(clients), "requests": n, "seconds": elapsed, "req_per_s": len(latencies) / elapsed,
            "failures": failures + degraded, "mismatches": mismatches, **percentiles(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None, help="built index (default: the bundled sample)")
    parser.add_argument("--requests", type=int, default=3000, help="requests per client level")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    if args.index is None:
        from wikisim.build import ensure_sample_index

        args.index = ensure_sample_index()
    local = WikiBackend(args.index, retriever="bm25s")
    queries = [title for _, title in local.index.store.titles()][:200]
    expected = {q: local.search([q], 10)[0] for q in queries}

    lat = []
    start = time.perf_counter()
    for i in tqdm(range(args.requests), desc="in-process", leave=False):
        t = time.perf_counter()
        local.search([queries[i % len(queries)]], 10)
        lat.append(time.perf_counter() - t)
    baseline = {"req_per_s": args.requests / (time.perf_counter() - start), **percentiles(lat)}

    levels = []
    for memo_size in (0, 4096):  # cold: every request searches; hot: repeated queries come from the memo
        proc, url = start_server(args.index, memo_size)
        try:
            for c in args.clients:
                clients = [RemoteBackend(url) for _ in range(c)]
                levels.append({"memo": memo_size > 0, **run_level(clients, queries, args.requests, expected)})
                for client in clients:
                    client.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    print(f"index {args.index}  manifest {local.manifest_hash}")
    print(f"in-process WikiBackend.search: {baseline['req_per_s']:.0f} req/s, "
          f"p50 {baseline['p50_ms']:.2f} ms, p99 {baseline['p99_ms']:.2f} ms")
    print(f"{'memo':>5} {'clients':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'fail':>5} {'diff':>5} {'vs in-process':>14}")
    for r in levels:
        print(f"{'hot' if r['memo'] else 'off':>5} {r['clients']:>7} {r['req_per_s']:>8.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
              f"{r['failures']:>5} {r['mismatches']:>5} {r['req_per_s'] / baseline['req_per_s']:>13.2f}x")
    RESULTS.mkdir(exist_ok=True)
    out = {"index": str(args.index), "manifest_hash": local.manifest_hash, "in_process": baseline, "serve": levels}
    (RESULTS / "serve.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS / 'serve.json'}")


if __name__ == "__main__":
    main()
