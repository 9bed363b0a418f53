"""Throughput and latency of `wikisim serve` (BM25 search) vs the in-process backend, same run.

Usage: .venv/bin/python -m bench.serve [--index DIR] [--requests 3000] [--clients 1 4 16]

Starts `wikisim serve --index DIR --port 0` as a subprocess. Clients are env-worker-like:
up to 4 client processes, each running threads with their own RemoteBackend (keep-alive
httpx, through the executor), issuing one-query searches (k=10) from a fixed list of 200
page-title queries; 16 clients = 4 processes x 4 threads. Each level runs twice: with the
server's memo off (every request searches) and on (repeats are memo hits). The baseline is
WikiBackend.search in this process on the same queries. Every remote answer is checked
against the in-process one; failures and mismatches are counted. The load generator shares
the machine's cores with the server, so the server's CPU time per request (from /proc) is
reported too: it prices a request independently of whatever else the machine runs. Writes bench/results/serve.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm import tqdm

RESULTS = Path(__file__).resolve().parent / "results"
MAX_PROCS = 4


def digest(hits: list) -> str:
    return hashlib.sha256(repr(hits).encode()).hexdigest()


def start_server(index: Path, memo_size: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "wikisim", "serve", "--index", str(index), "--port", "0",
                             "--memo-size", str(memo_size)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split("listening on ")[1].split()[0]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to price a request independent of load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(latencies: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"p50_ms": qs[49] * 1000, "p99_ms": qs[98] * 1000, "mean_ms": statistics.fmean(latencies) * 1000}


def client_process(url: str, jobs: list[list[str]], expected: dict[str, str], go, out) -> None:
    """One env-worker-like process: a thread per job list, each with its own RemoteBackend."""
    from wikisim.tools.remote import RemoteBackend

    clients = [RemoteBackend(url) for _ in jobs]
    results: list[tuple[list[float], int, int]] = []
    lock = threading.Lock()

    def work(c: int) -> None:
        lat, bad, wrong = [], 0, 0
        for q in jobs[c]:
            start = time.perf_counter()
            try:
                hits = clients[c].search([q], 10)[0]
            except Exception:  # noqa: BLE001 - a benchmark counts failures, it does not stop
                bad += 1
                continue
            lat.append(time.perf_counter() - start)
            wrong += digest(hits) != expected[q]
        with lock:
            results.append((lat, bad, wrong))

    go.wait()
    with ThreadPoolExecutor(len(jobs)) as pool:
        list(pool.map(work, range(len(jobs))))
    degraded = sum(c.stats().get("search", {}).get("degraded", 0) for c in clients)
    out.put(([x for r in results for x in r[0]], sum(r[1] for r in results) + degraded, sum(r[2] for r in results)))


def run_level(url: str, clients: int, queries: list[str], n: int, expected: dict[str, str]) -> dict:
    ctx = mp.get_context("spawn")
    procs_n = min(clients, MAX_PROCS)
    jobs = [[queries[i % len(queries)] for i in range(c, n, clients)] for c in range(clients)]
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=client_process, args=(url, jobs[p::procs_n], expected, go, out))
             for p in range(procs_n)]
    for p in procs:
        p.start()
    time.sleep(3.0)  # let the client processes import and connect before the clock starts
    start = time.perf_counter()
    go.set()
    parts = [out.get(timeout=600) for _ in procs]
    elapsed = time.perf_counter() - start
    for p in procs:
        p.join(timeout=30)
    latencies = [x for part in parts for x in part[0]]
    return {"clients": clients, "processes": procs_n, "requests": n, "seconds": elapsed,
            "req_per_s": len(latencies) / elapsed, "failures": sum(p[1] for p in parts),
            "mismatches": sum(p[2] for p in parts), **percentiles(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None, help="built index (default: the bundled sample)")
    parser.add_argument("--requests", type=int, default=3000, help="requests per client level")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    from wikisim.tools.wiki_backend import WikiBackend

    if args.index is None:
        from wikisim.build import ensure_sample_index

        args.index = ensure_sample_index()
    local = WikiBackend(args.index, retriever="bm25s")
    queries = [title for _, title in local.index.store.titles()][:200]
    expected = {q: digest(local.search([q], 10)[0]) for q in queries}

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
            for c in tqdm(args.clients, desc=f"memo {memo_size}", leave=False):
                cpu = cpu_seconds(proc.pid)
                level = run_level(url, c, queries, args.requests, expected)
                level["server_cpu_ms_per_req"] = (cpu_seconds(proc.pid) - cpu) * 1000 / args.requests
                levels.append({"memo": memo_size > 0, **level})
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    load = os.getloadavg()[0]
    print(f"index {args.index}  manifest {local.manifest_hash}  cores {os.cpu_count()}  load avg {load:.1f}")
    print(f"in-process WikiBackend.search: {baseline['req_per_s']:.0f} req/s, "
          f"p50 {baseline['p50_ms']:.2f} ms, p99 {baseline['p99_ms']:.2f} ms")
    print(f"{'memo':>5} {'clients':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'fail':>5} {'diff':>5} "
          f"{'vs in-process':>14} {'server CPU ms/req':>18} {'=> req/s per free core':>23}")
    for r in levels:
        print(f"{'hot' if r['memo'] else 'off':>5} {r['clients']:>7} {r['req_per_s']:>8.0f} {r['p50_ms']:>8.2f} "
              f"{r['p99_ms']:>8.2f} {r['failures']:>5} {r['mismatches']:>5} "
              f"{r['req_per_s'] / baseline['req_per_s']:>13.2f}x {r['server_cpu_ms_per_req']:>18.3f} "
              f"{1000 / max(r['server_cpu_ms_per_req'], 1e-9):>23.0f}")
    RESULTS.mkdir(exist_ok=True)
    out = {"index": str(args.index), "manifest_hash": local.manifest_hash, "load_avg": load,
           "in_process": baseline, "serve": levels}
    (RESULTS / "serve.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS / 'serve.json'}")


if __name__ == "__main__":
    main()
