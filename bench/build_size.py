"""Build time, disk size of each index, and peak memory for a mid-size corpus.

Inputs: the 6,514-article WikiExtractor set (extracted to a temporary directory), the
2Wiki corpus (6,119 titles) and 1,000 wiki-18 passages, all from /work/shared/data.
Baseline in the same run: the time to only read and parse the inputs (read_pages),
so each stage's cost reads as a multiple of ingestion. Resident memory is sampled through
the build and plotted per stage (bench/results/build_size.png); `--files N` builds from the
first N of the 100 WikiExtractor files alone, to see how memory grows with the corpus.

    .venv/bin/python bench/build_size.py [--no-dense] [--workers 2] [--files N]
"""

from __future__ import annotations

import argparse
import json
import resource
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from wikisim.corpus import read_pages
from wikisim.index.build import build

SHARED = Path("/work/shared/data")
RESULTS = Path(__file__).resolve().parent / "results"


def size(path: Path) -> int:
    return (
        path.stat().st_size
        if path.is_file()
        else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    )


def peak_rss_mb() -> tuple[float, float]:
    """Peak resident memory of this process and of its largest finished child (KiB on Linux)."""
    return (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    )


class RssSampler(threading.Thread):
    """This process's resident memory every `period` seconds, from /proc (Linux)."""

    def __init__(self, period: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.period, self.samples, self._done = period, [], threading.Event()
        self.t0 = time.perf_counter()

    def run(self) -> None:
        while not self._done.is_set():
            with open("/proc/self/status", encoding="ascii") as f:
                kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            self.samples.append((time.perf_counter() - self.t0, kb / 1024))
            self._done.wait(self.period)

    def stop(self) -> list[tuple[float, float]]:
        self._done.set()
        self.join()
        return self.samples


def stage_peaks(
    samples: list[tuple[float, float]], start: float, stage_s: dict[str, float]
) -> dict[str, float]:
    """Peak RSS within each stage's window (stages run one after another from `start`)."""
    peaks, t = {}, start
    for name, seconds in stage_s.items():
        inside = [mb for at, mb in samples if t <= at <= t + seconds]
        peaks[name], t = max(inside, default=0.0), t + seconds
    return peaks


def plot(
    samples: list[tuple[float, float]],
    start: float,
    stage_s: dict[str, float],
    path: Path,
    title: str,
) -> None:
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot([t for t, _ in samples], [mb for _, mb in samples], lw=1)
    t = start
    for i, (name, seconds) in enumerate(stage_s.items()):
        ax.axvspan(t, t + seconds, alpha=0.12, color=f"C{i + 1}", label=name)
        t += seconds
    ax.axhline(4096, ls="--", color="red", lw=1, label="4 GB target")
    ax.set(xlabel="seconds since start", ylabel="resident memory (MB)", title=title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-dense", dest="dense", action="store_false")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--files",
        type=int,
        default=None,
        help="only the first N WikiExtractor files, without the 2Wiki and wiki-18 files",
    )
    args = parser.parse_args()
    sampler = RssSampler()
    sampler.start()
    with tempfile.TemporaryDirectory(prefix="wikisim-bench-") as tmp:
        root = Path(tmp)
        with tarfile.open(SHARED / "enwiki-2015-wikiextractor-6514.tar.xz") as tar:
            tar.extractall(root / "extracted", filter="data")
        extracted = sorted(p for p in (root / "extracted").rglob("*") if p.is_file())
        extra = [SHARED / "2wiki-corpus-6119.json", SHARED / "wiki18-passages-1000.jsonl"]
        if args.files is not None:
            extracted, extra = extracted[: args.files], []
        inputs = [*extracted, *extra]
        print(
            f"{len(extracted)} WikiExtractor files + 2wiki + wiki18; {sum(size(p) for p in inputs) / 1e6:.1f} MB"
        )

        t0 = time.perf_counter()
        n = sum(1 for _ in read_pages(inputs, workers=args.workers))
        ingest_s = time.perf_counter() - t0
        print(f"baseline: read_pages alone, {n} records in {ingest_s:.1f}s")

        out = root / "index"
        build_start = time.perf_counter() - sampler.t0
        report = build(inputs, out, workers=args.workers, dense=args.dense, progress=True)
        samples = sampler.stop()
        peaks = stage_peaks(samples, build_start, report.stage_seconds)
        print(report.format())
        sizes = {
            name: size(out / name)
            for name in ("pages.sqlite", "passages.sqlite", "bm25s", "lucene", "dense")
            if (out / name).exists()
        }
        rss_self, rss_child = peak_rss_mb()
        result = {
            "inputs": [p.name for p in extra] + [f"{len(extracted)} WikiExtractor files"],
            "workers": args.workers,
            "dense": args.dense,
            "counts": report.counts,
            "ingest_only_s": ingest_s,
            "build_s": report.seconds,
            "stage_s": report.stage_seconds,
            "stage_vs_ingest": {k: v / ingest_s for k, v in report.stage_seconds.items()},
            "bytes": sizes,
            "peak_rss_mb": {"main": rss_self, "largest_child": rss_child, "by_stage": peaks},
            "manifest_hash": report.manifest_hash,
        }
    print(f"\n{'part':<16}{'MB':>9}{'build s':>10}{'x ingest':>10}")
    stage_of = {
        "pages.sqlite": "corpus",
        "passages.sqlite": "corpus",
        "bm25s": "bm25s",
        "lucene": "lucene",
        "dense": "dense",
    }
    for name, b in sizes.items():
        s = report.stage_seconds.get(stage_of[name], 0.0)
        print(f"{name:<16}{b / 1e6:>9.1f}{s:>10.1f}{s / ingest_s:>10.2f}")
    print(
        f"peak RSS: main {rss_self:.0f} MB, largest worker {rss_child:.0f} MB (target < 4096 MB with dense)"
    )
    print("peak RSS by stage (MB): " + ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()))
    RESULTS.mkdir(exist_ok=True)
    name = "build_size" if args.files is None else f"build_size-files{args.files}"
    plot(
        samples,
        build_start,
        report.stage_seconds,
        RESULTS / f"{name}.png",
        f"build of {report.counts['passages']:,} passages ({len(extracted)} WikiExtractor files"
        f"{' + 2Wiki + wiki-18' if extra else ''})",
    )
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {RESULTS / name}.json and .png")


if __name__ == "__main__":
    main()
