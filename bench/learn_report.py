"""A learning run's report: each stage's figures per held-out set, per group and pooled over
the seeds, the gains with their spread, the learning issue's targets judged on them, the table,
the plot and the results JSON (bench/learn_agent.py's runs, parts merged, re-evaluations)."""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learn_episodes import UNSEARCHED, WRONG  # noqa: E402

from agent.eval.stats import paired_compare  # noqa: E402
from wikisim.revision import code_revision  # noqa: E402

STAGES = ("untrained", "sft", "grpo")


#: A share among some episodes or queries, not all: pooled over what it counts (a set with no
#: correct answer says nothing of how grounded correct answers are, rather than 0).
POOLED_OVER = {
    "grounded_share_of_answers": "answered",
    "grounded_share_of_correct": "em",
    "em_when_seen": "gold_seen",
    "query_words": "queries",
    "one_word_queries": "queries",
    "query_in_question": "queries",
}


def pooled(per_set: dict[str, dict], key: str) -> float:
    """A metric over every held-out episode (sets weighted by their size), or over the episodes
    or queries it is a share of (`POOLED_OVER`)."""
    over = POOLED_OVER.get(key)
    weight = {k: s["episodes"] * (s[over] if over else 1.0) for k, s in per_set.items()}
    n = sum(weight.values())
    return sum(s[key] * weight[k] for k, s in per_set.items() if key in s) / n if n else 0.0


def expected_range(k: int) -> float:
    """The mean of max - min over k independent standard normal draws (1.128 for 2, 1.693 for
    3): what a spread of k seeds is, in standard errors, when nothing but chance sets it."""
    cdf, step = statistics.NormalDist().cdf, 0.01
    grid = (cdf(-8.0 + i * step) for i in range(1601))
    return step * sum(1.0 - p**k - (1.0 - p) ** k for p in grid)


def by_question(run: dict, stage: str, sets: tuple[str, ...]) -> dict[str, float] | None:
    """A stage's EM per held-out question over `sets`; None where its stats predate them."""
    if not all("em_by_task" in run[stage][s] for s in sets):
        return None
    return {t: v for s in sets for t, v in run[stage][s]["em_by_task"].items()}


def question_spread(runs: list[dict], sets: tuple[str, ...], a: str, b: str) -> float | None:
    """The spread across seeds the held-out questions alone would give the gain from stage `a`
    to `b`: seeds alike in all but which of the questions each one's stages happen to turn right
    or wrong. Each seed's gain, paired by question, has the standard error of a mean over them;
    this is the expected range of that many such draws. A spread well above it is the seeds'
    own; one near it is the questions' (only more of them shrink it). None where a run's stats
    predate the per-question results (`em_by_task`)."""
    errors = []
    for r in runs:
        before, after = by_question(r, a, sets), by_question(r, b, sets)
        if before is None or after is None or len(before) < 2:
            return None
        diffs = [after[t] - before[t] for t in before]
        errors.append(statistics.variance(diffs) / len(diffs))
    return expected_range(len(runs)) * math.sqrt(statistics.mean(errors))


def paired(runs: list[dict], sets: tuple[str, ...], a: str, b: str) -> dict | None:
    """Stage `b` against `a` on the same questions, each question's EM the mean over the seeds:
    the bootstrap interval of the mean gain and the paired test (`paired_compare`: McNemar's
    for one seed, sign flips for more); None where a run's stats predate the per-question EM."""
    pairs = []
    for r in runs:
        x, y = by_question(r, a, sets), by_question(r, b, sets)
        if x is None or y is None:
            return None
        pairs.append((x, y))
    ids = sorted(pairs[0][0])
    before = [statistics.mean(x[t] for x, _ in pairs) for t in ids]
    after = [statistics.mean(y[t] for _, y in pairs) for t in ids]
    res = paired_compare(after, before)
    return {
        "mean": res.diff.mean,
        "ci95": [res.diff.low, res.diff.high],
        "p": res.p_value,
        "test": res.test,
        "better": res.a_better,
        "worse": res.b_better,
    }


#: The held-out sets the learning issue's targets are stated on, each pooled like "pooled".
GROUPS = {
    "human-written": ("bundled", "hotpotqa-held", "musique-held"),
    "synthesized": ("synth-test", "synth-dev"),
}


