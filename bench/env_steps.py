"""Env steps/s for search, visit and python actions, in-process and with 1, 2 and 4 async workers,
against calling the env's retriever directly in the same run (the env's overhead as a ratio).

    .venv/bin/python bench/env_steps.py [--index DIR] [--retriever bm25s] [--steps 300]

Writes bench/results/env_steps.json (or --out). Targets: >= 500 search steps/s in one process
with bm25s; env within 2x of the raw retriever; 4 async workers >= 1.6x one on 2 cores.
Once the in-process env has started pyserini's JVM (Lucene, or the hybrid past
BM25S_MAX_PASSAGES), the async workers start with forkserver: a fork could not use it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from gymnasium.vector import AsyncVectorEnv
from tqdm import tqdm

from wikisim.env.core import WikiSimEnv
from wikisim.env.tasks import load_tasks
from wikisim.index import open_index
from wikisim.index.base import DEFAULT_RETRIEVER, DENSE_RETRIEVERS, RETRIEVERS
from wikisim.index.build import ensure_bundled_index
from wikisim.index.jvm import worker_start_method
from wikisim.tools.registry import python_available

RESULTS = Path(__file__).parent / "results"


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def queries() -> list[str]:
    qs = [t.question for t in load_tasks()]
    qs += [
        t.question
        for t in load_tasks(Path(__file__).parents[1] / "data" / "qa" / "hotpotqa-train-100.json")
    ]
    return qs


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def raw_retriever(index: Path, name: str, qs: list[str], steps: int, k: int) -> float:
    retriever = open_index(index).retriever(name)
    retriever.search([qs[0]], k)  # load
    start = time.perf_counter()
    for i in tqdm(range(steps), desc=f"raw {name} k={k}", leave=False):
        retriever.search([qs[i % len(qs)]], k)
    return rate(steps, time.perf_counter() - start)


def env_rate(env: WikiSimEnv, actions: list, desc: str) -> tuple[float, list[float]]:
    env.reset(seed=0)
    latencies = []
    start = time.perf_counter()
    for a in tqdm(actions, desc=desc, leave=False):
        _, _, terminated, truncated, info = env.step(a)
        latencies.extend(info["latency_s"].values())
        if terminated or truncated:
            env.reset()
    return rate(len(actions), time.perf_counter() - start), latencies


def rss_mb(pid: int) -> dict[str, float]:
    """Resident and proportional set size (shared pages split between processes), in MB."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, *rest = line.split()
        if key in ("Rss:", "Pss:"):
            out[key[:-1].lower() + "_mb"] = int(rest[0]) / 1024
    return out


