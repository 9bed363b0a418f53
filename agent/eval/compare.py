"""Paired comparison of evaluation runs on the same tasks, and the sample size a comparison needs.

A run is an output folder of `wikisim eval` (summary.json + trajectories.jsonl). Runs are
paired task by task: each task's score is the mean of its seeds, and the difference of
two runs is taken per task before anything is averaged, so the tasks' spread in
difficulty cancels out. The first run is the baseline; with several others their
p-values are Holm-adjusted. Comparisons across different task sets, index manifests or
env settings are flagged, since a difference there may not come from the policies.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from agent.eval.stats import (
    achieved_power,
    bootstrap_mean,
    detectable_difference,
    holm,
    paired_compare,
    sample_size,
    variance_parts,
)
from agent.rollout.trajectory import read_trajectories
from wikisim.errors import ConfigError

_WORDS = re.compile(r"[A-Za-z]+|[0-9]+|[^A-Za-z0-9]")  # a name's words, numbers and marks
#: the settings of the old flat EvalConfig that describe the env (newer summaries nest them under "env")
FLAT_ENV_KEYS = ("index", "tasks", "max_turns", "reward", "judge", "retriever")


@dataclass(frozen=True)
class Run:
    """One evaluation's per-episode scores and what it ran against.

    Attributes:
        name: the folder's name, or as much of its path as tells it from the runs compared
            with it (`load_runs`): two checkpoints' `eval/grpo` folders read `s1/eval/grpo`, `s2/...`.
        scores: task id -> the scores of its episodes, in seed order.
        manifest_hash, tasks_file: from summary.json.
        env: the env's settings from summary.json.
    """

    name: str
    scores: dict[str, list[float]]
    manifest_hash: str
    tasks_file: str
    env: dict[str, Any]

    def task_means(self, tasks: list[str]) -> np.ndarray:
        return np.array([float(np.mean(self.scores[t])) for t in tasks])

    def episodes(self) -> tuple[list[float], list[str]]:
        """Per-episode scores and their task ids, tasks in sorted order."""
        values, ids = [], []
        for t in sorted(self.scores):
            values += self.scores[t]
            ids += [t] * len(self.scores[t])
        return values, ids


def load_run(path: str | Path, metric: str = "em") -> Run:
    """Read a `wikisim eval` output folder; `metric` is the per-episode score compared (em, f1, judge, reward)."""
    path = Path(path)
    summary_file, traj_file = path / "summary.json", path / "trajectories.jsonl"
    if not summary_file.is_file() or not traj_file.is_file():
        raise ConfigError(
            f"{path} is not an eval run: it needs summary.json and trajectories.jsonl "
            "(the --out folder of `wikisim eval`)"
        )
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    by_task: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for t in read_trajectories(traj_file):
        if metric == "reward":
            value = t.reward
        elif metric in t.metrics:
            value = t.metrics[metric]
        else:
            raise ConfigError(
                f"{traj_file}: episode {t.task_id!r} seed {t.seed} has no {metric!r} score "
                f"(it has: {', '.join(sorted(t.metrics)) or 'none'}, reward); choose --metric among them"
            )
        by_task[t.task_id].append((t.seed, float(value)))
    if not by_task:
        raise ConfigError(f"{traj_file} holds no episodes")
    config = summary.get("config", {})
    env = (
        config["env"]
        if isinstance(config.get("env"), dict)
        else {k: config[k] for k in FLAT_ENV_KEYS if k in config}
    )
    scores = {task: [v for _, v in sorted(seeded)] for task, seeded in sorted(by_task.items())}
    return Run(
        path.name, scores, summary.get("manifest_hash", ""), summary.get("tasks_file", ""), env
    )


def load_runs(paths: Sequence[str | Path], metric: str = "em", *, pool: int = 1) -> list[Run]:
    """The runs in `paths`, every `pool` consecutive folders one run (`pool_runs`: one method's
    training seeds), each named by the fewest trailing parts of its path that no other run
    shares (every eval of a stage writes a folder of the stage's name); a pooled run's path
    writes the parts its folders differ in as `{a,b}`."""
    if pool < 1:
        raise ConfigError(f"pool={pool}: a run is at least one folder")
    if len(paths) % pool:
        raise ConfigError(
            f"{len(paths)} folders cannot be pooled {pool} to a run: give a multiple of {pool}"
        )
    groups = [list(paths[i : i + pool]) for i in range(0, len(paths), pool)]
    parts = [_pooled_parts([Path(p).resolve().parts for p in group]) for group in groups]
    names: list[str] = []  # at the longest tail, whole paths: the same folder given twice
    for k in range(1, max(map(len, parts), default=0) + 1):
        names = ["/".join(p[-k:]) for p in parts]
        if len(set(names)) == len(names):
            break
    return [
        pool_runs([load_run(p, metric) for p in group], name)
        for group, name in zip(groups, names, strict=True)
    ]


def _pooled_parts(parts: list[tuple[str, ...]]) -> tuple[str, ...]:
    """One path for several: the parts they differ in written `{a,b}` (or their whole paths,
    `+`-joined, where they differ in depth)."""
    if len(parts) == 1:
        return parts[0]
    if len({len(p) for p in parts}) > 1:
        return ("+".join("/".join(p) for p in parts),)
    return tuple(_braced(column) for column in zip(*parts, strict=True))


def _braced(names: tuple[str, ...]) -> str:
    """`seed{0,1,2}` for seed0, seed1, seed2: what the names share, once, around what they don't;
    shared only in whole words and numbers (`s{59_plain,61_dyn}`, not `s{59_plai,61_dy}n`)."""
    if len(set(names)) == 1:
        return names[0]
    words = [_WORDS.findall(n) for n in names]
    head = 0
    while all(len(w) > head for w in words) and len({w[head] for w in words}) == 1:
        head += 1
    tail = 0
    while all(len(w) > head + tail for w in words) and len({w[-1 - tail] for w in words}) == 1:
        tail += 1
    middles = ["".join(w[head : len(w) - tail]) for w in words]
    return (
        "".join(words[0][:head])
        + "{"
        + ",".join(middles)
        + "}"
        + "".join(words[0][len(words[0]) - tail :])
    )


def pool_runs(runs: Sequence[Run], name: str) -> Run:
    """Several evaluations as one run (the evals of one method's training seeds on the same
    tasks): a task's scores are all of theirs, so its score is their mean and a comparison pairs
    tasks over every seed at once. They must share tasks, index and env settings."""
    first = runs[0]
    for run in runs[1:]:
        if set(run.scores) != set(first.scores):
            raise ConfigError(
                f"cannot pool {run.name} with {first.name}: their tasks differ "
                f"({len(set(run.scores) ^ set(first.scores))} in one only)"
            )
        if run.manifest_hash != first.manifest_hash or _env_differences(first, run):
            raise ConfigError(
                f"cannot pool {run.name} with {first.name}: their index manifests or env settings differ"
            )
    scores = {t: [v for run in runs for v in run.scores[t]] for t in first.scores}
    tasks_file = " + ".join(dict.fromkeys(run.tasks_file for run in runs))
    return Run(name, scores, first.manifest_hash, tasks_file, first.env)


def only_tasks(run: Run, pattern: str) -> Run:
    """`run` on the tasks whose id `pattern` (a regular expression) matches, from its start."""
    try:
        match = re.compile(pattern).match
    except re.error as e:
        raise ConfigError(f"task pattern {pattern!r} is not a regular expression: {e}") from e
    scores = {t: v for t, v in run.scores.items() if match(t)}
    if not scores:
        raise ConfigError(
            f"no task of {run.name} matches {pattern!r} (its ids look like {next(iter(run.scores))!r})"
        )
    return replace(run, scores=scores)


def _env_differences(a: Run, b: Run) -> list[str]:
    """The env settings two runs differ in, their task file's path aside (`tasks_file` has it)."""
    return sorted(
        k for k in set(a.env) | set(b.env) if a.env.get(k) != b.env.get(k) and k != "tasks"
    )


def _flags(base: Run, other: Run) -> list[str]:
    """Why a difference between these two runs may not come from the policies alone."""
    flags = []
    only_base, only_other = (
        set(base.scores) - set(other.scores),
        set(other.scores) - set(base.scores),
    )
    if only_base or only_other:
        flags.append(
            f"different task sets: {len(only_base)} tasks only in {base.name}, "
            f"{len(only_other)} only in {other.name} (compared on the common ones)"
        )
    if base.manifest_hash != other.manifest_hash:
        flags.append(
            f"different index manifests: {base.manifest_hash or '?'} vs {other.manifest_hash or '?'}"
        )
    if base.tasks_file != other.tasks_file:
        flags.append(f"different task files: {base.tasks_file!r} vs {other.tasks_file!r}")
    differing = _env_differences(base, other)
    if differing:
        flags.append(
            "different env settings: "
            + ", ".join(f"{k}={base.env.get(k)!r} vs {other.env.get(k)!r}" for k in differing)
        )
    return flags


def compare_runs(runs: list[Run], *, confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """Each run's mean with its interval, and each later run against the first, paired by task.

    Returns {"runs": [...], "comparisons": [...]}; a comparison's diff is OTHER - BASELINE.
    """
    if len(runs) < 2:
        raise ConfigError(
            "compare needs at least two runs: a baseline and one or more to compare with it"
        )
    rows = []
    for run in runs:
        values, ids = run.episodes()
        ci = bootstrap_mean(values, ids, confidence=confidence, seed=seed)
        rows.append({"run": run.name, "tasks": len(run.scores), "episodes": len(values), **_ci(ci)})
    base = runs[0]
    comparisons: list[dict[str, Any]] = []
    for other in runs[1:]:
        common = sorted(set(base.scores) & set(other.scores))
        if not common:
            raise ConfigError(f"{base.name} and {other.name} share no task: nothing to pair")
        result = paired_compare(
            other.task_means(common), base.task_means(common), confidence=confidence, seed=seed
        )
        comparisons.append(
            {
                "baseline": base.name,
                "run": other.name,
                "tasks": len(common),
                **_ci(result.diff),
                "p_value": result.p_value,
                "test": result.test,
                "run_better": result.a_better,
                "baseline_better": result.b_better,
                "flags": _flags(base, other),
            }
        )
    for c, adjusted in zip(comparisons, holm([c["p_value"] for c in comparisons]), strict=True):
        c["p_holm"] = adjusted
    return {"confidence": confidence, "runs": rows, "comparisons": comparisons}


def _ci(interval: Any) -> dict[str, float]:
    return {"mean": interval.mean, "low": interval.low, "high": interval.high}


def format_comparison(report: dict[str, Any], metric: str) -> str:
    """Markdown: the runs with intervals, then the paired differences with p-values and flags."""
    pct = round(100 * report["confidence"])
    lines = [f"| run | tasks | episodes | {metric} [{pct}% CI] |", "|---|---|---|---|"]
    lines += [
        f"| {r['run']} | {r['tasks']} | {r['episodes']} | {r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}] |"
        for r in report["runs"]
    ]
    lines += [
        "",
        f"| run - baseline | tasks | difference [{pct}% CI] | better / worse tasks | test | p | p (Holm) |",
        "|---|---|---|---|---|---|---|",
    ]
    notes = []
    for c in report["comparisons"]:
        lines.append(
            f"| {c['run']} - {c['baseline']} | {c['tasks']} | {c['mean']:+.3f} [{c['low']:+.3f}, "
            f"{c['high']:+.3f}] | {c['run_better']} / {c['baseline_better']} | {c['test']} | "
            f"{c['p_value']:.3g} | {c['p_holm']:.3g} |"
        )
        notes += [f"- warning ({c['run']} vs {c['baseline']}): {f}" for f in c["flags"]]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def power_table(
    run: Run,
    delta: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    correlation: float = 0.0,
    seeds: tuple[int, ...] = (1, 2, 4, 8),
) -> dict[str, Any]:
    """Tasks needed to detect `delta` against this run, per number of seeds, and what this run can detect.

    Both policies are taken to vary as the baseline does (its between-task and between-seed
    variance); `correlation` is that of the two policies' task means (0: conservative).
    """
    if len(run.scores) < 2:
        raise ConfigError(
            f"{run.name} has {len(run.scores)} task; power needs a baseline run on at least two"
        )
    values, ids = run.episodes()
    parts = variance_parts(values, ids)
    rows = []
    for s in seeds:
        sd = parts.diff_sd(s, correlation)
        n = sample_size(delta, sd, alpha=alpha, power=power) if sd > 0 else 1
        rows.append({"seeds": s, "sd_diff": sd, "tasks": n, "episodes_per_run": n * s})
    own_sd = parts.diff_sd(parts.seeds, correlation)
    own = {
        "tasks": parts.tasks,
        "seeds": parts.seeds,
        "power_at_delta": achieved_power(parts.tasks, delta, own_sd, alpha=alpha)
        if own_sd > 0
        else 1.0,
        "detectable_delta": detectable_difference(parts.tasks, own_sd, alpha=alpha, power=power),
    }
    return {
        "baseline": run.name,
        "delta": delta,
        "alpha": alpha,
        "power": power,
        "correlation": correlation,
        "between_task_var": parts.between,
        "within_task_var": parts.within,
        "rows": rows,
        "this_run": own,
    }


def format_power(report: dict[str, Any], metric: str) -> str:
    own = report["this_run"]
    lines = [
        f"Detecting a difference of {report['delta']:+.3f} in {metric} against {report['baseline']} "
        f"(two-sided alpha {report['alpha']}, power {report['power']}, correlation of the two policies' "
        f"task means {report['correlation']}):",
        f"variance between tasks {report['between_task_var']:.4f}, between seeds of a task "
        f"{report['within_task_var']:.4f}"
        + ("" if own["seeds"] > 1 else " (one seed: all of it counted between tasks)"),
        "",
        "| seeds per task | sd of a task's difference | tasks needed | episodes per run |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['seeds']} | {r['sd_diff']:.3f} | {r['tasks']} | {r['episodes_per_run']} |"
        for r in report["rows"]
    ]
    lines += [
        "",
        f"This run ({own['tasks']} tasks x {own['seeds']} seeds): power {own['power_at_delta']:.2f} at that "
        f"difference; it detects {own['detectable_delta']:.3f} with power {report['power']}.",
    ]
    return "\n".join(lines) + "\n"