#: The learning issue's bench runs three seeds; a gain's spread across fewer (none for one seed,
#: a narrower range for two) would meet "the gain exceeds its spread" too easily to be judged.
SPREAD_SEEDS = 3


def exceeds(gain: float, spread: float) -> bool:
    """Whether a mean gain is larger than its spread, a tie read as a tie: both are sums of
    fractions of questions, and their floats can differ in the last bits where the fractions are
    equal (gains of 4, 2 and 6 questions of 96: mean and spread both 4/96, the mean a bit above)."""
    return gain > spread and not math.isclose(gain, spread, rel_tol=1e-9, abs_tol=1e-12)


def summarize(runs: list[dict], baseline: dict) -> dict:
    """Per held-out set, per group of sets (`GROUPS`) and pooled: each stage's means over the
    seeds, the gains with their spread, and the issue's targets judged on them."""
    keys = (
        "em",
        "f1",
        "pass@1",
        "search_calls",
        "visit_calls",
        "malformed_calls",
        "refused_turns",
        "retries",
        "grounded_share_of_correct",
        "gold_seen",
        "em_when_seen",
        "tokens_per_episode",
        *(f"wrong_{k}" for k in WRONG),
        *(f"unsearched_{k}" for k in UNSEARCHED),
        "query_words",
        "one_word_queries",
        "query_in_question",
    )
    sets = list(baseline)
    members = {
        **{s: (s,) for s in sets},
        **{g: m for g, m in GROUPS.items() if set(m) <= set(sets)},
        "pooled": tuple(sets),
    }

    def figure(per_set: dict[str, dict], held: str, k: str) -> float | None:
        """One set's figure, or a group's pooled over its sets; None where a set lacks it."""
        sub = {s: per_set[s] for s in members[held]}
        if not all(k in v for v in sub.values()):
            return None
        return sub[held][k] if held in sets else pooled(sub, k)

    out: dict = {"per_set": {}, "stages": {}, "targets": {}}
    for held in members:
        row: dict = {"search-answer": {"em": figure(baseline, held, "em")}}
        for stage in STAGES:
            vals: dict[str, Any] = {}
            for k in keys:
                per_seed = [v for r in runs if (v := figure(r[stage], held, k)) is not None]
                if per_seed:
                    vals[k] = statistics.mean(per_seed)
                    vals[f"{k}_per_seed"] = per_seed
            if held in sets:
                vals["em_ci95_seed0"] = runs[0][stage][held]["em_ci95"]
            row[stage] = vals
        for a, b in (("untrained", "sft"), ("sft", "grpo")):
            gains = [
                x - y for x, y in zip(row[b]["em_per_seed"], row[a]["em_per_seed"], strict=True)
            ]
            row[f"gain {a}->{b}"] = {
                "mean": statistics.mean(gains),
                "per_seed": gains,
                "spread": max(gains) - min(gains),
                "question_spread": question_spread(runs, members[held], a, b),
                "paired": paired(runs, members[held], a, b),
            }
        out["per_set"][held] = row
    for g in GROUPS:
        if g in out["per_set"]:
            row = out["per_set"][g]
            out["targets"][g] = {
                "grpo_beats_search_answer": row["grpo"]["em"] > row["search-answer"]["em"],
                "grpo_beats_sft": row["grpo"]["em"] > row["sft"]["em"],
                **{
                    f"{stage}_gain_exceeds_spread": (
                        exceeds(gain["mean"], gain["spread"]) if len(runs) >= SPREAD_SEEDS else None
                    )
                    for stage, gain in (
                        ("sft", row["gain untrained->sft"]),
                        ("grpo", row["gain sft->grpo"]),
                    )
                },
            }
    grpo = out["per_set"]["pooled"]["grpo"]
    out["targets"]["grpo_searches_at_least_once_an_episode"] = grpo["search_calls"] >= 1.0
    # with no correct answer there is nothing to judge grounded: None, printed as such
    out["targets"]["grpo_correct_mostly_grounded"] = (
        grpo["grounded_share_of_correct"] > 0.5 if grpo["em"] > 0 else None
    )
    out["stages"] = {
        s: {k: v for k, v in out["per_set"]["pooled"][s].items() if not k.endswith("_per_seed")}
        for s in STAGES
    }
    return out