def async_rates(
    index: Path,
    retriever: str,
    counts: tuple[int, ...],
    actions: list,
    python: bool,
    blocks: int = 6,
) -> dict:
    """Search steps/s of AsyncVectorEnvs with each worker count, timed in alternating blocks.

    All vector envs are up at once and take turns (a block of steps each, `blocks` times),
    so a change in the machine's load hits every count alike and the ratios stay fair.
    """
    context = worker_start_method()
    vecs = {
        n: AsyncVectorEnv(
            [lambda: WikiSimEnv(index=index, retriever=retriever, max_turns=10_000, python=python)]
            * n,
            shared_memory=False,
            context=context,
        )
        for n in counts
    }
    for n, vec in vecs.items():
        vec.reset(seed=0)
        vec.step([actions[0]] * n)  # warm every worker
    steps = dict.fromkeys(counts, 0)
    seconds = dict.fromkeys(counts, 0.0)
    per_block = max(1, len(actions) // blocks)
    # Block 0 is untimed: each worker process warms its own caches (stems, sentence layouts,
    # passages) on the block's actions, so every count is then timed in the same steady state.
    for block in tqdm(range(blocks + 1), desc=f"async x{'/'.join(map(str, counts))}", leave=False):
        for n, vec in vecs.items():
            start = time.perf_counter()
            for r in range(max(1, per_block // n)):
                vec.step([actions[(r * n + j) % len(actions)] for j in range(n)])
            if block:
                steps[n] += max(1, per_block // n) * n
                seconds[n] += time.perf_counter() - start
    out = {
        n: {
            "steps_per_s": rate(steps[n], seconds[n]),
            "start_method": context or "default",
            "worker_memory": [rss_mb(p.pid) for p in vec.processes if p.pid is not None],
        }
        for n, vec in vecs.items()
    }
    for vec in vecs.values():
        vec.close()
    return out


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--retriever", choices=RETRIEVERS, default=DEFAULT_RETRIEVER)
    parser.add_argument("--out", type=Path, default=RESULTS / "env_steps.json")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--python-steps", type=int, default=40)
    args = parser.parse_args()
    index = args.index or ensure_bundled_index(dense=args.retriever in DENSE_RETRIEVERS)
    qs = queries()
    has_python = python_available()
    env = WikiSimEnv(index=index, retriever=args.retriever, max_turns=10_000, python=has_python)
    opened = open_index(index)
    search = [call("search", query=qs[i % len(qs)]) for i in range(args.steps)]
    titles = [t for _, t in opened.store.titles()]
    visit = [
        call("visit", url=titles[i % len(titles)], goal=qs[i % len(qs)])
        for i in range(args.steps // 2)
    ]
    python = [call("python", code=f"print({i} * 7)") for i in range(args.python_steps)]

    out: dict = {
        "index": str(index),
        "manifest_hash": env.manifest_hash,
        "retriever": args.retriever,
        "passages": len(opened.require_passages()),
        "cpus": os.cpu_count(),
        "load_avg_at_start": os.getloadavg()[0],
    }
    out["raw_k10_per_s"] = raw_retriever(index, args.retriever, qs, args.steps, 10)
    out["raw_k30_per_s"] = raw_retriever(index, args.retriever, qs, args.steps, 30)
    out["env_search_per_s"], _ = env_rate(env, search, "env search")
    out["env_visit_per_s"], _ = env_rate(env, visit, "env visit")
    if has_python:
        out["env_python_per_s"], lat = env_rate(env, python, "env python")
        out["python_latency_p50_ms"], out["python_latency_p99_ms"] = (
            1000 * percentile(lat, 0.5),
            1000 * percentile(lat, 0.99),
        )
    out["env_vs_raw_k10"] = out["raw_k10_per_s"] / out["env_search_per_s"]
    out["env_vs_raw_k30"] = out["raw_k30_per_s"] / out["env_search_per_s"]
    out["in_process_memory"] = rss_mb(os.getpid())
    for workers, result in async_rates(index, args.retriever, (1, 2, 4), search, False).items():
        out[f"async{workers}_search"] = result
    out["async4_over_in_process"] = out["async4_search"]["steps_per_s"] / out["env_search_per_s"]
    for base in (1, 2):
        out[f"async4_over_async{base}"] = (
            out["async4_search"]["steps_per_s"] / out[f"async{base}_search"]["steps_per_s"]
        )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(
        f"raw {args.retriever} k=10: {out['raw_k10_per_s']:.0f}/s   k=30: {out['raw_k30_per_s']:.0f}/s"
    )
    print(
        f"env search: {out['env_search_per_s']:.0f} steps/s  (raw/env = {out['env_vs_raw_k10']:.2f}x at k=10, "
        f"{out['env_vs_raw_k30']:.2f}x at the env's fetch depth k=30)"
    )
    print(f"env visit: {out['env_visit_per_s']:.0f} steps/s")
    if has_python:
        print(
            f"env python: {out['env_python_per_s']:.1f} steps/s; latency p50 {out['python_latency_p50_ms']:.0f} ms, "
            f"p99 {out['python_latency_p99_ms']:.0f} ms"
        )
    for w in (1, 2, 4):
        mem = ", ".join(
            f"{m['rss_mb']:.0f}/{m['pss_mb']:.0f}" for m in out[f"async{w}_search"]["worker_memory"]
        )
        print(
            f"async x{w} ({out[f'async{w}_search']['start_method']}): "
            f"{out[f'async{w}_search']['steps_per_s']:.0f} search steps/s; worker RSS/PSS MB: {mem}"
        )
    print(
        f"async x4 / x1: {out['async4_over_async1']:.2f}x (target >= 1.6x); x4 / x2: {out['async4_over_async2']:.2f}x; "
        f"x4 / in-process: {out['async4_over_in_process']:.2f}x "
        f"(load average at start {out['load_avg_at_start']:.1f} on {out['cpus']} cores)"
    )


if __name__ == "__main__":
    main()
