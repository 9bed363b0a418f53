"""How every build stage grows with the dump: time, peak memory and disk at N pages, fitted.

For each N, a dump of N pages is made by replicating the bundled sample's real articles
(bench/replicate.py: new titles and ids, links rewired among the copies), then each
stage runs in a process of its own, so its peak resident memory is its own (read from
the kernel's rusage of that process when it exits):

    parse       read_pages over the XML (--parse-workers processes, default 1; CPU seconds
                sum them), pages pickled to a scratch file; the dump is deleted once
                parsed (--keep-dump keeps it), being as large as the pages' store
    page_store  the pickled pages into pages.sqlite (PageStoreWriter)
    passages    pages.sqlite -> split_page -> passages.sqlite (spans of the page text)
    bm25s       the streamed two-pass bm25s build
    lucene      pyserini's LuceneIndexer (its JVM runs inside the stage process)
    dense       encodes a fixed sample of passages on the CPU to measure the rate, then
                writes vectors for every passage (the sample's, with seeded noise) to
                memory-mapped shards and builds and searches the compressed faiss index
                (IVF-SQ8, what "auto" picks for a full dump) over all of them: time, memory
                and disk are those of the full count; recall@10 against exact search is
                on these synthetic vectors
    synth       `wikisim synth` on the index: a sample of questions from a few seeds
    search      p50/p99 latency of bm25s and Lucene (and dense) over fixed queries

"seconds" is CPU time (user + system of the stage process and its children), since the
machine this ran on is shared and wall time would measure the neighbours; wall time is
kept beside it. Exponents are least-squares slopes on log-log against the page count. Projections scale
each stage's time and memory at the largest N by words of text (a copy of a sample page
is ~12x an average enwiki article, so pages would mislead), with the fitted exponents,
onto a 16-core, 64 GB workstation: parse and Lucene split over 16 cores, the rest on one.

    nice -n 10 .venv/bin/python bench/scale.py --pages 10000,50000 --out bench/results/scale

Stages already done for an N are reused (DIR/work/N/STAGE.json): delete the file to redo one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

STAGES = ("parse", "page_store", "passages", "bm25s", "lucene", "dense", "synth", "search")
BUILD_STAGES = ("parse", "page_store", "passages", "bm25s", "lucene", "dense")
DENSE_SAMPLE = 1024  # passages encoded for the rate (the rest of the vectors derive from them)
QUERIES = 200
INDEX_FIT_FROM_PAGES = 10_000  # the dense index's time exponent is fitted from here up
WARM_QUERIES = 100
# Full-dump sizes the projections scale to, in words of article text (what every stage reads):
# enwiki ~4.5e9 words (Wikipedia:Size of Wikipedia, 2024-25); wiki-18 21,015,324 passages x 100.
TARGETS: dict[str, dict[str, float]] = {
    "enwiki": {"pages": 6_800_000, "words": 4.5e9},
    "wiki18": {"pages": 21_015_324, "words": 2_101_532_400, "passages": 21_015_324},
}
CORES, RAM_GB = 16, 64
PARALLEL = {
    "parse": CORES,
    "lucene": CORES,
}  # stages that split over cores (by file / indexer threads)


def _size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
        if path.exists()
        else 0.0
    )


# --- stages (each runs in its own process: `scale.py --stage NAME --work DIR`) --------------------


def stage_parse(work: Path, workers: int) -> dict[str, Any]:
    from wikisim.corpus import Page, read_pages

    pages = words = chars = 0
    with open(work / "parsed.pickle", "wb") as f:
        for item in read_pages([work / "dump.xml"], workers=workers):
            pickle.dump(item, f, protocol=pickle.HIGHEST_PROTOCOL)
            if isinstance(item, Page):
                pages += 1
                words += len(item.text.split())
                chars += len(item.text.encode("utf-8"))
    return {
        "disk_mb": _size_mb(work / "dump.xml"),
        "pages": pages,
        "words": words,
        "text_mb": chars / 1e6,
        "workers": workers,
    }


def _pickled(path: Path):
    with open(path, "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return


def stage_page_store(work: Path) -> dict[str, Any]:
    from wikisim.corpus import PageStoreWriter

    index = work / "index"
    index.mkdir(exist_ok=True)
    (index / "pages.sqlite").unlink(missing_ok=True)
    with PageStoreWriter(index / "pages.sqlite") as writer:
        for item in _pickled(work / "parsed.pickle"):
            writer.add(item)
    (work / "parsed.pickle").unlink()
    return {"disk_mb": _size_mb(index / "pages.sqlite")}


def stage_passages(work: Path) -> dict[str, Any]:
    from wikisim.corpus import PageStore
    from wikisim.index.passages import PassageStoreWriter, split_page

    index = work / "index"
    (index / "passages.sqlite").unlink(missing_ok=True)
    store = PageStore(index / "pages.sqlite")
    writer = PassageStoreWriter(index / "passages.sqlite", pages=index / "pages.sqlite")
    for page in store.pages():
        writer.add(split_page(page, 150), page.text)
    writer.close()
    return {"disk_mb": _size_mb(index / "passages.sqlite"), "passages": len(writer)}


def stage_bm25s(work: Path) -> dict[str, Any]:
    from wikisim.index.passages import PassageStore
    from wikisim.index.sparse_bm25s import build_bm25s

    out = work / "index" / "bm25s"
    shutil.rmtree(out, ignore_errors=True)
    n = build_bm25s(iter(PassageStore(work / "index" / "passages.sqlite")), out)
    return {"disk_mb": _size_mb(out), "docs": n}


def stage_lucene(work: Path) -> dict[str, Any]:
    from wikisim.index.passages import PassageStore
    from wikisim.index.sparse_lucene import LUCENE_BUFFER_MB, build_lucene

    out = work / "index" / "lucene"
    shutil.rmtree(out, ignore_errors=True)
    info = build_lucene(iter(PassageStore(work / "index" / "passages.sqlite")), out)
    return {"disk_mb": _size_mb(out), "buffer_mb": LUCENE_BUFFER_MB, **info}


def stage_dense(work: Path) -> dict[str, Any]:
    import torch

    from wikisim.index.dense import (
        MAX_SEQ_TOKENS,
        build_from_shards,
        load_encoder,
        model_record,
        resolve_model_path,
        write_shards,
    )
    from wikisim.index.passages import PassageStore

    torch.set_num_threads(1)  # a per-core rate
    store = PassageStore(work / "index" / "passages.sqlite")
    n = len(store)
    rows = np.linspace(0, n - 1, min(DENSE_SAMPLE, n)).astype(int).tolist()
    texts = [p.contents for p in store.by_rows(rows).values()]
    model = load_encoder(str(resolve_model_path(None)), "cpu")
    t0 = time.process_time()  # CPU time: one torch thread, so one core's time whatever the load
    sample = model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    encode_s = time.process_time() - t0
    out = work / "index" / "dense"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shards = work / "dense.shards"
    shutil.rmtree(shards, ignore_errors=True)

    def synthetic(start: int, stop: int) -> np.ndarray:
        """Rows start..stop: sample vectors plus seeded noise, unit length (no two alike)."""
        rng = np.random.default_rng(start)
        v = sample[np.arange(start, stop) % len(sample)] + rng.normal(
            0, 0.05, (stop - start, sample.shape[1])
        )
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    t1 = time.perf_counter()
    write_shards(shards, n, sample.shape[1], synthetic)
    info = build_from_shards(shards, out, "ivfsq")  # what "auto" picks past 200k passages
    build_s = time.perf_counter() - t1
    shards_mb = _size_mb(shards)
    shutil.rmtree(shards)
    (out / "model.json").write_text(
        json.dumps({"path": str(resolve_model_path(None))}), encoding="utf-8"
    )
    (work / "dense_model.json").write_text(json.dumps(model_record(None)), encoding="utf-8")
    return {
        "disk_mb": _size_mb(out) + shards_mb,
        "index_mb": _size_mb(out),
        "shards_mb": shards_mb,
        "encode_passages_per_s_1core": len(texts) / encode_s,
        "encode_sample": len(texts),
        "max_seq_tokens": MAX_SEQ_TOKENS,
        "build_seconds": build_s,
        **info,
    }


def _write_manifest(work: Path) -> Path:
    """A manifest over what the stages built, so `open_index` (search, synth) reads the directory."""
    from wikisim.index.manifest import FORMAT, write_manifest

    index = work / "index"
    indexes = {}
    for name in ("bm25s", "lucene", "dense"):
        record = work / f"{name}.json"
        if record.is_file() and (index / name).is_dir():
            result = json.loads(record.read_text(encoding="utf-8"))
            indexes[name] = {
                k: v for k, v in result.items() if k not in ("seconds", "peak_rss_mb", "disk_mb")
            }
    versions = {}
    if (work / "dense_model.json").is_file():
        versions["embedding_model"] = json.loads(
            (work / "dense_model.json").read_text(encoding="utf-8")
        )
    write_manifest(
        index, {"format": FORMAT, "bench": "scale", "indexes": indexes, "versions": versions}
    )
    return index


def stage_synth(work: Path) -> dict[str, Any]:
    index = _write_manifest(work)
    out = work / "synth.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "wikisim",
        "synth",
        "--index",
        str(index),
        "--n",
        "20",
        "--seed",
        "0",
        "--expand-seeds",
        "10",
        "--out",
        str(out),
        "--quiet",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return {"disk_mb": 0.0, "error": done.stderr.strip().splitlines()[-1:]}
    kept = len(out.read_text(encoding="utf-8").splitlines()) if out.is_file() else 0
    return {"disk_mb": _size_mb(out), "questions": kept, "command": " ".join(cmd[1:])}


def _queries() -> tuple[list[str], list[str]]:
    """The timed questions (HotpotQA and MuSiQue), and others to warm up with (corpus sentences)."""
    from wikisim.paths import QA_DIR

    qa = json.loads((QA_DIR / "hotpotqa-train-100.json").read_text(encoding="utf-8"))
    qa += json.loads((QA_DIR / "musique-train-100.json").read_text(encoding="utf-8"))
    corpus = json.loads((QA_DIR / "hotpotqa-train-100-corpus.json").read_text(encoding="utf-8"))
    warm = [sentences[0] for sentences in corpus.values() if sentences][:WARM_QUERIES]
    return [q["question"] for q in qa][:QUERIES], warm


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def stage_search(work: Path) -> dict[str, Any]:
    """Per query: CPU time of the calling thread (Lucene runs there through JNI, the encoder with
    one torch thread; the JVM's JIT and GC threads are left out), split into ranking and making
    the hits (passage lookups and snippets); wall time beside it."""
    import torch

    from wikisim.index.hybrid import FUSION_DEPTH
    from wikisim.index.layout import open_index
    from wikisim.index.ranked import RankedRetriever
    from wikisim.index.sparse_lucene import SEARCH_THREADS_VAR

    torch.set_num_threads(1)
    # Lucene on one thread too, whose CPU is counted (bench/lucene_threads.py times a big
    # index's segments searched on threads)
    os.environ[SEARCH_THREADS_VAR] = "1"
    index = open_index(_write_manifest(work))
    queries, warm = _queries()
    out: dict[str, Any] = {
        "disk_mb": 0.0,
        "queries": len(queries),
        "passages": len(index.require_passages()),
        "deep": FUSION_DEPTH,
    }
    for backend in ("bm25s", "lucene", "dense"):
        if backend not in index.retrievers:
            continue
        rss0 = _rss_mb()
        retriever = cast(RankedRetriever, index.retriever(backend))
        retriever.search(warm, k=10)  # model load, JVM and its JIT, first pages
        total, rank, hits, wall = [], [], [], []
        for q in queries:
            t0, c0 = time.perf_counter(), time.thread_time()
            ranked = retriever.ranked([q], 10)[0]
            c1 = time.thread_time()
            retriever.hits(q, ranked)
            c2 = time.thread_time()
            wall.append((time.perf_counter() - t0) * 1000)
            total.append((c2 - c0) * 1000)
            rank.append((c1 - c0) * 1000)
            hits.append((c2 - c1) * 1000)
        deep = []  # the hybrid reads each list FUSION_DEPTH deep before fusing
        for q in queries:
            c0 = time.thread_time()
            retriever.ranked([q], FUSION_DEPTH)
            deep.append((time.thread_time() - c0) * 1000)
        for name, times in (
            ("cpu", total),
            ("rank_cpu", rank),
            ("hits_cpu", hits),
            ("wall", wall),
            ("deep_rank_cpu", deep),
        ):
            out[f"{backend}_{name}_p50_ms"] = float(np.percentile(times, 50))
            out[f"{backend}_{name}_p99_ms"] = float(np.percentile(times, 99))
        # what opening and querying it added: vocabulary, arrays paged in, a model
        out[f"{backend}_rss_mb"] = _rss_mb() - rss0
    return out


def run_stage(name: str, work: Path, parse_workers: int) -> None:
    """Inside the stage's own process: run it, print its record as one JSON line."""
    t0 = time.perf_counter()
    if name == "parse":
        result = stage_parse(work, parse_workers)
    else:
        result = globals()[f"stage_{name}"](work)
    result["seconds"] = time.perf_counter() - t0
    print(json.dumps(result))


# --- driver -----------------------------------------------------------------------------------------


def measure(name: str, work: Path, parse_workers: int = 1) -> dict[str, Any]:
    """Run a stage in a child process; its record plus its peak RSS (the largest of it and its
    children: a parse worker's, with several)."""
    record = work / f"{name}.json"
    if record.is_file():
        return json.loads(record.read_text(encoding="utf-8"))
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            *("--stage", name, "--work", str(work), "--parse-workers", str(parse_workers)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"stage {name} at {work} failed (exit {proc.returncode})")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["wall_seconds"] = result.pop("seconds")
    # CPU seconds (user + system of the stage process and the processes it waited for, which
    # wait4 sums in): on a machine shared with other jobs the wall clock measures the neighbours.
    result["seconds"] = usage.ru_utime + usage.ru_stime
    result["peak_rss_mb"] = (
        usage.ru_maxrss / 1024
    )  # KiB on Linux: the largest of it and its children
    record.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


def exponent(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    return float(np.polyfit([p[0] for p in pts], [p[1] for p in pts], 1)[0])


def _dense_projection(d: dict[str, Any], passages: float, gpu_rate: float | None) -> dict[str, Any]:
    """Dense at `passages`: encoding from the measured rate, the index from its own fit.

    The index's CPU time (the stage's less the sample's encoding) is fitted against the
    passage count over the runs of at least INDEX_FIT_FROM_PAGES pages (small runs are mostly
    fixed costs; an IVF index grows faster than linearly while nlist ~ sqrt(n), linearly past
    NLIST_MAX, so across both the fit overstates a larger corpus's time); its memory is what
    the stage held besides the index at the largest N plus the index itself, which faiss
    keeps in RAM while it adds vectors.
    """
    docs = d["docs"]
    index_s = [
        s - n / r
        for s, n, r in zip(
            d["seconds"], d["encode_sample"], d["encode_passages_per_s_1core"], strict=True
        )
    ]
    big = [i for i, p in enumerate(d["pages"]) if p >= INDEX_FIT_FROM_PAGES]
    big = big if len(big) >= 2 else list(range(len(docs)))
    te = max(1.0, exponent([docs[i] for i in big], [index_s[i] for i in big]) or 1.0)
    index_gb = d["index_mb"][-1] * passages / docs[-1] / 1000
    rate = d["encode_passages_per_s_1core"][-1]
    return {
        "passages": passages,
        "index_hours_1_core": index_s[-1] * (passages / docs[-1]) ** te / 3600,
        "index_seconds_exponent": te,
        "index_gb": index_gb,
        "shards_gb": d["shards_mb"][-1] * passages / docs[-1] / 1000,
        "peak_rss_gb": (d["peak_rss_mb"][-1] - d["index_mb"][-1]) / 1000 + index_gb,
        "recall_at_10_measured": d["recall_at_10"][-1],
        "encode_hours_cpu_16_cores": passages / (rate * CORES) / 3600,
        "encode_hours_one_gpu": passages / gpu_rate / 3600
        if gpu_rate
        else "needs bench/dense_rate.py on a GPU",
    }


def project(
    stages: dict[str, dict[str, Any]], words: dict[int, int], dense_rate_gpu: float | None
) -> dict[str, Any]:
    """Each build stage at a full dump: time and memory scaled by words with the fitted exponents
    (at least 1 for time: fixed start-up costs flatten small runs' slopes). Past
    BM25S_MAX_PASSAGES `wikisim build` leaves bm25s out, so the totals do too ("with_bm25s":
    what `--bm25s` adds back)."""
    from wikisim.index.layout import BM25S_MAX_PASSAGES

    out: dict[str, Any] = {
        "machine": f"{CORES} cores, {RAM_GB} GB",
        "scaled_by": "words of article text",
    }
    for target, size in TARGETS.items():
        rows: dict[str, Any] = {}
        for name in BUILD_STAGES:
            s = stages.get(name)
            if not s or not s["seconds"] or name == "dense":
                continue
            factor = size["words"] / words[s["pages"][-1]]  # from the stage's largest run
            te = max(1.0, s["seconds_exponent"] or 1.0)
            re_ = max(0.0, s["rss_exponent"] or 0.0)
            rows[name] = {
                "hours": s["seconds"][-1] * factor**te / PARALLEL.get(name, 1) / 3600,
                "peak_rss_gb": s["peak_rss_mb"][-1] * factor**re_ / 1000,
                "disk_gb": s["disk_mb"][-1] * factor / 1000,
            }
        p = stages["passages"]
        passages = size.get("passages", p["passages"][-1] * size["words"] / words[p["pages"][-1]])
        bm25s_built = passages <= BM25S_MAX_PASSAGES
        sparse = [k for k in rows if bm25s_built or k != "bm25s"]
        if "dense" in stages:
            rows["dense"] = _dense_projection(stages["dense"], passages, dense_rate_gpu)
        out[target] = {
            "stages": rows,
            "passages": passages,
            "bm25s_built_by_default": bm25s_built,
            "without_dense_hours": sum(rows[k]["hours"] for k in sparse),
            "without_dense_peak_rss_gb": max(rows[k]["peak_rss_gb"] for k in sparse),
            "without_dense_disk_gb": sum(rows[k]["disk_gb"] for k in sparse),
        }
        if not bm25s_built and "bm25s" in rows:
            with_ = [*sparse, "bm25s"]
            out[target]["with_bm25s"] = {
                "hours": sum(rows[k]["hours"] for k in with_),
                "peak_rss_gb": max(rows[k]["peak_rss_gb"] for k in with_),
                "disk_gb": sum(rows[k]["disk_gb"] for k in with_),
            }
    return out


def plot(stages: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5))
    for name, s in stages.items():
        for ax, key in zip(axes[:3], ("seconds", "peak_rss_mb", "disk_mb"), strict=True):
            if any(v > 0 for v in s[key]):
                ax.plot(s["pages"], s[key], "o-", label=name)
    search = stages.get("search", {})
    for i, backend in enumerate(("bm25s", "lucene", "dense")):
        for key, style, label in (("cpu", "o-", "k=10"), ("deep_rank_cpu", "s--", "ranked deep")):
            ys = search.get(f"{backend}_{key}_p50_ms")
            if ys and None not in ys:
                axes[3].plot(search["pages"], ys, style, color=f"C{i}", label=f"{backend} {label}")
    titles = ("CPU seconds", "peak RSS (MB)", "disk (MB)", "search p50 (thread CPU ms)")
    for ax, key in zip(axes, titles, strict=True):
        ax.set(xscale="log", yscale="log", xlabel="pages", title=key)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[3].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", help="comma-separated page counts, e.g. 10000,50000,200000")
    ap.add_argument(
        "--out", type=Path, help="writes OUT/scale.json and OUT/scale.png; work in OUT/work"
    )
    ap.add_argument("--stages", default=",".join(STAGES), help="which stages to run")
    ap.add_argument(
        "--gpu-rate",
        type=float,
        default=None,
        help="passages/s of one GPU (bench/dense_rate.py) for the dense projection",
    )
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: tabulate the stages already measured under OUT/work",
    )
    ap.add_argument(
        "--parse-workers",
        type=int,
        default=1,
        help="processes the parse stage runs (its CPU seconds are their sum)",
    )
    ap.add_argument(
        "--keep-dump", action="store_true", help="keep OUT/work/N/dump.xml once it is parsed"
    )
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        run_stage(args.stage, args.work, args.parse_workers)
        return
    from replicate import load_pool, replicated, write_dump

    sizes = sorted(int(n) for n in args.pages.split(","))
    wanted = [s for s in STAGES if s in args.stages.split(",")]
    pool = load_pool()
    records: dict[int, dict[str, dict[str, Any]]] = {}
    for n in sizes:
        work = args.out / "work" / str(n)
        work.mkdir(parents=True, exist_ok=True)
        to_parse = "parse" in wanted and not (work / "parse.json").is_file()
        if to_parse and not (work / "dump.xml").is_file() and not args.report_only:
            write_dump(replicated(pool, n), work / "dump.xml.part")
            (work / "dump.xml.part").replace(work / "dump.xml")
        records[n] = {}
        for name in wanted:
            if args.report_only:
                if (work / f"{name}.json").is_file():
                    records[n][name] = json.loads(
                        (work / f"{name}.json").read_text(encoding="utf-8")
                    )
                continue
            t0 = time.perf_counter()
            records[n][name] = measure(name, work, args.parse_workers)
            if name == "parse" and not args.keep_dump:
                (work / "dump.xml").unlink(missing_ok=True)
            r = records[n][name]
            print(
                f"{n:>8} pages  {name:<10} {r['seconds']:8.1f}s  {r['peak_rss_mb']:8.0f} MB RSS  "
                f"({time.perf_counter() - t0:.0f}s)",
                flush=True,
            )
    stages: dict[str, dict[str, Any]] = {}
    for name in wanted:
        have = [n for n in sizes if name in records[n]]
        s: dict[str, Any] = {"pages": have}
        for key in ("seconds", "peak_rss_mb", "disk_mb"):
            s[key] = [records[n][name][key] for n in have]
        s["seconds_exponent"] = exponent(have, s["seconds"])
        s["rss_exponent"] = exponent(have, s["peak_rss_mb"])
        extra = sorted({k for n in have for k in records[n][name]} - set(s) - {"command", "error"})
        for key in extra:
            s[key] = [records[n][name].get(key) for n in have]
        stages[name] = s
    parse = [records[n]["parse"] for n in sizes if "parse" in records[n]]
    result: dict[str, Any] = {
        "stages": stages,
        "corpus": {
            "pool": "data/dumps/enwiki-2014-sample.xml.bz2 (106 articles, 99 redirects), replicated",
            "pages": [p["pages"] for p in parse],
            "words": [p["words"] for p in parse],
            "text_mb": [p["text_mb"] for p in parse],
        },
    }
    if len(parse) == len(sizes) and "passages" in stages:
        words = {n: records[n]["parse"]["words"] for n in sizes}
        result["projection"] = project(stages, words, args.gpu_rate)
    result["load"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    plot(stages, args.out / "scale.png")
    print(json.dumps(result.get("projection", {}), indent=1))


if __name__ == "__main__":
    main()
