"""Throughput and latency of `wikisim serve` (BM25 search) vs the in-process backend, same run.

Usage: .venv/bin/python -m bench.serve [--index DIR] [--requests 3000] [--clients 16 64 200] [--workers 1]
                                       [--routes search retrieve serper jina] [--retriever bm25s]

Routes: `search` (POST /search, k=10), `retrieve` (Search-R1's POST /retrieve, topk=3 with
scores), `serper` (POST /serper/search, num=10), `jina` (GET /jina/<page URL>); each answer is
checked against the in-process one (hits, passages and scores, organic results, page Markdown).

Starts `wikisim serve --index DIR --port 0` as a subprocess. The clients cost the server as
little CPU as possible, since they share the machine's cores with it: one process (uvloop
when installed) runs every client as an asyncio task on its own keep-alive connection,
sending pre-built raw HTTP/1.1 requests, one one-query search (k=10) at a time, from a fixed
list of page-title queries. Each level runs twice: with the server's memo off (every request
searches) and on (repeats are memo hits). Before each level's clock starts, its clients send
`--warm-requests` at the same concurrency. A fresh server's first requests queue behind one
another while each is slow the first time (its postings and pages read from disk, the JVM
still compiling Lucene): over 2.19M passages the first wave of 64 alone set a p99 of 5-7 s,
against ~0.5 s once warm, and warming the server on other titles first did not remove it.
The warm-up's p99 and max are kept beside the timed figures (`warmup_p99_ms`,
`warmup_max_ms`) rather than hidden. The baseline is WikiBackend.search in this process
on the same queries. After the clock stops, every answer is decoded and checked against the
in-process one; failures (connection errors, non-200) and mismatches are counted. The
server's CPU time per request (from /proc) prices a request independently of whatever else
the machine runs. Writes `--out` (default bench/results/serve.json).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from tqdm import tqdm

RESULTS = Path(__file__).resolve().parent / "results"


def digest(hits: list) -> str:
    return hashlib.sha256(repr(hits).encode()).hexdigest()


def start_server(
    index: Path, memo_size: int, workers: int, retriever: str
) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wikisim",
            "serve",
            "--index",
            str(index),
            "--port",
            "0",
            "--memo-size",
            str(memo_size),
            "--workers",
            str(workers),
            "--retriever",
            retriever,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split("listening on ")[1].split()[0]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children (Linux /proc), to price a request."""
    seconds = 0.0
    for p in [pid, *_children(pid)]:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        seconds += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def percentiles(latencies: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(latencies, n=100, method="inclusive")
    return {
        "p50_ms": qs[49] * 1000,
        "p99_ms": qs[98] * 1000,
        "mean_ms": statistics.fmean(latencies) * 1000,
    }


ROUTES = ("search", "retrieve", "serper", "jina")


def request(route: str, host: str, query: str) -> bytes:
    """The raw HTTP/1.1 request of one call on `route` (a page title for jina, a query otherwise)."""
    if route == "jina":
        from wikisim.corpus.page import title_to_url

        return f"GET /jina/{title_to_url(query)} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    path, payload = {
        "search": ("/search", {"queries": [query], "k": 10}),
        "retrieve": ("/retrieve", {"query": query, "topk": 3, "return_scores": True}),
        "serper": ("/serper/search", {"q": query, "num": 10}),
    }[route]
    body = json.dumps(payload).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def expected_answer(route: str, local, query: str) -> str:
    """The digest of what the route must answer for `query`, computed in this process."""
    if route == "search":
        return digest(local.search([query], 10)[0])
    if route == "retrieve":
        return digest([(h.docid, h.score) for h in local.retriever.search([query], 3)[0]])
    if route == "serper":
        return digest([(h.title, h.url, h.snippet) for h in local.search([query], 10)[0]])
    from wikisim.integrations.routes_compat import page_markdown

    page = local.index.store.resolve(query)
    return digest(page_markdown(page, local.index.passages.for_page(page.id)))


