"""Recall@10 of gold supporting titles on HotpotQA-100 and MuSiQue-100, every backend.

Each QA set is searched over its own bundled corpus (built once into the cache with every
backend). HotpotQA questions 0-49 are the DEV half, the only data hybrid fusion is ever
tuned on (`--tune`); questions 50-99 and all of MuSiQue-100 are test, reported only.

    .venv/bin/python bench/recall.py            # report (writes bench/results/recall.json)
    .venv/bin/python bench/recall.py --tune     # grid-search RRF on the dev half, then report
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from wikisim.index import open_index
from wikisim.index.build import build
from wikisim.index.hybrid import FUSION_DEPTH, FusionParams, fuse
from wikisim.index.ranked import Ranked
from wikisim.paths import QA_DIR, cache_dir

RESULTS = Path(__file__).resolve().parent / "results"
K = 10
DEV = slice(0, 50)
RRF_KS = (60.0, 1.0, 5.0, 10.0, 20.0, 40.0, 100.0)  # the default first: it wins ties
DENSE_WEIGHTS = (0.5, 0.3, 0.4, 0.6, 0.7)


def load_qa(name: str) -> tuple[list[str], list[set[str]]]:
    data = json.loads((QA_DIR / f"{name}-train-100.json").read_text(encoding="utf-8"))
    if name == "hotpotqa":
        return [q["question"] for q in data], [{t for t, _ in q["supporting_facts"]} for q in data]
    return ([q["question"] for q in data],
            [{p["title"] for p in q["paragraphs"] if p["is_supporting"]} for q in data])


def corpus_index(name: str) -> Path:
    out = cache_dir() / "bench" / f"{name}-corpus"
    if not (out / "manifest.json").is_file():
        report = build([QA_DIR / f"{name}-train-100-corpus.json"], out, dense=True, progress=True)
        print(report.format())
    return out


def recall(ranked: list[Ranked], gold: list[set[str]], titles: dict[str, str]) -> float:
    per_q = [len(g & {titles[d] for d, _ in r[:K]}) / len(g) for r, g in zip(ranked, gold, strict=True)]
    return sum(per_q) / len(per_q)


def ranked_lists(index, questions: list[str]) -> dict[str, list[Ranked]]:
    out = {}
    for backend in ("bm25s", "lucene", "dense"):
        t0 = time.perf_counter()
        out[backend] = index.retriever(backend).ranked(questions, FUSION_DEPTH)
        print(f"  {backend:<7} {len(questions)} queries in {time.perf_counter() - t0:.1f}s")
    return out


def fused(lists: dict[str, list[Ranked]], params: FusionParams) -> list[Ranked]:
    return [fuse(s, d, params) for s, d in zip(lists["bm25s"], lists["dense"], strict=True)]


def tune(lists: dict[str, list[Ranked]], gold: list[set[str]], titles: dict[str, str]) -> dict:
    dev = {b: v[DEV] for b, v in lists.items()}
    grid = []
    for rrf_k in RRF_KS:
        for w in DENSE_WEIGHTS:
            params = FusionParams(rrf_k=rrf_k, dense_weight=w)
            grid.append({"rrf_k": rrf_k, "dense_weight": w, "dev_recall": recall(fused(dev, params), gold[DEV], titles)})
    best = max(grid, key=lambda g: g["dev_recall"])  # first best in grid order
    print(f"tuned on HotpotQA-100 dev (questions 0-49): rrf_k={best['rrf_k']} "
          f"dense_weight={best['dense_weight']} dev recall@10={best['dev_recall']:.3f}")
    return {"best": best, "grid": grid}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="grid-search fusion on the HotpotQA dev half")
    args = parser.parse_args()
    report: dict = {"k": K, "dev": "hotpotqa questions 0-49", "sets": {}}
    for name in ("hotpotqa", "musique"):
        index = open_index(corpus_index(name))
        questions, gold = load_qa(name)
        titles = {p.docid: p.title for p in index.passages}
        print(f"{name}: {len(questions)} questions over {len(titles)} passages (manifest {index.manifest_hash})")
        lists = ranked_lists(index, questions)
        if args.tune and name == "hotpotqa":
            report["tuning"] = tune(lists, gold, titles)
        best = report.get("tuning", {}).get("best")
        params = FusionParams(best["rrf_k"], best["dense_weight"]) if best else FusionParams()
        lists["hybrid"] = fused(lists, params)
        splits = {"test (50-99)": slice(50, 100), "dev (0-49)": DEV} if name == "hotpotqa" else {"all": slice(0, 100)}
        rows = {}
        for split, sl in splits.items():
            rows[split] = {b: recall(v[sl], gold[sl], titles) for b, v in lists.items()}
        report["sets"][name] = {"manifest_hash": index.manifest_hash, "fusion": vars(params), "recall@10": rows}
    print(f"\nrecall@{K} of gold supporting titles")
    print(f"{'set':<24}" + "".join(f"{b:>9}" for b in ("bm25s", "lucene", "dense", "hybrid")) + "   hybrid/best single")
    for name, entry in report["sets"].items():
        for split, row in entry["recall@10"].items():
            single = max(row[b] for b in ("bm25s", "lucene", "dense"))
            print(f"{name + ' ' + split:<24}" + "".join(f"{row[b]:>9.3f}" for b in ("bm25s", "lucene", "dense", "hybrid"))
                  + f"   {row['hybrid'] / single:.3f}x")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "recall.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {RESULTS / 'recall.json'}")


if __name__ == "__main__":
    main()