def plot(runs: list[dict], png: Path) -> None:
    import matplotlib.pyplot as plt

    fig = figure(runs)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def figure(runs: list[dict]) -> Any:
    """Held-out reward (dev checks, where the run made any, and the stage evals) and training
    reward over GRPO steps, each seed a colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for r in runs:
        curve = r["grpo_curve"]
        dev = [c for c in curve if "dev_pass@1" in c]
        (line,) = axes[0].plot(  # a run without dev checks (--quick) gets no legend entry
            [c["step"] for c in dev],
            [c["dev_pass@1"] for c in dev],
            "o-",
            label=f"seed {r['seed']}: dev pass@1, T=1" if dev else None,
        )
        axes[0].plot(  # the stage evals: many more questions than the dev points, greedy
            [0, r.get("grpo_kept_step", r["grpo_steps_run"]) or 0],  # the weights evaluated
            [pooled(r["sft"], "em"), pooled(r["grpo"], "em")],
            "s--",
            color=line.get_color(),
            label=f"seed {r['seed']}: EM, SFT -> GRPO",
        )
        (line,) = axes[1].plot(
            [c["step"] for c in curve], [c["reward"] for c in curve], label=f"seed {r['seed']}"
        )
        for step, back_to in rollbacks(r):
            axes[1].axvspan(back_to, step, color=line.get_color(), alpha=0.12, lw=0)
    axes[0].set_title("held-out reward over GRPO steps")
    axes[1].set_title("training reward (shaded: steps a rollback undid)")
    for ax in axes:
        ax.set_xlabel("GRPO step")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def rollbacks(run: dict) -> list[tuple[int, int]]:
    """(step, step gone back to) for each check the collapse guard failed and GRPO went on from
    the weights of its last check passed (`--health-retries`)."""
    return [
        (c["step"], int(c["health_kept_step"]))
        for c in run["grpo_curve"]
        if "health_rolled_back" in c
    ]


def verdict(met: bool | None, unjudged: str = "no correct answer") -> str:
    return f"not judged ({unjudged})" if met is None else "met" if met else "NOT met"


BUDGET_S = 7200.0  # the learning issue: the whole bench within 2 hours on 2 CPU cores
BUDGET_CORES = 2


def budget(args: dict, runs: list[dict], wall: float, span: list[float] | None) -> dict:
    """Whether this report is the whole bench run within 2 hours on 2 CPU cores, or why it cannot
    say: only a report whose every stage ran in its wall time (three seeds, every held-out
    question, the untrained eval and SFT its own, not resumed) on a CPU of 2 cores is judged.
    Seeds side by side count once (`combined_wall`), so three processes of one thread on 2 cores
    are judged as one process of two."""
    cores = [r.get("machine", {}).get("cores") for r in runs]
    most = max((c for c in cores if c is not None), default=0)
    unjudged = [
        (not args["device"].startswith("cpu"), f"ran on {args['device']}"),
        (bool(args.get("eval_limit")), "not every held-out question"),
        (len(runs) < SPREAD_SEEDS, f"{len(runs)} seeds"),
        (bool(args.get("untrained_from")), "the untrained eval is another report's"),
        (any(r.get("sft_from") for r in runs), "SFT is an earlier run's"),
        (
            bool(args.get("resume")) or any(r.get("grpo_resumed") for r in runs),
            "resumed: its wall time is its last process's",
        ),
        (span is None, "its parts did not record when they ran"),
        (None in cores, "its seeds did not record their cores"),
        (most > BUDGET_CORES, f"ran on {most} cores"),
    ]
    why = next((reason for cut, reason in unjudged if cut), "")
    return {"wall_s": wall, "met": None if why else wall <= BUDGET_S, "why": why}


def table(summary: dict) -> str:
    lines = []
    for held, row in summary["per_set"].items():
        lines.append(f"\n{held}: search-answer EM {row['search-answer']['em']:.3f}")
        lines.append(
            "| stage | EM | F1 | pass@1 | search/ep | visit/ep | grounded (correct) | gold seen | EM when seen | tokens/ep | wrong: none/echo/misread/unread | query words / one-word / in question |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for s in STAGES:
            v = row[s]
            ci = v.get("em_ci95_seed0")
            em = f"{v['em']:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
            p1 = f"{v['pass@1']:.3f}" if "pass@1" in v else "-"
            lines.append(
                f"| {s} | {em} | {v['f1']:.3f} | {p1} | {v['search_calls']:.2f} | {v['visit_calls']:.2f} | "
                f"{v['grounded_share_of_correct']:.2f} | {v.get('gold_seen', float('nan')):.2f} | "
                f"{v.get('em_when_seen', float('nan')):.2f} | {v['tokens_per_episode']:.0f} | "
                + "/".join(f"{v.get(f'wrong_{k}', float('nan')):.2f}" for k in WRONG)
                + f" | {v.get('query_words', float('nan')):.1f} / {v.get('one_word_queries', float('nan')):.2f}"
                + f" / {v.get('query_in_question', float('nan')):.2f} |"
            )
        for g in ("gain untrained->sft", "gain sft->grpo"):
            gain, chance, pair = row[g], row[g].get("question_spread"), row[g].get("paired")
            alone = "" if chance is None else f"; the questions alone ~{chance:.3f}"
            test = (
                ""
                if pair is None
                else (
                    f"; paired by question {pair['mean']:+.3f} [{pair['ci95'][0]:+.3f}, {pair['ci95'][1]:+.3f}], "
                    f"{pair['better']} better / {pair['worse']} worse, p = {pair['p']:.2g}"
                )
            )
            lines.append(
                f"{g}: {gain['mean']:+.3f} (per seed {gain['per_seed']}, spread {gain['spread']:.3f}{alone}){test}"
            )
    grpo = summary["stages"]["grpo"]
    none = [grpo.get(f"unsearched_{k}") for k in UNSEARCHED]  # absent from older reports
    searching = f" ({grpo['search_calls']:.3f} an episode"  # and why episodes ran no search
    if None not in none:
        searching += f"; episodes without one: {none[0]:.3f} after a call the env did not run, "
        searching += f"{none[1]:.3f} without a call"
    why = {"grpo_searches_at_least_once_an_episode": searching + ")"}
    unjudged = {}
    if timed := summary.get("budget"):
        why["whole_bench_within_2_hours_on_2_cores"] = (
            f": {timed['wall_s'] / 3600:.2f} hours of wall time"
        )
        unjudged["whole_bench_within_2_hours_on_2_cores"] = timed["why"]
    seeds = len(summary["per_set"]["pooled"]["grpo"]["em_per_seed"])
    few = f"{seeds} seeds; a spread is judged across {SPREAD_SEEDS}"
    lines.append("\nthe learning issue's targets:")
    for name, met in summary["targets"].items():
        if isinstance(met, dict):
            lines.extend(f"  {name}: {k} {verdict(v, few)}" for k, v in met.items())
        else:
            said = verdict(met, unjudged[name]) if name in unjudged else verdict(met)
            lines.append(f"  {name} {said}{why.get(name, '')}")
    return "\n".join(lines)


def combined_wall(parts: list[dict]) -> tuple[float, list[float] | None]:
    """The wall time of runs merged by `--combine`, the union of their spans (seeds side by side
    overlap, seeds run one after another add up), and the span from the first start to the last
    end; for results written without spans, the longest part (as if side by side) and no span."""
    if not all(p.get("span") for p in parts):
        return max(p["wall_s"] for p in parts), None
    spans = sorted((p["span"][0], p["span"][1]) for p in parts)
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b > end:
            total += b - max(a, end)
            end = b
    return total, [spans[0][0], end]


def stage_times(times: dict, runs: list[dict]) -> dict:
    """The references' wall times and the mean over the seeds of each stage every seed timed
    (its training stages and its evals: "eval sft", "eval grpo")."""
    timed = [s for s in runs[0]["time_s"] if all(s in r["time_s"] for r in runs)]
    per_seed = {s: statistics.mean(r["time_s"][s] for r in runs) for s in timed}
    return {**times, **per_seed}


def stopped_early(run: dict, args: dict) -> str | None:
    """Why a seed's GRPO ran fewer steps than asked, if it did: a GRPO the guard or the deadline
    cut is not the method's, and its row must not read as if it were."""
    ran = run["grpo_steps_run"]
    kept = run.get("grpo_kept_step", ran)
    if kept != ran:
        return f"the collapse guard stopped GRPO after step {ran} and kept step {kept}'s weights"
    asked = args.get("grpo_steps", ran)
    if ran < asked:
        return (
            f"the deadline stopped GRPO after {ran} of the {asked} steps asked "
            f"(--deadline-s {args.get('deadline_s', 0):g})"
        )
    return None


