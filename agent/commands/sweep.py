"""`wikisim sweep FILE.yaml`: a grid of eval settings x seeds in parallel processes, resumable.

    out: runs/sweep              # one folder per cell under here
    workers: 2                   # parallel processes
    seeds: 3                     # seeds 0..2, one cell each
    base: {tasks: data/tasks/sample.jsonl, max_turns: 4}
    grid: {policy: [search-answer, oracle], max_turns: [2, 4]}

Every key of `base` and `grid` is a setting of `agent.eval.harness.EvalConfig` (the env's included),
named as its `wikisim eval` flag is. A cell whose
summary.json exists is skipped, so an interrupted sweep picks up where it stopped. The
cells of one setting are pooled: each mean gets a 95% bootstrap interval over tasks, the
seeds of a task resampled together (`agent.eval.metrics.intervals`).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agent.eval.harness import EvalConfig, evaluate
from agent.eval.metrics import intervals
from agent.rollout.trajectory import read_trajectories
from wikisim.errors import ConfigError
from wikisim.flags import (
    add_config_arguments,
    build_config,
    config_fields,
    config_from_args,
    option,
)
from wikisim.index.sparse_lucene import share_cores

METRICS = ("em", "f1", "turns", "generated_tokens")


@dataclass(frozen=True)
class SweepOptions:
    """What `wikisim sweep` is asked for: the sweep file (its grid, seeds and out) and workers."""

    file: str = option(
        "",
        "sweep YAML (see `wikisim sweep --help` and agent/commands/sweep.py)",
        positional=True,
        required=True,
    )
    workers: int | None = option(None, "parallel processes (None: the file's `workers`)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, SweepOptions)


def load_sweep(path: str | Path) -> dict[str, Any]:
    try:
        spec = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read sweep file {path}: {e}") from e
    if not isinstance(spec, dict) or not isinstance(spec.get("grid", {}), dict):
        raise ConfigError(
            f"{path}: a sweep is a mapping with out, workers, seeds, base and grid (a mapping of lists)"
        )
    allowed = set(config_fields(EvalConfig)) - {"seeds", "first_seed"}
    for key in [*spec.get("base", {}), *spec.get("grid", {})]:
        if key not in allowed:
            raise ConfigError(
                f"{path}: unknown setting {key!r}; use EvalConfig fields: {', '.join(sorted(allowed))}"
            )
    return spec


def cells(spec: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
    """(setting, seed) for every grid point and seed, grid order then seed order."""
    grid = spec.get("grid", {})
    keys = list(grid)
    settings = [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))
    ]
    seeds = spec.get("seeds", 1)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    return [({**spec.get("base", {}), **s}, seed) for s in settings for seed in seed_list]


def cell_dir(out: Path, setting: dict[str, Any], seed: int) -> Path:
    key = hashlib.sha256(json.dumps(setting, sort_keys=True).encode()).hexdigest()[:12]
    return out / f"{key}-seed{seed}"


def _run_cell(setting: dict[str, Any], seed: int, out: str) -> str:
    config = build_config(EvalConfig, {**setting, "seeds": 1, "first_seed": seed})
    evaluate(config, out, progress=False)
    return out


def run_sweep(spec: dict[str, Any], workers: int | None = None) -> list[dict[str, Any]]:
    """Run the missing cells, then aggregate all of them; returns one row per grid setting."""
    out = Path(spec.get("out", "runs/sweep"))
    todo = [
        (s, seed, str(cell_dir(out, s, seed)))
        for s, seed in cells(spec)
        if not (cell_dir(out, s, seed) / "summary.json").is_file()
    ]
    n = workers or int(spec.get("workers", 1))
    if todo and n > 1:
        ctx = multiprocessing.get_context("spawn")  # torch and the JVM do not survive fork
        with ProcessPoolExecutor(
            max_workers=n, mp_context=ctx, initializer=share_cores, initargs=(n,)
        ) as pool:
            for future in [pool.submit(_run_cell, *cell) for cell in todo]:
                print(f"done {future.result()}", flush=True)
    else:
        for cell in todo:
            print(f"done {_run_cell(*cell)}", flush=True)
    rows = aggregate(spec, out)
    write_sweep(out, spec, rows)
    return rows


def aggregate(spec: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    """One row per setting: its cells' episodes pooled, each metric as mean, METRIC_low, METRIC_high."""
    groups: dict[str, tuple[dict[str, Any], list[Path]]] = {}
    for setting, seed in cells(spec):
        key = json.dumps(setting, sort_keys=True)
        groups.setdefault(key, (setting, []))[1].append(cell_dir(out, setting, seed))
    rows = []
    for setting, dirs in groups.values():
        trajs = [t for d in dirs for t in read_trajectories(d / "trajectories.jsonl")]
        ci = intervals(trajs)
        row: dict[str, Any] = {
            "setting": {k: setting[k] for k in spec.get("grid", {})},
            "seeds": len(dirs),
            "tasks": ci["em"]["n"],
        }
        for m in METRICS:
            row[m], row[f"{m}_low"], row[f"{m}_high"] = ci[m]["mean"], ci[m]["low"], ci[m]["high"]
        rows.append(row)
    return rows


def write_sweep(out: Path, spec: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(
        json.dumps(rows, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    head = "| setting | tasks | seeds | " + " | ".join(f"{m} [95% CI]" for m in METRICS) + " |"
    lines = [head, "|" + "---|" * (3 + len(METRICS))]
    for r in rows:
        label = ", ".join(f"{k}={v}" for k, v in r["setting"].items())
        cols = " | ".join(
            f"{r[m]:.3f} [{r[m + '_low']:.3f}, {r[m + '_high']:.3f}]" for m in METRICS
        )
        lines.append(f"| {label} | {r['tasks']} | {r['seeds']} | {cols} |")
    lines.append(
        "\nBrackets: 95% bootstrap interval over tasks (the seeds of a task resampled together)."
    )
    (out / "sweep.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    labels = ["\n".join(f"{k}={v}" for k, v in r["setting"].items()) for r in rows]
    fig, ax = plt.subplots(figsize=(max(4, 1.3 * len(rows)), 3.8))
    yerr = [[r["em"] - r["em_low"] for r in rows], [r["em_high"] - r["em"] for r in rows]]
    ax.bar(range(len(rows)), [r["em"] for r in rows], yerr=yerr, capsize=4)
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set(
        ylabel="exact match (mean, 95% CI over tasks)",
        ylim=(0, 1.05),
        title=spec.get("name", "sweep"),
    )
    fig.tight_layout()
    fig.savefig(out / "sweep.png", dpi=100, metadata={"Software": None})
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    o = config_from_args(SweepOptions, args)
    run_sweep(load_sweep(o.file), o.workers)
    return 0