def answer_digest(route: str, body: bytes) -> str:
    """The digest of a served answer, in the form `expected_answer` digests."""
    if route == "jina":
        return digest(body.decode("utf-8").split("Markdown Content:\n", 1)[1])
    data = json.loads(body)
    if route == "search":
        from wikisim.backends.cache import decode

        return digest(decode("search", data["results"][0]))
    if route == "retrieve":
        return digest([(r["document"]["id"], r["score"]) for r in data["result"][0]])
    return digest([(o["title"], o["link"], o["snippet"]) for o in data["organic"]])


async def one_client(
    host: str,
    port: int,
    jobs: list[tuple[str, bytes]],
    lat: list[float],
    answers: Counter,
    failures: list[int],
) -> None:
    """One keep-alive connection, one request in flight: the latency an env worker would see."""
    reader, writer = await asyncio.open_connection(host, port)
    for query, raw in jobs:
        start = time.perf_counter()
        try:
            writer.write(raw)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            body = await reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, StopIteration, ValueError):
            failures.append(1)
            writer.close()
            reader, writer = await asyncio.open_connection(host, port)
            continue
        lat.append(time.perf_counter() - start)
        if head[9:12] != b"200":
            failures.append(1)
        else:
            answers[(query, body)] += 1
    writer.close()


def client_process(
    url: str, route: str, warm: list[list[str]], jobs: list[list[str]], go, out
) -> None:
    """Every client as an asyncio task in this one process: the warm-up, then the timed run."""
    try:
        import uvloop
    except ImportError:
        uvloop = None
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port
    assert host is not None and port is not None, url
    prepared = [[(q, request(route, host, q)) for q in job] for job in jobs]
    warming = [[(q, request(route, host, q)) for q in job] for job in warm]
    lat: list[float] = []
    warm_lat: list[float] = []
    answers: Counter = Counter()  # warm-up answers are checked too
    failures: list[int] = []
    elapsed = 0.0

    async def main() -> None:
        nonlocal elapsed
        await asyncio.gather(
            *(one_client(host, port, job, warm_lat, answers, failures) for job in warming if job)
        )
        start = time.perf_counter()
        await asyncio.gather(
            *(one_client(host, port, job, lat, answers, failures) for job in prepared)
        )
        elapsed = time.perf_counter() - start

    go.wait()
    (uvloop.run if uvloop else asyncio.run)(main())
    out.put((lat, warm_lat, elapsed, len(failures), dict(answers)))


def spread(queries: list[str], n: int, clients: int) -> list[list[str]]:
    """n requests dealt round-robin to the clients, cycling through the queries."""
    return [[queries[i % len(queries)] for i in range(c, n, clients)] for c in range(clients)]


