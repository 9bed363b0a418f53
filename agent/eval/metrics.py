"""Numbers a paper reports from trajectories: accuracy, pass@k, tool use, tokens, breakdowns.

Pure functions over trajectories and task records, so the harness, the sweep and the
notebook compute them the same way. Every mean carries a 95% interval from a bootstrap
over tasks (`agent.eval.stats`): the questions are the sample, and the seeds of one
question are resampled together, so one seed on 500 questions reports about +-0.03.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from agent.eval.stats import bootstrap_mean, pass_at_k_interval
from agent.rollout.trajectory import Trajectory
from wikisim.errors import ConfigError

BREAKDOWN_FIELDS = ("source", "hops", "uncertainty", "type", "level")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): P(at least one of k draws from n samples, c correct, is correct).

    1 - C(n-c, k) / C(n, k), computed as a product so large n does not overflow.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ConfigError(f"pass_at_k(n={n}, c={c}, k={k}) needs 0 <= c <= n and 1 <= k <= n")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def success(traj: Trajectory, metric: str = "em") -> float:
    """The per-episode score used for accuracy and pass@k (judge when it was asked for)."""
    return float(traj.metrics.get(metric, 0.0))


def accuracy_by_turn_budget(
    trajs: Sequence[Trajectory], budgets: Sequence[int], metric: str = "em"
) -> dict[int, float]:
    """Accuracy had the episodes been cut after `b` turns: correct answers given within b turns."""
    return {
        b: sum(success(t, metric) for t in trajs if len(t.turns) <= b) / max(len(trajs), 1)
        for b in budgets
    }


def _by_task(trajs: Sequence[Trajectory], metric: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for t in trajs:
        out[t.task_id].append(success(t, metric))
    return out


def pass_at_ks(trajs: Sequence[Trajectory], metric: str = "em") -> dict[int, float]:
    """Mean unbiased pass@k over tasks for k = 1..(fewest samples of any task)."""
    by_task = _by_task(trajs, metric)
    if not by_task:
        return {}
    n_min = min(len(v) for v in by_task.values())
    return {
        k: sum(pass_at_k(len(v), sum(s >= 1.0 for s in v), k) for v in by_task.values())
        / len(by_task)
        for k in range(1, n_min + 1)
    }


def episode_values(trajs: Sequence[Trajectory], metric: str = "em") -> dict[str, list[float]]:
    """Per-episode values of every mean the harness reports with an interval, in episode order."""
    values = {
        "em": [t.metrics.get("em", 0.0) for t in trajs],
        "f1": [t.metrics.get("f1", 0.0) for t in trajs],
        "reward": [t.reward for t in trajs],
        "pass@1": [float(success(t, metric) >= 1.0) for t in trajs],
        "tool_calls_total": [float(sum(len(turn.tool_calls) for turn in t.turns)) for t in trajs],
        "turns": [float(len(t.turns)) for t in trajs],
        "generated_tokens": [float(sum(len(x.ids) for x in t.turns)) for t in trajs],
    }
    if trajs and all("judge" in t.metrics for t in trajs):
        values["judge"] = [t.metrics["judge"] for t in trajs]
    return values


def intervals(
    trajs: Sequence[Trajectory], metric: str = "em", seed: int = 0
) -> dict[str, dict[str, float]]:
    """Each reported mean with its 95% bootstrap interval over tasks (seeds of a task move together)."""
    tasks = [t.task_id for t in trajs]
    return {
        name: bootstrap_mean(v, tasks, seed=seed).to_dict()
        for name, v in episode_values(trajs, metric).items()
    }


def pass_at_k_intervals(
    trajs: Sequence[Trajectory], metric: str = "em", seed: int = 0
) -> dict[str, dict]:
    """Unbiased pass@k for k = 1..(fewest samples of any task), each with a bootstrap interval over tasks."""
    by_task = _by_task(trajs, metric)
    if not by_task:
        return {}
    groups = [by_task[k] for k in sorted(by_task)]
    n = [len(v) for v in groups]
    c = [sum(s >= 1.0 for s in v) for v in groups]
    return {str(k): pass_at_k_interval(n, c, k, seed=seed).to_dict() for k in range(1, min(n) + 1)}


def tool_calls(trajs: Sequence[Trajectory]) -> dict[str, float]:
    """Mean calls per episode, by tool name (sorted by name)."""
    counts = Counter(name for t in trajs for turn in t.turns for name in turn.tool_calls)
    return {name: counts[name] / max(len(trajs), 1) for name in sorted(counts)}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def think_closes(trajs: Sequence[Trajectory]) -> float:
    """Turns per episode whose think was closed by its budget (`SamplingConfig.think_budget`)."""
    return _mean([sum(bool(u.forced_at) for u in t.turns) for t in trajs])


def summarize(trajs: Sequence[Trajectory], metric: str = "em") -> dict[str, Any]:
    """Headline numbers of one policy on one task set (all seeds pooled)."""
    if not trajs:
        raise ConfigError("no trajectories to summarise; check the task file and --seeds")
    ci = intervals(trajs, metric)
    return {
        "episodes": len(trajs),
        "tasks": len({t.task_id for t in trajs}),
        "seeds": len({t.seed for t in trajs}),
        "em": _mean([t.metrics.get("em", 0.0) for t in trajs]),
        "f1": _mean([t.metrics.get("f1", 0.0) for t in trajs]),
        **(
            {"judge": _mean([t.metrics["judge"] for t in trajs])}
            if all("judge" in t.metrics for t in trajs)
            else {}
        ),
        "reward": _mean([t.reward for t in trajs]),
        "pass@1": ci["pass@1"]["mean"],
        "pass@k": {str(k): v for k, v in pass_at_ks(trajs, metric).items()},
        "intervals": ci,
        "pass@k_intervals": pass_at_k_intervals(trajs, metric),
        "answered": _mean([float(t.answer is not None) for t in trajs]),
        "truncated": _mean([float(t.truncated) for t in trajs]),
        "turns": _mean([len(t.turns) for t in trajs]),
        "think_closes": think_closes(trajs),
        "tool_calls": tool_calls(trajs),
        # calls the env could not run as written (trajectories recorded before it: absent)
        **(
            {"malformed_calls": _mean([t.metrics["malformed"] for t in trajs])}
            if all("malformed" in t.metrics for t in trajs)
            else {}
        ),
        "prompt_tokens": _mean([len(t.prompt_ids) for t in trajs]),
        "generated_tokens": _mean([sum(len(x.ids) for x in t.turns) for t in trajs]),
        "observation_tokens": _mean([sum(len(x.observation_ids) for x in t.turns) for t in trajs]),
        "env_s": _mean([t.timings.get("env_s", 0.0) for t in trajs]),
        "policy_s": _mean([t.timings.get("policy_s", 0.0) for t in trajs]),
    }


def breakdowns(
    trajs: Sequence[Trajectory],
    tasks: Mapping[str, Mapping[str, Any]],
    fields: Sequence[str] = BREAKDOWN_FIELDS,
) -> dict[str, dict[str, dict[str, float]]]:
    """EM/F1/count per value of each task field that the tasks carry (e.g. source, hops), EM with its interval.

    A list-valued field (a task's several kinds of uncertainty) puts the task in each of its groups.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in fields:
        groups: dict[str, list[Trajectory]] = defaultdict(list)
        for t in trajs:
            value = tasks.get(t.task_id, {}).get(name)
            for v in value if isinstance(value, list | tuple) else [] if value is None else [value]:
                groups[str(v)].append(t)
        if groups:
            out[name] = {v: _group(g) for v, g in sorted(groups.items())}
    return out


def _group(trajs: Sequence[Trajectory]) -> dict[str, float]:
    em = bootstrap_mean([t.metrics.get("em", 0.0) for t in trajs], [t.task_id for t in trajs])
    return {
        "episodes": len(trajs),
        "tasks": em.n,
        "em": em.mean,
        "em_low": em.low,
        "em_high": em.high,
        "f1": _mean([t.metrics.get("f1", 0.0) for t in trajs]),
    }
