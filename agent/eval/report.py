"""Reports: a Markdown leaderboard from summaries, and the three standard plots from trajectories."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.eval.metrics import accuracy_by_turn_budget, tool_calls
from agent.rollout.trajectory import Trajectory

COLUMNS = ("policy", "episodes", "EM", "F1", "pass@1 (95% CI)", "pass@k", "turns", "tool calls", "gen tok", "wall s")


def _row(s: dict[str, Any]) -> list[str]:
    ks = s.get("pass@k", {})
    top = max(ks, key=int) if ks else None
    calls = ", ".join(f"{k} {v:.1f}" for k, v in s.get("tool_calls", {}).items()) or "-"
    return [
        str(s["policy"]),
        str(s["episodes"]),
        f"{s['em']:.3f}",
        f"{s['f1']:.3f}",
        f"{s['pass@1']:.3f} ± {s['pass@1_ci95']:.3f}",
        f"@{top} {ks[top]:.3f}" if top else "-",
        f"{s['turns']:.2f}",
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
        out.append(f"\n### by {name}\n\n| {name} | episodes | EM | F1 |\n|---|---|---|---|")
        out += [f"| {v} | {g['episodes']} | {g['em']:.3f} | {g['f1']:.3f} |" for v, g in groups.items()]
    return "\n".join(out) + ("\n" if out else "")


def write_markdown(path: Path, summaries: Sequence[dict[str, Any]]) -> None:
    text = f"# Results: {summaries[0].get('tasks_file', '')}\n\n" + markdown_table(summaries)
    if len(summaries) == 1:
        text += breakdown_tables(summaries[0])
    path.write_text(text, encoding="utf-8")


def write_plots(out: Path, trajs: Sequence[Trajectory], *, max_turns: int, title: str) -> list[Path]:
    """accuracy_by_turn_budget.png, tool_mix.png and turns_hist.png; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    budgets = list(range(1, max_turns + 1))
    acc = accuracy_by_turn_budget(trajs, budgets)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(budgets, [acc[b] for b in budgets], marker="o")
    ax.set(xlabel="turn budget", ylabel="exact match", title=f"{title}: accuracy by turn budget", ylim=(0, 1.02))
    paths.append(_save(fig, out / "accuracy_by_turn_budget.png"))
    mix = tool_calls(trajs)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.bar(list(mix) or ["none"], list(mix.values()) or [0.0])
    ax.set(ylabel="calls per episode", title=f"{title}: tool-use mix")
    paths.append(_save(fig, out / "tool_mix.png"))
    turns = Counter(len(t.turns) for t in trajs)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.bar(sorted(turns), [turns[k] for k in sorted(turns)])
    ax.set(xlabel="turns", ylabel="episodes", title=f"{title}: turns per episode")
    paths.append(_save(fig, out / "turns_hist.png"))
    plt.close("all")
    return paths


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    return path
