"""Ingestion speed: our reader against raw mwparserfromhell on the same pages, same run.

Baseline: `mwparserfromhell.parse(text).strip_code()` per article, the least any reader
that parses wikitext must do. Ours: `convert()` (parse + text, sections, links with
sentences, infobox, categories, citations), and `read_pages` end to end (file reading,
decompression, XML, parsing) with 1 and 2 worker processes.

    .venv/bin/python bench/ingest.py [INPUT ...] [--repeats 3]

Targets: ours >= 75% of the raw rate per worker; 2 workers >= 1.7x one worker.
Timings are best-of-repeats with the two contenders interleaved, so load from other
processes hits both alike. Rates per worker are per CPU-second (this process plus its
worker processes), which a shared, loaded machine does not distort; wall-clock figures
are printed too, and the 2-worker scaling is given both measured and projected from
the CPU split (reading process vs. workers) for two free cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

import mwparserfromhell
from tqdm import tqdm

from wikisim.corpus import read_pages
from wikisim.corpus.formats import open_input
from wikisim.corpus.reader import convert
from wikisim.paths import SAMPLE_DUMP

RESULTS = Path(__file__).resolve().parent / "results"


def _articles(inputs: list[Path]) -> list:
    """The raw wikitext articles of the inputs (redirects left out: they are not parsed)."""
    out = []
    for path in inputs:
        for raw in open_input(path):
            if raw.kind == "wiki" and convert(raw)[0] == "page":
                out.append(raw)
    return out


def _raw_parse(pages: list) -> None:
    for raw in pages:
        mwparserfromhell.parse(raw.body).strip_code()


def _our_parse(pages: list) -> None:
    for raw in pages:
        convert(raw)


def _read(inputs: list[Path], workers: int) -> int:
    return sum(1 for _ in read_pages(inputs, workers=workers))


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _best(fn, repeats: int, label: str) -> tuple[float, float, float]:
    """Best wall seconds, with the CPU seconds of this process and of its workers in that run."""
    best = (float("inf"), 0.0, 0.0)
    for _ in tqdm(range(repeats), desc=label, leave=False):
        t, cpu, kids = time.perf_counter(), time.process_time(), _children_cpu()
        fn()
        run = (time.perf_counter() - t, time.process_time() - cpu, _children_cpu() - kids)
        best = min(best, run)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", type=Path, default=[SAMPLE_DUMP])
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs per figure")
    args = ap.parse_args(argv)

    pages = _articles(args.inputs)
    n = len(pages)
    mb = sum(len(p.body.encode("utf-8")) for p in pages) / 1e6
    inf = (float("inf"), 0.0, 0.0)
    runs = {"raw_mwparserfromhell": inf, "ours_parse": inf}
    for _ in tqdm(range(args.repeats), desc="parse, interleaved"):
        for key, fn in (("raw_mwparserfromhell", _raw_parse), ("ours_parse", _our_parse)):
            runs[key] = min(runs[key], _best(lambda fn=fn: fn(pages), 1, key))
    runs["read_only_no_parse"] = _best(
        lambda: sum(1 for path in args.inputs for _ in open_input(path)), 1, "read only"
    )
    runs["ours_read_pages_w1"] = _best(lambda: _read(args.inputs, 1), args.repeats, "w1")
    runs["ours_read_pages_w2"] = _best(lambda: _read(args.inputs, 2), args.repeats, "w2")

    def cpu(key: str) -> float:  # CPU seconds of the run: this process and its workers
        return runs[key][1] + runs[key][2]

    w1, w2 = runs["ours_read_pages_w1"], runs["ours_read_pages_w2"]
    rates = {
        k: {
            "wall_s": round(v[0], 3),
            "cpu_s": round(cpu(k), 3),
            "mb_per_cpu_s": round(mb / cpu(k), 3),
            "pages_per_cpu_s": round(n / cpu(k), 1),
            "mb_per_wall_s": round(mb / v[0], 3),
        }
        for k, v in runs.items()
    }
    raw = cpu("raw_mwparserfromhell")
    ratios = {
        "ours_parse_vs_raw_per_worker": raw / cpu("ours_parse"),
        "ours_read_pages_w1_vs_raw_per_worker": raw / cpu("ours_read_pages_w1"),
        "scaling_w2_over_w1_wall": w1[0] / w2[0],
        # what 2 free cores give: the reading process and each worker's half run side by side
        "scaling_w2_over_w1_projected_from_cpu": w1[1] / max(w2[1], w2[2] / 2),
    }
    result = {
        "inputs": [str(p) for p in args.inputs],
        "articles": n,
        "wikitext_mb": round(mb, 3),
        "repeats": args.repeats,
        "rates": rates,
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
        "cpu_split_w2": {"main_s": round(w2[1], 3), "workers_s": round(w2[2], 3)},
        "targets": {"ours_vs_raw_per_worker": 0.75, "scaling_w2_over_w1": 1.7},
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "mwparserfromhell": mwparserfromhell.__version__,
        },
    }
    print(f"{n} articles, {mb:.2f} MB of wikitext from {', '.join(map(str, args.inputs))}")
    print(f"{'':24}{'wall s':>8}{'cpu s':>8}{'MB/cpu-s':>10}{'pages/cpu-s':>13}{'MB/wall-s':>11}")
    for k, r in rates.items():
        print(
            f"{k:24}{r['wall_s']:>8.2f}{r['cpu_s']:>8.2f}{r['mb_per_cpu_s']:>10.2f}"
            f"{r['pages_per_cpu_s']:>13.1f}{r['mb_per_wall_s']:>11.2f}"
        )
    for k, v in ratios.items():
        target = 1.7 if k.startswith("scaling") else 0.75
        print(f"{k:40} {v:5.2f}x  (target >= {target}: {'met' if v >= target else 'NOT met'})")
    print(
        f"w2 CPU split: main {w2[1]:.2f} s, workers {w2[2]:.2f} s; machine: {os.cpu_count()} cpus, "
        f"load average {os.getloadavg()[0]:.1f} (wall figures are only as good as the load allows)"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "ingest.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
