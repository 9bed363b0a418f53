"""Retrieval quality of every backend on HotpotQA-100 and MuSiQue-100, measured with ir-measures.

Each QA set is searched over its own bundled corpus (built once into the cache with every
backend). A question's relevant documents are its gold supporting titles. Two views of a
ranking: "page" (the first passage of each page, as the env's search tool lists them, 10
pages) and "passage" (the 10 best passages, the titles among them). Measures: R@10,
nDCG@10 and RR@10 (MRR), each mean with a 95% bootstrap interval over questions for R@10.

Splits, fixed: questions 0-49 of each set are TRAIN, the only questions the default
retriever's settings (title weight, fusion weight, RRF k, depth, the second stage's
expansion weights and the third stage's hop weights) are ever tuned on (`--tune`, 100 questions); questions 50-99 of each
set are TEST, only ever reported. Earlier defaults stay in the table so every run shows
before and after side by side: "hybrid-v0" (RRF k 60, dense weight 0.6, depth 100, no
title field, no later stage) and "hybrid-v1" (RRF k 40, dense weight 0.6, depth 200, title
weight 0.5, no later stage), the default before issue 17; "hybrid-v2" (RRF k 10, dense weight
0.5, depth 100, no title field, the page stage, no second hop).
"lucene-rm3" is Lucene with RM3 feedback (`wikisim.index.sparse_lucene.RM3`), an option;
an index built before Lucene stored document vectors has none: delete the cached corpora.
The latency of the default against hybrid-v1 (the default before issue 17; the target is within
1.5x of it) and hybrid-v2, on the same queries in one process, ends the report.

    .venv/bin/python bench/recall.py            # report (writes bench/results/recall.json)
    .venv/bin/python bench/recall.py --tune     # grid-search the default on TRAIN, then report
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import ir_measures
from ir_measures import RR, R, nDCG

from agent.eval.stats import bootstrap_mean
from wikisim.index import open_index
from wikisim.index.build import build
from wikisim.index.hybrid import FusionParams, HybridRetriever, fuse
from wikisim.index.ranked import Ranked
from wikisim.paths import QA_DIR, cache_dir

RESULTS = Path(__file__).resolve().parent / "results"
K = 10
SPLITS = {"train": slice(0, 50), "test": slice(50, 100)}
MEASURES = (R @ K, nDCG @ K, RR @ K)
NO_EXPANSION = {"expand_top": 0, "hop_seeds": 0}
PREVIOUS = {
    "hybrid-v0": FusionParams(
        rrf_k=60.0, dense_weight=0.6, depth=100, title_weight=0.0, **NO_EXPANSION
    ),
    "hybrid-v1": FusionParams(
        rrf_k=40.0, dense_weight=0.6, depth=200, title_weight=0.5, **NO_EXPANSION
    ),
    "hybrid-v2": FusionParams(
        rrf_k=10.0,
        dense_weight=0.5,
        depth=100,
        title_weight=0.0,
        expand_top=2,
        mention_weight=1.0,
        query_title_weight=1.0,
        hop_seeds=0,
    ),
}
# Tuned in turns, each a grid whose first value in each axis is the shipped default (it wins
# ties): the fusion with the later stages fixed, then the expansion, then the hop, and again.
FUSION_GRID = {
    "title_weight": (0.0, 0.25, 0.5, 0.75, 1.0),
    "rrf_k": (10.0, 20.0, 40.0, 60.0, 100.0),
    "dense_weight": (0.6, 0.5, 0.4, 0.7),
    # 100 at most: the depth the bm25s/Lucene crossover (BM25S_MAX_PASSAGES) was measured at;
    # 200 scored 0.006 more here (R@10 +0.003: a third of a question), within the noise
    "depth": (100, 50),
}
EXPANSION_GRID = {
    "expand_top": (2, 0, 1, 3, 5, 10),
    "mention_weight": (0.5, 1.0, 2.0, 4.0),
    "query_title_weight": (1.0, 0.0, 0.25, 0.5),
}
HOP_GRID = {
    "hop_seeds": (1, 0, 2, 3, 4),
    "hop_weight": (1.0, 0.25, 0.5, 0.75, 1.5),
    "hop_pages": (8, 2, 3, 4, 5, 6),
}
DEPTH = max(*FUSION_GRID["depth"], *(p.depth for p in PREVIOUS.values()))
COLUMNS = (
    "bm25s",
    "lucene",
    "lucene-rm3",
    "dense",
    "hybrid-v0",
    "hybrid-v1",
    "hybrid-v2",
    "hybrid",
)


def load_qa(name: str) -> tuple[list[str], list[set[str]]]:
    data = json.loads((QA_DIR / f"{name}-train-100.json").read_text(encoding="utf-8"))
    if name == "hotpotqa":
        return [q["question"] for q in data], [{t for t, _ in q["supporting_facts"]} for q in data]
    return (
        [q["question"] for q in data],
        [{p["title"] for p in q["paragraphs"] if p["is_supporting"]} for q in data],
    )


def corpus_index(name: str) -> Path:
    out = cache_dir() / "bench" / f"{name}-corpus"
    if not (out / "manifest.json").is_file():
        report = build([QA_DIR / f"{name}-train-100-corpus.json"], out, dense=True, progress=True)
        print(report.format())
    return out


def titles_of(ranked: Ranked, title: dict[str, str], view: str) -> list[str]:
    """The titles of a ranking's top K, in order, each once: K passages, or K pages."""
    out: list[str] = []
    for docid, _ in ranked if view == "page" else ranked[:K]:
        if title[docid] not in out:
            out.append(title[docid])
        if len(out) == K:
            break
    return out