GRPO_PARTS = {
    "generate": "time_generate",
    "train": "time_train",
    "guard": "time_health",
    "dev": "time_dev_eval",
}


def grpo_time(run: dict) -> dict[str, float] | None:
    """Where a seed's GRPO wall time went (s): its steps' rollouts and updates, the guard's
    checks after them, the held-out points, and the rest (its own episodes, the guard's first
    check, loading and checkpoints); None for a run whose curve predates the step timings, or a
    resumed one (its GRPO time is the part after the cut, its curve all of it). The 2-hour target
    is judged on this: which part a faster path would have to shrink."""
    curve = run.get("grpo_curve") or []
    if not curve or "time_train" not in curve[0] or run.get("grpo_resumed"):
        return None
    parts = {k: sum(r.get(key, 0.0) for r in curve) for k, key in GRPO_PARTS.items()}
    return {**parts, "rest": run["time_s"]["grpo"] - sum(parts.values())}


def grpo_time_line(runs: list[dict]) -> str | None:
    """The mean over the seeds of `grpo_time`, each part with its share of GRPO's time."""
    times = [t for r in runs if (t := grpo_time(r))]
    if not times:
        return None
    mean = {k: statistics.mean(t[k] for t in times) for k in times[0]}
    total = sum(mean.values())
    parts = ", ".join(f"{k} {v:.0f} s ({v / total:.0%})" for k, v in mean.items())
    return f"GRPO's time a seed (mean of {len(times)}): {parts}"


