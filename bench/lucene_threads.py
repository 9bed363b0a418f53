"""Lucene's search latency when a big index's segments are searched on threads (issue 15).

`wikisim build` cuts a Lucene index into segments of LUCENE_SEGMENT_PASSAGES passages, and
`LuceneRetriever` searches a query's segments on threads of their own (Lucene's concurrent
IndexSearcher, one thread a segment up to the machine's cores). This bench builds Lucene
indexes of copies of a built index's passages (`--sizes`, e.g. 10k and 200k pages' worth),
then times, per question of bench/scale.py's search sample (200 HotpotQA and MuSiQue
questions, after warm-up passes over 100 corpus sentences), every index and mode
interleaved question by question:

    serial       threads=1: CPU ms of the calling thread (Lucene runs there through JNI)
    threads      threads=this machine's cores: wall ms
    segment      the slowest segment's search (CPU ms): Lucene's tasks run one after another
                 on the calling thread, each timed. With a core for each segment a query takes
                 that plus its work outside the segments (building the query, term
                 statistics, merging the lists, docids), which this cannot time apart: pyjnius
                 spends ~0.1 ms a task calling into Python, and Lucene 9.9 makes a task of
                 every segment's statistics of every term (~360 a question at 18 segments).
                 Segments run in order and share the best scores found so far, as Lucene's
                 threads do; the first runs with none, so on copies of one text (alike
                 segments) the slowest is near a segment's time alone.

at k=10 (11 fetched) and 100 deep (what the hybrid fuses). Each mode's ranked lists are
checked equal to the serial one's.

From the same question's serial time and tasks it also derives what a query would take on C
cores (`model_Cc`): the work outside the tasks (serial CPU minus the tasks' CPU) plus the
term-statistics tasks spread over C threads plus the segments' searches list-scheduled on C
threads in Lucene's order. The model is checked against the measured `threads` wall time on
this machine's cores (`model_error`; on 2 cores 9-17% low at 200k, 30-40% low on 2
segments, so read it as a lower bound), then evaluated at a core a segment and at 16.

    .venv/bin/python bench/lucene_threads.py --source DIR_OF_A_BUILT_INDEX --work /tmp/lt \
        --sizes 10k=437000,2seg=1000000,200k=8750000 \
        --out bench/results/scale/lucene-threads-model.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lucene_growth import _copies, _pages  # noqa: E402
from scale import _queries  # noqa: E402

from wikisim.index.jvm import pyserini_module  # noqa: E402
from wikisim.index.lucene_topk import concurrent_searcher  # noqa: E402
from wikisim.index.passages import Passage, PassageStore  # noqa: E402
from wikisim.index.sparse_lucene import (  # noqa: E402
    LUCENE_SEGMENT_PASSAGES,
    LuceneRetriever,
    build_lucene,
    cores,
)

DEPTHS = {"k10": 10, "deep": 100}
REPEATS = 2
WARM_PASSES = 3


def corpus(store: PassageStore, passages: int) -> Iterator[Passage]:
    """The first `passages` passages of copies of every page of `store` (ids and titles shifted)."""
    pages = _pages(store)
    base = [pages[i] for i in sorted(pages)]
    per_copy = sum(len(p) for p in base)
    shift = max(pages) + 1
    copies = -(-passages // per_copy)
    for i, p in enumerate(_copies(base, copies, shift)):
        if i == passages:
            return
        yield p


def timed_executor() -> Any:
    """A java.util.concurrent.Executor that runs each task at once on the calling thread and
    keeps its thread CPU seconds (made after the JVM has started with pyserini's classpath)."""
    from jnius import PythonJavaClass, java_method

    class Inline(PythonJavaClass):
        __javainterfaces__ = ["java/util/concurrent/Executor"]
        __javacontext__ = "app"

        def __init__(self) -> None:
            super().__init__()
            self.tasks: list[float] = []

        @java_method("(Ljava/lang/Runnable;)V")
        def execute(self, runnable: Any) -> None:
            c0 = time.thread_time()
            runnable.run()
            self.tasks.append(time.thread_time() - c0)

    return Inline()


def _modes(path: Path, cores: int) -> Opened:
    """The index opened in every mode: a function a mode, (question, depth) -> (ranked, ms)."""
    serial = LuceneRetriever(path, None, threads=1)
    parallel = LuceneRetriever(path, None, threads=cores)
    timed = LuceneRetriever(path, None, threads=1)
    assert serial._topk is not None and timed._topk is not None, "an Anserini 1.7 index"
    executor = timed_executor()
    searcher = concurrent_searcher(timed._topk._searcher, executor)
    timed._topk._searcher = searcher
    segments = timed._topk._reader.leaves().size()

    def cpu(q: str, n: int) -> tuple[Any, float]:
        c0 = time.thread_time()
        ranked = serial.ranked([q], n)[0]
        return ranked, (time.thread_time() - c0) * 1000

    def wall(q: str, n: int) -> tuple[Any, float]:
        t0 = time.perf_counter()
        ranked = parallel.ranked([q], n)[0]
        return ranked, (time.perf_counter() - t0) * 1000

    slices = len(searcher.getSlices())

    def slowest(q: str, n: int) -> tuple[Any, float]:
        executor.tasks.clear()
        ranked = timed.ranked([q], n)[0]
        # Lucene 9.9 hands the executor a task per segment and term too (term statistics,
        # ~10 us each), then one per slice: the slices' searches are the largest
        return ranked, max(executor.tasks, default=0.0) * 1000 if slices > 1 else float("nan")

    return Opened(segments, slices, executor, {"serial": cpu, "threads": wall, "segment": slowest})


@dataclass
class Opened:
    """An index's segments and slices (Lucene's units of a thread), the timed executor whose
    `tasks` are the last `segment` call's (CPU seconds each, in order), and its modes."""

    segments: int
    slices: int
    executor: Any
    modes: dict[str, Callable[[str, int], Any]]


def makespan(tasks: list[float], slices: int, cores: int) -> float:
    """Wall ms of one query's tasks on `cores` threads: the term statistics (all but the
    `slices` largest, many and small) spread evenly, then the slices' searches, each to the
    thread free first, in the order Lucene hands them out."""
    slices = min(slices, len(tasks))
    big = set(np.argsort(tasks, kind="stable")[len(tasks) - slices :].tolist())
    free = [0.0] * cores
    for i in sorted(big):
        free[free.index(min(free))] += tasks[i]
    return sum(t for i, t in enumerate(tasks) if i not in big) / cores + max(free)


def model(serial: list[float], tasks: list[list[float]], slices: int, cores: int) -> list[float]:
    """Per call: the work outside the tasks (serial CPU minus the tasks' CPU, at least 0)
    plus the tasks' makespan on `cores` threads."""
    return [
        max(0.0, s - sum(ts)) + makespan(ts, slices, cores)
        for s, ts in zip(serial, tasks, strict=True)
    ]


def measure(indexes: dict[str, Path], cores: int) -> dict[str, Any]:
    queries, warm = _queries()
    opened = {label: _modes(path, cores) for label, path in indexes.items()}
    for _ in tqdm(range(WARM_PASSES), desc="warm-up", unit=" pass"):
        for o in opened.values():
            for q in warm:
                for fn in o.modes.values():
                    for n in DEPTHS.values():
                        fn(q, n)
    out: dict[str, Any] = {
        label: {"segments": o.segments, "slices": o.slices, "differ": 0}
        for label, o in opened.items()
    }
    times: dict[tuple[str, str], list[float]] = {}
    tasks: dict[tuple[str, str], list[list[float]]] = {}
    steps = [
        (label, name, key, n, fn)
        for label, o in opened.items()
        for name, fn in o.modes.items()
        for key, n in DEPTHS.items()
    ]
    for rep in range(REPEATS):
        for i, q in enumerate(tqdm(queries, desc=f"timed pass {rep + 1}", unit=" question")):
            lists: dict[tuple[str, str], list[Any]] = {}
            for label, name, key, n, fn in steps if (i + rep) % 2 == 0 else steps[::-1]:
                ranked, ms = fn(q, n)
                lists.setdefault((label, key), []).append(ranked)
                times.setdefault((label, f"{name}_{key}"), []).append(ms)
                if name == "segment":
                    done = [t * 1000 for t in opened[label].executor.tasks]
                    tasks.setdefault((label, key), []).append(done)
            for (label, _), ranked in lists.items():
                out[label]["differ"] += sum(r != ranked[0] for r in ranked[1:])
    for (label, key), per_call in tasks.items():
        serial, slices = times[(label, f"serial_{key}")], opened[label].slices
        times[(label, f"outside_{key}")] = [
            max(0.0, s - sum(ts)) for s, ts in zip(serial, per_call, strict=True)
        ]
        times[(label, f"tasks_{key}")] = [sum(ts) for ts in per_call]
        for c in sorted({cores, slices, 16}):
            times[(label, f"model_{c}c_{key}")] = model(serial, per_call, slices, c)
    for (label, key), ts in times.items():
        out[label][f"{key}_p50_ms"] = float(np.percentile(ts, 50))
        out[label][f"{key}_p99_ms"] = float(np.percentile(ts, 99))
    for label in opened:
        for key in DEPTHS:  # the model at this machine's cores against the measured wall time
            out[label][f"model_error_{key}"] = (
                out[label][f"model_{cores}c_{key}_p50_ms"] / out[label][f"threads_{key}_p50_ms"] - 1
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="a built index (its passages)")
    parser.add_argument("--work", type=Path, required=True, help="where the indexes are built")
    parser.add_argument(
        "--sizes",
        default="10k=437000,200k=8750000",
        help="label=passages[:passages a segment],... (bench/scale.py's sizes; the segment's "
        "default LUCENE_SEGMENT_PASSAGES); ratios are the last label's against the first's",
    )
    parser.add_argument("--cores", type=int, default=cores())
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    pyserini_module("search.lucene")  # the JVM, with pyserini's classpath
    store = PassageStore(args.source / "passages.sqlite")
    indexes: dict[str, Path] = {}
    build_s: dict[str, float] = {}
    sizes: dict[str, int] = {}
    for item in args.sizes.split(","):
        label, _, spec = item.partition("=")
        n, _, per_segment = spec.partition(":")
        sizes[label] = int(n)
        path = args.work / label / "lucene"
        if not (path.is_dir() and any(path.glob("segments_*"))):
            t0 = time.perf_counter()
            stream = tqdm(
                corpus(store, int(n)), desc=f"lucene {label}", total=int(n), unit=" passage"
            )
            build_lucene(
                stream,
                path,
                threads=args.cores,
                segment_passages=int(per_segment or LUCENE_SEGMENT_PASSAGES),
            )
            build_s[label] = time.perf_counter() - t0
        indexes[label] = path
    result = measure(indexes, args.cores)
    for label in indexes:
        result[label]["passages"] = sizes[label]
        result[label]["build_s"] = build_s.get(label)
    smallest, largest = next(iter(indexes)), list(indexes)[-1]
    base = result[smallest]
    modes = ("serial", "threads", "segment", f"model_{result[largest]['slices']}c", "model_16c")
    result["ratios"] = {
        f"{mode}_{key}": result[largest][f"{mode}_{key}_p50_ms"] / base[f"serial_{key}_p50_ms"]
        for mode in modes
        for key in DEPTHS
    }
    result["cores"] = args.cores
    result["segment_passages"] = LUCENE_SEGMENT_PASSAGES
    result["command"] = " ".join(sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result, indent=1))
    for key in DEPTHS:
        print(
            f"{key}: {smallest} serial {base[f'serial_{key}_p50_ms']:.2f} ms; {largest} serial "
            f"{result[largest][f'serial_{key}_p50_ms']:.2f} ms, {args.cores} threads "
            f"{result[largest][f'threads_{key}_p50_ms']:.2f} ms (wall), slowest segment "
            f"{result[largest][f'segment_{key}_p50_ms']:.2f} ms: "
            + ", ".join(f"{m} {result['ratios'][f'{m}_{key}']:.2f}x" for m in modes)
            + f" of {smallest}"
        )
        for label in indexes:
            r, per_slice = result[label], f"model_{result[label]['slices']}c_{key}_p50_ms"
            print(
                f"  {label}: outside the tasks {r[f'outside_{key}_p50_ms']:.2f} ms, tasks "
                f"{r[f'tasks_{key}_p50_ms']:.2f} ms; model on {args.cores} cores "
                f"{r[f'model_{args.cores}c_{key}_p50_ms']:.2f} ms against "
                f"{r[f'threads_{key}_p50_ms']:.2f} measured ({r[f'model_error_{key}']:+.0%}); "
                f"a core a slice ({r['slices']}) {r[per_slice]:.2f} ms"
            )


if __name__ == "__main__":
    main()