def evaluate(
    lists: list[Ranked], gold: list[set[str]], title: dict[str, str], view: str, rows: slice
) -> dict[str, float]:
    """Mean R@10, nDCG@10, RR@10 over the questions in `rows`, and R@10's 95% interval."""
    ids = [str(i) for i in range(len(lists))][rows]
    qrels = {q: dict.fromkeys(gold[int(q)], 1) for q in ids}
    run = {
        q: {t: float(K - r) for r, t in enumerate(titles_of(lists[int(q)], title, view))}
        for q in ids
    }
    per_query: dict[str, dict[str, float]] = {str(m): dict.fromkeys(ids, 0.0) for m in MEASURES}
    for m in ir_measures.iter_calc(MEASURES, qrels, run):
        per_query[str(m.measure)][m.query_id] = m.value
    out = {name: sum(v.values()) / len(ids) for name, v in per_query.items()}
    ci = bootstrap_mean(list(per_query[str(R @ K)].values()), seed=0)
    out["R@10_low"], out["R@10_high"] = ci.low, ci.high
    return out


def backend_lists(index, questions: list[str]) -> dict[str, list[Ranked]]:
    out = {}
    for backend in ("bm25s", "lucene", "lucene-rm3", "dense"):
        t0 = time.perf_counter()
        out[backend] = index.retriever(backend).ranked(questions, DEPTH)
        print(f"  {backend:<10} {len(questions)} queries in {time.perf_counter() - t0:.1f}s")
    return out


def hybrid_lists(
    hybrid: HybridRetriever,
    questions: list[str],
    lists: dict[str, list[Ranked]],
    params: FusionParams,
) -> list[Ranked]:
    """What `hybrid` with `params` returns, from lists ranked once (title field, fusion, stage 2)."""
    sparse = [r[: params.depth] for r in lists["bm25s"]]
    if hybrid.titles is not None:
        sparse = [
            hybrid.titles.boost(q, r, params.title_weight)
            for q, r in zip(questions, sparse, strict=True)
        ]
    with_params = HybridRetriever(hybrid.sparse, hybrid.dense, params=params)
    with_params.expander, with_params.hop = hybrid.expander, hybrid.hop  # caches shared
    return [
        with_params.second_stage(q, fuse(s, d[: params.depth], params)) if s else []
        for q, s, d in zip(questions, sparse, lists["dense"], strict=True)
    ]


def train_scores(sets: dict[str, dict], params: FusionParams) -> dict[str, float]:
    """Mean page-level R@10 and nDCG@10 over both sets' TRAIN questions, and their sum."""
    rows = [
        evaluate(
            hybrid_lists(s["hybrid"], s["questions"], s["lists"], params),
            s["gold"],
            s["title"],
            "page",
            SPLITS["train"],
        )
        for s in sets.values()
    ]
    out = {f"train_{m}": sum(r[m] for r in rows) / len(rows) for m in ("R@10", "nDCG@10")}
    out["objective"] = out["train_R@10"] + out["train_nDCG@10"]
    return out


