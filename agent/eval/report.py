"""Reports: a Markdown and a CSV leaderboard from summaries, and the standard plots from trajectories.

Every mean is shown with its 95% interval over tasks (`summary["intervals"]`, a bootstrap
in which the seeds of one task are resampled together); plots draw the same as error bars.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agent.eval.metrics import accuracy_by_turn_budget, tool_calls
from agent.eval.stats import bootstrap_mean
from agent.rollout.trajectory import Trajectory

COLUMNS = (
    "policy",
    "episodes",
    "tasks",
    "EM",
    "F1",
    "pass@1",
    "pass@k",
    "reward",
    "turns",
    "tool calls",
    "gen tok",
    "wall s",
)
#: the means shown with an interval, in CSV column order
INTERVAL_KEYS = ("em", "f1", "judge", "pass@1", "reward", "tool_calls_total", "turns")
NOTE = "Brackets: 95% bootstrap interval over tasks (the seeds of a task resampled together).\n"


def _ci(s: dict[str, Any], key: str) -> str:
    ci = s["intervals"][key]
    return f"{ci['mean']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"


def _row(s: dict[str, Any]) -> list[str]:
    ks = s.get("pass@k_intervals", {})
    top = max(ks, key=int) if ks else None
    calls = ", ".join(f"{k} {v:.1f}" for k, v in s.get("tool_calls", {}).items()) or "-"
    return [
        str(s["policy"]),
        str(s["episodes"]),
        str(s["tasks"]),
        _ci(s, "em"),
        _ci(s, "f1"),
        _ci(s, "pass@1"),
        f"@{top} {ks[top]['mean']:.3f} [{ks[top]['low']:.3f}, {ks[top]['high']:.3f}]"
        if top
        else "-",
        _ci(s, "reward"),
        _ci(s, "turns"),
        calls,
        f"{s['generated_tokens']:.0f}",
        f"{s.get('wall_s', 0.0):.1f}",
    ]


def markdown_table(summaries: Sequence[dict[str, Any]]) -> str:
    """A leaderboard, one row per summary, in the given order."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_row(s)) + " |" for s in summaries]
    return "\n".join(lines) + "\n"


def breakdown_tables(summary: dict[str, Any]) -> str:
    out = []
    for name, groups in summary.get("breakdowns", {}).items():
        out.append(
            f"\n### by {name}\n\n| {name} | tasks | episodes | EM [95% CI] | F1 |\n|---|---|---|---|---|"
        )
        out += [
            f"| {v} | {g['tasks']} | {g['episodes']} | {g['em']:.3f} [{g['em_low']:.3f}, {g['em_high']:.3f}] "
            f"| {g['f1']:.3f} |"
            for v, g in groups.items()
        ]
    return "\n".join(out) + ("\n" if out else "")


def write_markdown(path: Path, summaries: Sequence[dict[str, Any]]) -> None:
    text = (
        f"# Results: {summaries[0].get('tasks_file', '')}\n\n"
        + markdown_table(summaries)
        + "\n"
        + NOTE
    )
    if len(summaries) == 1:
        text += breakdown_tables(summaries[0])
    path.write_text(text, encoding="utf-8")


def write_csv(path: Path, summaries: Sequence[dict[str, Any]]) -> None:
    """One row per summary: each mean with its interval's ends as METRIC, METRIC_low, METRIC_high."""
    import csv

    keys = [k for k in INTERVAL_KEYS if all(k in s["intervals"] for s in summaries)]
    header = ["policy", "tasks_file", "manifest_hash", "tasks", "episodes", "seeds"]
    header += [f"{k}{end}" for k in keys for end in ("", "_low", "_high")]
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        for s in summaries:
            row = [
                s["policy"],
                s.get("tasks_file", ""),
                s.get("manifest_hash", ""),
                s["tasks"],
                s["episodes"],
                s["seeds"],
            ]
            row += [f"{s['intervals'][k][f]:.6f}" for k in keys for f in ("mean", "low", "high")]
            writer.writerow(row)


def write_plots(
    out: Path, trajs: Sequence[Trajectory], *, max_turns: int, title: str
) -> list[Path]:
    """accuracy_by_turn_budget.png, tool_mix.png and turns_hist.png; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    tasks = [t.task_id for t in trajs]
    budgets = list(range(1, max_turns + 1))
    acc = accuracy_by_turn_budget(trajs, budgets)
    within = [
        bootstrap_mean([t.metrics.get("em", 0.0) * (len(t.turns) <= b) for t in trajs], tasks)
        for b in budgets
    ]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.errorbar(budgets, [acc[b] for b in budgets], yerr=_yerr(within), marker="o", capsize=3)
    ax.set(
        xlabel="turn budget",
        ylabel="exact match (95% CI over tasks)",
        title=f"{title}: accuracy by turn budget",
        ylim=(0, 1.02),
    )
    paths.append(_save(fig, out / "accuracy_by_turn_budget.png"))
    mix = tool_calls(trajs)
    per_tool = [
        bootstrap_mean(
            [sum(n == name for turn in t.turns for n in turn.tool_calls) for t in trajs], tasks
        )
        for name in mix
    ]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.bar(
        list(mix) or ["none"],
        list(mix.values()) or [0.0],
        yerr=_yerr(per_tool) if mix else None,
        capsize=4,
    )
    ax.set(ylabel="calls per episode (95% CI over tasks)", title=f"{title}: tool-use mix")
    paths.append(_save(fig, out / "tool_mix.png"))
    turns = Counter(len(t.turns) for t in trajs)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.bar(sorted(turns), [turns[k] for k in sorted(turns)])
    ax.set(xlabel="turns", ylabel="episodes", title=f"{title}: turns per episode")
    paths.append(_save(fig, out / "turns_hist.png"))
    plt.close("all")
    return paths


def _yerr(cis: Sequence[Any]) -> np.ndarray:
    """Matplotlib's asymmetric error bars (2 x n: below, above) from intervals."""
    return np.array([[c.mean - c.low for c in cis], [c.high - c.mean for c in cis]])


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    return path
