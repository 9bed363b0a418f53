"""`wikisim compare RUN_A RUN_B [...]`: paired per-task differences against the first run, with tests.

    wikisim compare runs/eval-bm25s runs/eval-hybrid [--metric em] [--out compare.json]

Each run is a `wikisim eval --out` folder. Prints the runs' means with 95% intervals over
tasks, then each later run minus RUN_A: the mean per-task difference with its bootstrap
interval, McNemar's exact test (one 0/1 score per task) or a sign-flip permutation test
(anything else), and Holm-adjusted p-values when several runs are compared. Runs on
different task sets, index manifests or env settings are compared on their common tasks
and flagged.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agent.eval.compare import compare_runs, format_comparison, load_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs", nargs="+", metavar="RUN", help="eval output folders; the first is the baseline"
    )
    add_metric_argument(parser)
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="interval level (default 0.95)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap and permutation draws"
    )
    parser.add_argument("--out", help="also write the comparison as JSON here")


def add_metric_argument(parser: argparse.ArgumentParser) -> None:
    """--metric, shared with `wikisim power`."""
    parser.add_argument(
        "--metric", default="em", help="per-episode score: em | f1 | judge | reward (default em)"
    )


def run(args: argparse.Namespace) -> int:
    runs = [load_run(path, args.metric) for path in args.runs]
    report = compare_runs(runs, confidence=args.confidence, seed=args.seed)
    print(format_comparison(report, args.metric), end="")
    if args.out:
        Path(args.out).write_text(
            json.dumps({"metric": args.metric, **report}, indent=2) + "\n", encoding="utf-8"
        )
    return 0