def run_level(
    url: str,
    route: str,
    clients: int,
    queries: list[str],
    n: int,
    expected: dict[str, str],
    warm: int,
) -> dict:
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    proc = ctx.Process(
        target=client_process,
        args=(url, route, spread(queries, warm, clients), spread(queries, n, clients), go, out),
    )
    proc.start()
    time.sleep(2.0)  # let the client process start
    go.set()
    latencies, warm_latencies, elapsed, failures, answers = out.get(timeout=1200)
    proc.join(timeout=30)
    mismatches = sum(
        count for (q, body), count in answers.items() if answer_digest(route, body) != expected[q]
    )
    return {
        "route": route,
        "clients": clients,
        "requests": n,
        "seconds": elapsed,
        "req_per_s": len(latencies) / elapsed,
        "failures": failures,
        "mismatches": mismatches,
        **percentiles(latencies),
        "warmup_requests": len(warm_latencies),
        **(
            {
                "warmup_p99_ms": percentiles(warm_latencies)["p99_ms"],
                "warmup_max_ms": max(warm_latencies) * 1000,
            }
            if len(warm_latencies) > 1
            else {}
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--index", type=Path, default=None, help="built index (default: the bundled sample)"
    )
    parser.add_argument("--requests", type=int, default=3000, help="requests per client level")
    parser.add_argument("--clients", type=int, nargs="+", default=[16, 64, 200])
    parser.add_argument("--routes", nargs="+", default=list(ROUTES), choices=ROUTES)
    parser.add_argument(
        "--warm-requests",
        type=int,
        default=1000,
        help="requests each level sends before its clock starts (not timed; 0: none)",
    )
    parser.add_argument("--workers", type=int, default=1, help="wikisim serve --workers")
    parser.add_argument("--out", type=Path, default=RESULTS / "serve.json")
    parser.add_argument(
        "--retriever", default="bm25s", help="wikisim serve --retriever, and the baseline's"
    )
    args = parser.parse_args()
    from wikisim.backends.wiki import WikiBackend

    if args.index is None:
        from wikisim.index.build import ensure_bundled_index

        args.index = ensure_bundled_index()
    load_start = os.getloadavg()[0]
    local = WikiBackend(args.index, retriever=args.retriever)
    queries = [title for _, title in local.index.store.titles()][:200]
    expected = {
        route: {q: expected_answer(route, local, q) for q in queries} for route in args.routes
    }

    lat = []
    start = time.perf_counter()
    for i in tqdm(range(args.requests), desc="in-process", leave=False):
        t = time.perf_counter()
        local.search([queries[i % len(queries)]], 10)
        lat.append(time.perf_counter() - t)
    baseline = {"req_per_s": args.requests / (time.perf_counter() - start), **percentiles(lat)}

    levels = []
    for memo_size in (
        0,
        4096,
    ):  # cold: every request searches; hot: repeated queries come from the memo
        proc, url = start_server(args.index, memo_size, args.workers, args.retriever)
        try:
            for route in args.routes:
                for c in tqdm(args.clients, desc=f"{route} memo {memo_size}", leave=False):
                    cpu = cpu_seconds(proc.pid)
                    level = run_level(
                        url, route, c, queries, args.requests, expected[route], args.warm_requests
                    )
                    level["server_cpu_ms_per_req"] = (
                        (cpu_seconds(proc.pid) - cpu)
                        * 1000
                        / (args.requests + level["warmup_requests"])
                    )
                    levels.append({"memo": memo_size > 0, **level})
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    load = os.getloadavg()[0]
    print(
        f"index {args.index}  manifest {local.manifest_hash}  cores {os.cpu_count()}  server workers "
        f"{args.workers}  load avg at start {load_start:.1f}, at end {load:.1f}"
    )
    print(
        f"in-process WikiBackend.search: {baseline['req_per_s']:.0f} req/s, "
        f"p50 {baseline['p50_ms']:.2f} ms, p99 {baseline['p99_ms']:.2f} ms"
    )
    print(
        f"{'route':>8} {'memo':>5} {'clients':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'fail':>5} {'diff':>5} "
        f"{'vs in-process':>14} {'server CPU ms/req':>18} {'=> req/s per free core':>23} "
        f"{'warm-up p99 ms':>15}"
    )
    for r in levels:
        print(
            f"{r['route']:>8} {'hot' if r['memo'] else 'off':>5} {r['clients']:>7} {r['req_per_s']:>8.0f} {r['p50_ms']:>8.2f} "
            f"{r['p99_ms']:>8.2f} {r['failures']:>5} {r['mismatches']:>5} "
            f"{r['req_per_s'] / baseline['req_per_s']:>13.2f}x {r['server_cpu_ms_per_req']:>18.3f} "
            f"{1000 / max(r['server_cpu_ms_per_req'], 1e-9):>23.0f} "
            f"{r.get('warmup_p99_ms', float('nan')):>15.0f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = {
        "index": str(args.index),
        "manifest_hash": local.manifest_hash,
        "workers": args.workers,
        "load_avg_start": load_start,
        "load_avg": load,
        "in_process": baseline,
        "serve": levels,
    }
    args.out.write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
