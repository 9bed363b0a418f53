"""Baselines and the bundled SmolLM2 on real, human-written multi-hop QA over their own corpora.

    .venv/bin/python bench/external_qa.py [--datasets hotpotqa musique] [--llm-limit 100]

For HotpotQA-100 and MuSiQue-100 (data/qa/), builds each one's corpus into an index once
(`wikisim build data/qa/<name>-train-100-corpus.json --out ...`, bm25s), then runs
`search-answer`, `oracle` and `smollm2` on its questions with default settings (nothing is
tuned on these sets). Prints one table per dataset; writes bench/results/external_qa.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agent.eval.harness import EvalConfig, evaluate
from agent.eval.report import markdown_table
from wikisim.flags import build_config
from wikisim.index.build import build
from wikisim.index.manifest import MANIFEST
from wikisim.paths import QA_DIR, cache_dir

RESULTS = Path(__file__).resolve().parent / "results"
POLICIES = {
    "search-answer": {"max_turns": 4},
    "oracle": {"max_turns": 8},
    "smollm2": {"max_turns": 3, "max_new_tokens": 96, "envs": 12, "batch_size": 12},
}


def corpus_index(name: str) -> Path:
    out = cache_dir() / "indexes" / f"{name}-train-100-corpus"
    if not (out / MANIFEST).is_file():
        start = time.perf_counter()
        build(
            [QA_DIR / f"{name}-train-100-corpus.json"],
            out,
            dense=False,
            lucene=False,
            progress=False,
        )
        print(f"built {out} in {time.perf_counter() - start:.1f} s", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique"])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument(
        "--llm-limit", type=int, default=100, help="questions for smollm2 (CPU time)"
    )
    args = parser.parse_args()
    report: dict[str, list[dict]] = {}
    for name in args.datasets:
        index = corpus_index(name)
        summaries = []
        for policy in args.policies:
            limit = args.llm_limit if policy == "smollm2" else 0
            config = build_config(
                EvalConfig,
                {
                    "policy": policy,
                    "index": str(index),
                    "limit": limit,
                    "tasks": str(QA_DIR / f"{name}-train-100.json"),
                    **POLICIES[policy],
                },
            )
            summary, _ = evaluate(config, RESULTS / "external_qa" / name / policy)
            summaries.append(summary)
        report[name] = summaries
        print(f"\n## {name}-train-100 over its own corpus ({index.name})\n")
        print(markdown_table(summaries), flush=True)
    RESULTS.mkdir(exist_ok=True)
    keep = (
        "policy",
        "episodes",
        "em",
        "f1",
        "pass@1",
        "turns",
        "tool_calls",
        "generated_tokens",
        "wall_s",
        "answered",
    )
    (RESULTS / "external_qa.json").write_text(
        json.dumps({k: [{f: s[f] for f in keep} for s in v] for k, v in report.items()}, indent=2)
        + "\n"
    )


if __name__ == "__main__":
    main()
