"""Build time, disk size of each index, and peak memory for a mid-size corpus.

Inputs: the 6,514-article WikiExtractor set (extracted to a temporary directory), the
2Wiki corpus (6,119 titles) and 1,000 wiki-18 passages, all from /work/shared/data.
Baseline in the same run: the time to only read and parse the inputs (read_pages),
so each stage's cost reads as a multiple of ingestion.

    .venv/bin/python bench/build_size.py [--no-dense] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import tarfile
import tempfile
import time
from pathlib import Path

from wikisim.build import build
from wikisim.corpus import read_pages

SHARED = Path("/work/shared/data")
RESULTS = Path(__file__).resolve().parent / "results"


def size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def peak_rss_mb() -> tuple[float, float]:
    """Peak resident memory of this process and of its largest finished child (KiB on Linux)."""
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-dense", dest="dense", action="store_false")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wikisim-bench-") as tmp:
        root = Path(tmp)
        with tarfile.open(SHARED / "enwiki-2015-wikiextractor-6514.tar.xz") as tar:
            tar.extractall(root / "extracted", filter="data")
        extracted = sorted(p for p in (root / "extracted").rglob("*") if p.is_file())
        inputs = [*extracted, SHARED / "2wiki-corpus-6119.json", SHARED / "wiki18-passages-1000.jsonl"]
        print(f"{len(extracted)} WikiExtractor files + 2wiki + wiki18; {sum(size(p) for p in inputs) / 1e6:.1f} MB")

        t0 = time.perf_counter()
        n = sum(1 for _ in read_pages(inputs, workers=args.workers))
        ingest_s = time.perf_counter() - t0
        print(f"baseline: read_pages alone, {n} records in {ingest_s:.1f}s")

        out = root / "index"
        report = build(inputs, out, workers=args.workers, dense=args.dense, progress=True)
        print(report.format())
        sizes = {name: size(out / name) for name in ("pages.sqlite", "passages.sqlite", "bm25s", "lucene", "dense")
                 if (out / name).exists()}
        rss_self, rss_child = peak_rss_mb()
        result = {
            "inputs": [p.name for p in inputs[-2:]] + [f"{len(extracted)} WikiExtractor files"],
            "workers": args.workers, "dense": args.dense, "counts": report.counts,
            "ingest_only_s": ingest_s, "build_s": report.seconds, "stage_s": report.stage_seconds,
            "stage_vs_ingest": {k: v / ingest_s for k, v in report.stage_seconds.items()},
            "bytes": sizes, "peak_rss_mb": {"main": rss_self, "largest_child": rss_child},
            "manifest_hash": report.manifest_hash,
        }
    print(f"\n{'part':<16}{'MB':>9}{'build s':>10}{'x ingest':>10}")
    stage_of = {"pages.sqlite": "corpus", "passages.sqlite": "corpus", "bm25s": "bm25s", "lucene": "lucene", "dense": "dense"}
    for name, b in sizes.items():
        s = report.stage_seconds.get(stage_of[name], 0.0)
        print(f"{name:<16}{b / 1e6:>9.1f}{s:>10.1f}{s / ingest_s:>10.2f}")
    print(f"peak RSS: main {rss_self:.0f} MB, largest worker {rss_child:.0f} MB (target < 4096 MB with dense)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "build_size.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {RESULTS / 'build_size.json'}")


if __name__ == "__main__":
    main()