def tune(sets: dict[str, dict], rounds: int = 3) -> dict:
    """Coordinate search on the TRAIN halves: the fusion grid, the expansion grid, the hop
    grid, again until a round changes nothing (at most `rounds`).

    The objective is R@10 + nDCG@10: recall alone would let a stage that pushes a page's
    neighbours above the page itself win by one question while it halves the reciprocal rank.
    """
    params = FusionParams()
    stages: list[dict] = []
    for _ in range(rounds):
        start = params
        for stage, axes in (
            ("fusion", FUSION_GRID),
            ("expansion", EXPANSION_GRID),
            ("hop", HOP_GRID),
        ):
            grid = []
            for values in itertools.product(*axes.values()):
                setting: dict[str, Any] = dict(zip(axes, values, strict=True))
                tried = replace(params, **setting)
                grid.append({**vars(tried), **train_scores(sets, tried)})
            best = max(grid, key=lambda g: g["objective"])  # the first best in grid order
            params = FusionParams(**{k: best[k] for k in vars(params)})
            print(f"{stage} tuned on TRAIN (questions 0-49 of each set): {best}")
            stages.append({"stage": stage, "best": best, "grid": grid})
        if params == start:
            break
    return {"best": vars(params), "stages": stages}


def latency(sets: dict[str, dict]) -> dict[str, float]:
    """Mean ms a query of the default and of hybrid-v1 and -v2 over every question, alternating."""
    names = ("hybrid-v1", "hybrid-v2", "hybrid")
    spent = dict.fromkeys(names, 0.0)
    n = 0
    for s in sets.values():
        sparse, dense = s["hybrid"].sparse, s["hybrid"].dense
        made = {  # new retrievers: their caches start empty
            name: HybridRetriever(sparse, dense, params=PREVIOUS.get(name)) for name in names
        }
        for name in made:  # warm: the model, memory maps, and the title index read once
            made[name].search(s["questions"][:1])
        for question in s["questions"]:
            for name, retriever in made.items():
                t0 = time.perf_counter()
                retriever.search([question], K)
                spent[name] += time.perf_counter() - t0
            n += 1
    out = {name: 1000 * t / n for name, t in spent.items()}
    out["ratio"] = out["hybrid"] / out["hybrid-v1"]
    out["ratio_v2"] = out["hybrid"] / out["hybrid-v2"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tune", action="store_true", help="grid-search the default hybrid on the TRAIN halves"
    )
    args = parser.parse_args()
    sets: dict[str, dict] = {}
    for name in ("hotpotqa", "musique"):
        index = open_index(corpus_index(name))
        questions, gold = load_qa(name)
        title = {p.docid: p.title for p in index.require_passages()}
        print(
            f"{name}: {len(questions)} questions over {len(title)} passages (manifest {index.manifest_hash})"
        )
        sets[name] = {
            "index": index,
            "questions": questions,
            "gold": gold,
            "title": title,
            "lists": backend_lists(index, questions),
            "hybrid": index.retriever("hybrid"),
        }
    report: dict = {
        "k": K,
        "splits": {"train": "questions 0-49 of each set", "test": "questions 50-99"},
        "previous_defaults": {name: vars(p) for name, p in PREVIOUS.items()},
        "sets": {},
    }
    if args.tune:
        report["tuning"] = tune(sets)
    for name, s in sets.items():
        params = s["hybrid"].params
        lists = {
            **s["lists"],
            **{
                name: hybrid_lists(s["hybrid"], s["questions"], s["lists"], old)
                for name, old in PREVIOUS.items()
            },
            "hybrid": hybrid_lists(s["hybrid"], s["questions"], s["lists"], params),
        }
        report["sets"][name] = {
            "manifest_hash": s["index"].manifest_hash,
            "hybrid": vars(params),
            "views": {
                view: {
                    split: {
                        b: evaluate(lists[b], s["gold"], s["title"], view, rows) for b in COLUMNS
                    }
                    for split, rows in SPLITS.items()
                }
                for view in ("page", "passage")
            },
        }
    for measure in ("R@10", "nDCG@10", "RR@10"):
        print(
            f"\n{measure} of gold supporting titles"
            + (" (95% interval over questions)" if measure == "R@10" else "")
        )
        print(f"{'set / split / view':<28}" + "".join(f"{b:>20}" for b in COLUMNS))
        for name, entry in report["sets"].items():
            for view, splits in entry["views"].items():
                for split, row in splits.items():
                    cells = [
                        f"{row[b][measure]:.3f}"
                        + (
                            f" [{row[b]['R@10_low']:.2f},{row[b]['R@10_high']:.2f}]"
                            if measure == "R@10"
                            else ""
                        )
                        for b in COLUMNS
                    ]
                    print(f"{f'{name} {split} {view}':<28}" + "".join(f"{c:>20}" for c in cells))
    report["latency_ms"] = latency(sets)
    print(
        "latency per query, ms: "
        + ", ".join(f"{k} {v:.2f}" for k, v in report["latency_ms"].items())
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "recall.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {RESULTS / 'recall.json'}")


if __name__ == "__main__":
    main()