def report(
    args: dict,
    baseline: dict,
    runs: list[dict],
    times: dict,
    wall: float,
    span: list[float] | None,
    stem: Path,
) -> None:
    """Summary, JSON and plot of the runs, to `stem`.json and .png; prints the tables and, last,
    the one-line JSON."""
    summary = summarize(runs, baseline)
    summary["budget"] = budget(args, runs, wall, span)
    summary["targets"]["whole_bench_within_2_hours_on_2_cores"] = summary["budget"]["met"]
    times = stage_times(times, runs)
    result = {
        "args": args,
        "code": code_revision(),  # this report's; each run's own is in its row
        "device": args["device"],
        "wall_s": wall,
        "span": span,
        "stage_wall_s": times,
        "summary": summary,
        "runs": runs,
        "baseline": baseline,
        "stages": summary["stages"],
        "stopped_early": {r["seed"]: why for r in runs if (why := stopped_early(r, args))},
        "grpo_time_s": {r["seed"]: t for r in runs if (t := grpo_time(r))},
    }
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_name(f"{stem.name}.json").write_text(json.dumps(result, indent=1))
    plot(runs, stem.with_name(f"{stem.name}.png"))
    print(table(summary))
    print(
        f"\nstage wall times (s; a seed's stages: mean per seed): {json.dumps({k: round(v, 1) for k, v in times.items()})}"
    )
    if line := grpo_time_line(runs):
        print(line)
    for r in runs:
        print(
            f"seed {r['seed']}: kept {r['rejection']['kept']}/{r['rejection']['tried']} teacher episodes "
            f"({r['rejection']['questions_with_any']} questions), SFT {len(r['sft_losses'])} steps"
        )
        for step, back_to in rollbacks(r):
            print(
                f"seed {r['seed']}: the collapse guard failed step {step}'s check; GRPO went on "
                f"from step {back_to}'s weights"
            )
        if why := stopped_early(r, args):
            print(f"seed {r['seed']}: {why}")
    print(f"wall time {wall:.0f}s on {args['device']}; wrote {stem}.json and .png")
    print(json.dumps({"stages": summary["stages"], "targets": summary["targets"]}))
