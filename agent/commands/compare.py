"""`wikisim compare RUN_A RUN_B [...]`: paired per-task differences against the first run, with tests.

    wikisim compare runs/eval-bm25s runs/eval-hybrid [--metric em] [--out compare.json]
    wikisim compare --pool 3 plain/seed{0,1,2}/eval/grpo dynamic/seed{0,1,2}/eval/grpo

Each run is a `wikisim eval --out` folder, or with `--pool K` K folders in a row (one method's
K training seeds, each task's score the mean of all their episodes). Prints the runs' means with 95% intervals over
tasks, then each later run minus RUN_A: the mean per-task difference with its bootstrap
interval, McNemar's exact test (one 0/1 score per task) or a sign-flip permutation test
(anything else), and Holm-adjusted p-values when several runs are compared. Runs on
different task sets, index manifests or env settings are compared on their common tasks
and flagged.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.eval.compare import compare_runs, format_comparison, load_runs, only_tasks
from wikisim.flags import add_config_arguments, config_from_args, option

#: The per-episode score compared (shared with `wikisim power`).
Metric = Literal["em", "f1", "judge", "reward"]


@dataclass(frozen=True)
class CompareOptions:
    """What `wikisim compare` is asked for (every field a flag and a YAML key)."""

    runs: tuple[str, ...] = option(
        (), "eval output folders; the first is the baseline", positional=True, required=True
    )
    metric: Metric = option("em", "per-episode score")
    confidence: float = option(0.95, "interval level")
    seed: int = option(0, "seed of the bootstrap and permutation draws")
    pool: int = option(
        1, "every POOL consecutive folders are one run: the evals of one method's training seeds"
    )
    task_pattern: str | None = option(
        None, "compare only the tasks whose id this regular expression matches (e.g. '^sfq-')"
    )
    out: str | None = option(None, "also write the comparison as JSON here")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, CompareOptions)


def run(args: argparse.Namespace) -> int:
    o = config_from_args(CompareOptions, args)
    runs = load_runs(o.runs, o.metric, pool=o.pool)
    if o.task_pattern is not None:
        runs = [only_tasks(run, o.task_pattern) for run in runs]
    report = compare_runs(runs, confidence=o.confidence, seed=o.seed)
    print(format_comparison(report, o.metric), end="")
    if o.out:
        Path(o.out).write_text(
            json.dumps({"metric": o.metric, **report}, indent=2) + "\n", encoding="utf-8"
        )
    return 0
