"""Fast sanity check that the trainer's gradients flow: rejection-sampled SFT, then GRPO, on CPU.

Not the learning proof: no tool is called here. `bench/learn_agent.py` is the proof that the
trainer teaches the real model (SmolLM2) to search, visit and answer.

Task set (generated, deterministic): "What is the last digit of N?" for random N, answered
directly with <answer>d</answer>; EM reward from the env. A tiny from-config Qwen2
(`agent.rollout.models.tiny_model`, ~100k parameters, untrained) must learn the answer format and
the rule from its own trajectories. Held-out questions use numbers never trained on.

Pipeline per seed, all through `agent.rollout.episodes` over WikiSim-v0 (bundled sample index):
  1. untrained policy on the held-out set;
  2. rejection sampling: a noisy teacher (right with probability 0.5) plays each SFT question
     K times; only correct, well-formed, distinct trajectories are kept;
  3. SFT on them until the training loss falls below --sft-stop-loss: 256 questions teach
     the format and most of the rule alike on every seed (greedy 0.64-0.79 in a probe).
     With 128, how much of the rule SFT learns varied by seed (greedy 0.57-0.89), a spread
     that swamps what GRPO adds; stopped at 100 steps SFT taught only the format, and GRPO
     from chance memorised training questions (dev pass@1 flat at 0.06 on one seed);
  4. GRPO from the SFT weights on the larger training pool, rewards only (lr 2e-3 broke the
     answer format within 20 steps in a probe; 1e-3 holds).
Held-out accuracy: greedy (temperature 0) and pass@1 / pass@k sampled at temperature 1.
Env system prompt: one line instead of the tool schemas (1.4k tokens), so that a 2-core CPU
can afford the context; the rollouts, tools, reward and trajectories are otherwise the env's.

    .venv/bin/python bench/learn.py                  # 3 seeds, ~40 min on a busy 2-core machine
    .venv/bin/python bench/learn.py --seeds 0 --grpo-steps 10   # a quick look

Target: under an hour on 2 CPU cores, and for each stage (untrained -> SFT, SFT -> GRPO) a
mean held-out gain larger than the spread (max - min) of the per-seed gains; judged for
greedy accuracy and for sampled pass@1 (the policy GRPO trains, k samples per question).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENAI_API_KEY", "unused")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from learn_report import exceeds  # noqa: E402
from tqdm import tqdm  # noqa: E402

from agent.commands.train import SHORT_SYSTEM_PROMPT  # noqa: E402
from agent.rollout.models import load_local, tiny_model  # noqa: E402
from agent.rollout.react import ChatFormat, Generation, TurnRequest  # noqa: E402
from agent.train.config import GRPOConfig, SFTConfig  # noqa: E402
from agent.train.episodes import EnvRunner  # noqa: E402
from agent.train.grpo import sample_pass_rates, train_grpo  # noqa: E402
from agent.train.loop import read_metrics  # noqa: E402
from agent.train.sft import rejection_sample, train_sft  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.env.tasks import Task, TaskSet  # noqa: E402
from wikisim.tools.protocol import format_answer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TARGET_WALL_S = 3600
#: The env of these toy questions: two turns, no tools needed (the sparse retriever loads fastest).
TOY_ENV = EnvConfig(max_turns=2, retriever="bm25s", python=False)


def make_tasks(n_train: int, n_dev: int, seed: int = 1234) -> tuple[TaskSet, list[str], list[str]]:
    nums = random.Random(seed).sample(range(100, 100_000), n_train + n_dev)
    tasks = [
        Task(f"n{n}", f"What is the last digit of {n}?", (str(n % 10),), extra={"hops": 0})
        for n in nums
    ]
    ids = [t.id for t in tasks]
    return TaskSet(tasks, "last-digit"), ids[:n_train], ids[n_train:]


class NoisyTeacher:
    """Answers at once: the gold answer with probability `p`, else another digit (seeded per episode)."""

    name = "noisy-teacher"

    def __init__(self, tasks: TaskSet, chat: ChatFormat, p: float) -> None:
        self.tasks, self.chat, self.p = tasks, chat, p

    def act(self, requests: Sequence[TurnRequest]) -> list[Generation]:
        out = []
        for r in requests:
            gold = self.tasks.by_question(r.question).answers[0]
            rng = random.Random(r.seed)
            ans = gold if rng.random() < self.p else str((int(gold) + rng.randint(1, 9)) % 10)
            out.append(Generation(text=format_answer(ans)))
        return out


def evaluate(runner: EnvRunner, tok, model, dev: list[str], k: int) -> dict[str, float]:
    sample = runner.sampler(tok)
    greedy = sample(model, dev, 1, 999, 0.0)
    p1, pk, _ = sample_pass_rates(sample(model, dev, k, 998, 1.0), k)
    return {
        "greedy": sum(t.reward for t in greedy) / len(greedy),
        "pass@1": p1,
        f"pass@{k}": pk,
        "answered": sum(t.answer is not None for t in greedy) / len(greedy),
    }


def run_seed(
    seed: int, args: argparse.Namespace, runner: EnvRunner, train: list[str], dev: list[str]
) -> dict:
    out = RESULTS / "learn" / f"seed{seed}"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    tok, model0 = tiny_model(seed)
    res: dict = {"seed": seed, "untrained": evaluate(runner, tok, model0, dev, args.k)}
    teacher = NoisyTeacher(runner.tasks, ChatFormat(tok), args.teacher_p)
    kept, report = rejection_sample(
        runner.teacher(teacher, teacher.chat, seed),
        train[: args.sft_questions],
        args.samples_per_question,
        grounded=False,
    )  # answered without tools
    res["rejection"] = {
        "kept": report.kept_total,
        "tried": report.tried_total,
        "questions_with_any": sum(1 for v in report.kept.values() if v),
    }
    cfg = SFTConfig(
        output_dir=str(out / "sft"),
        seed=seed,
        lr=args.sft_lr,
        epochs=10_000,
        batch_size=32,
        micro_batch_size=32,
        cpu=True,
        max_steps=args.sft_max_steps,
        stop_loss=args.sft_stop_loss,
    )
    sft = train_sft(cfg, kept)
    losses, sft_dir = sft.losses, sft.final_dir
    res["sft_steps"], res["sft_losses"] = len(losses), losses
    res["sft"] = evaluate(runner, tok, load_local(sft_dir)[1], dev, args.k)
    t_sft = time.perf_counter()
    gcfg = GRPOConfig(
        output_dir=str(out / "grpo"),
        seed=seed,
        lr=args.grpo_lr,
        init_checkpoint=str(sft_dir),
        steps=args.grpo_steps,
        questions_per_step=args.questions_per_step,
        group_size=args.group_size,
        micro_batch_size=64,
        cpu=True,
        dev_every=args.dev_every,
        dev_k=args.k,
    )
    g = train_grpo(gcfg, train, runner.sampler(tok), dev_ids=dev)
    res["grpo_curve"] = [
        {
            k: r[k]
            for k in ("step", "reward", "entropy", "loss", "grad_norm", "dev_pass@1")
            if k in r
        }
        for r in read_metrics(out / "grpo" / "metrics.jsonl")
    ]
    res["grpo"] = evaluate(runner, tok, load_local(g.final_dir)[1], dev, args.k)
    res["time_s"] = {
        "sft_phase": t_sft - t0,
        "grpo_phase": time.perf_counter() - t_sft,
        "total": time.perf_counter() - t0,
    }
    return res


def summarize(runs: list[dict], k: int) -> dict:
    out = {}
    for stage in ("untrained", "sft", "grpo"):
        for metric in ("greedy", "pass@1", f"pass@{k}"):
            vals = [r[stage][metric] for r in runs]
            out[f"{stage}/{metric}"] = {
                "mean": statistics.mean(vals),
                "min": min(vals),
                "max": max(vals),
                "std": statistics.pstdev(vals),
                "values": vals,
            }
    for a, b in (("untrained", "sft"), ("sft", "grpo")):
        for metric in ("greedy", "pass@1"):
            gains = [r[b][metric] - r[a][metric] for r in runs]
            spread = max(gains) - min(
                gains
            )  # paired: the same seed's weights before and after the stage
            out[f"gain {a}->{b}/{metric}"] = {
                "mean": statistics.mean(gains),
                "min": min(gains),
                "per_seed": gains,
                "spread_across_seeds": spread,
                "gain_exceeds_spread": exceeds(statistics.mean(gains), spread),
            }
    return out


def target(summary: dict, wall_s: float) -> dict:
    """The issue's target, per metric: each stage's mean gain beats its spread across seeds, within an hour."""
    under = wall_s < TARGET_WALL_S
    out: dict = {"wall_s": wall_s, "under_an_hour": under}
    for metric in ("greedy", "pass@1"):
        stages = {
            s: summary[f"gain {s}/{metric}"]["gain_exceeds_spread"]
            for s in ("untrained->sft", "sft->grpo")
        }
        out[metric] = {**stages, "met": under and all(stages.values())}
    return out


def plot(runs: list[dict], summary: dict, k: int, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    stages = ["untrained", "sft", "grpo"]
    for j, metric in enumerate(("greedy", "pass@1")):
        xs = [i + 0.2 * (j - 0.5) for i in range(3)]
        axes[0].bar(xs, [summary[f"{s}/{metric}"]["mean"] for s in stages], width=0.2, label=metric)
        for i, s in enumerate(stages):
            axes[0].scatter(
                [xs[i]] * len(runs), [r[s][metric] for r in runs], color="k", s=8, zorder=3
            )
    axes[0].set_xticks(range(3), stages)
    axes[0].set_ylabel("held-out accuracy")
    axes[0].legend()
    axes[0].set_title(f"held-out accuracy ({len(runs)} seeds, dots = seeds)")
    for r in runs:
        axes[1].plot(r["sft_losses"], label=f"seed {r['seed']}")
        curve = r["grpo_curve"]
        axes[2].plot(
            [c["step"] for c in curve],
            [c["reward"] for c in curve],
            label=f"seed {r['seed']} train reward",
        )
        dev = [c for c in curve if "dev_pass@1" in c]
        axes[2].plot(
            [c["step"] for c in dev],
            [c["dev_pass@1"] for c in dev],
            "o--",
            label=f"seed {r['seed']} dev pass@1",
        )
    axes[1].set_title("SFT loss")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("step")
    axes[1].legend()
    axes[2].set_title("GRPO")
    axes[2].set_xlabel("step")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--train", type=int, default=400, help="GRPO training pool")
    p.add_argument("--dev", type=int, default=100, help="held-out questions")
    p.add_argument("--sft-questions", type=int, default=256)
    p.add_argument("--samples-per-question", type=int, default=2)
    p.add_argument("--teacher-p", type=float, default=0.5)
    p.add_argument("--sft-lr", type=float, default=3e-3)
    p.add_argument("--sft-stop-loss", type=float, default=0.1)
    p.add_argument("--sft-max-steps", type=int, default=400)
    p.add_argument("--grpo-lr", type=float, default=1e-3)
    p.add_argument("--grpo-steps", type=int, default=300)
    p.add_argument("--questions-per-step", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--dev-every", type=int, default=50)
    p.add_argument("--k", type=int, default=4)
    args = p.parse_args()
    torch.set_num_threads(1)  # a shared 2-core machine: more threads only contend
    t0 = time.perf_counter()
    tasks, train, dev = make_tasks(args.train, args.dev)
    runner = EnvRunner(
        tasks,
        TOY_ENV,
        max_new_tokens=12,
        max_context_tokens=4096,
        slots=args.questions_per_step * args.group_size,
        system_prompt=SHORT_SYSTEM_PROMPT,
    )
    runs = [run_seed(s, args, runner, train, dev) for s in tqdm(args.seeds, desc="seeds")]
    summary = summarize(runs, args.k)
    wall = time.perf_counter() - t0
    summary["target"] = target(summary, wall)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "learn.json").write_text(
        json.dumps({"args": vars(args), "summary": summary, "runs": runs, "wall_s": wall}, indent=1)
    )
    plot(runs, summary, args.k, RESULTS / "learn.png")
    print(
        f"held-out accuracy over seeds {args.seeds} ({args.dev} questions; greedy | sampled pass@1 | pass@{args.k}):"
    )
    for stage in ("untrained", "sft", "grpo"):
        cells = [
            f"{summary[f'{stage}/{m}']['mean']:.3f} [{summary[f'{stage}/{m}']['min']:.3f}, "
            f"{summary[f'{stage}/{m}']['max']:.3f}]"
            for m in ("greedy", "pass@1", f"pass@{args.k}")
        ]
        print(f"  {stage:9s} " + " | ".join(cells))
    for key in (
        "gain untrained->sft/greedy",
        "gain untrained->sft/pass@1",
        "gain sft->grpo/greedy",
        "gain sft->grpo/pass@1",
    ):
        s = summary[key]
        print(
            f"  {key}: {s['mean']:+.3f} (per seed {', '.join(f'{g:+.3f}' for g in s['per_seed'])}); "
            f"spread across seeds {s['spread_across_seeds']:.3f}; gain > spread: {s['gain_exceeds_spread']}"
        )
    for r in runs:
        print(
            f"  seed {r['seed']}: kept {r['rejection']['kept']}/{r['rejection']['tried']} teacher episodes; "
            f"SFT {r['sft_steps']} steps; SFT {r['time_s']['sft_phase']:.0f}s, GRPO {r['time_s']['grpo_phase']:.0f}s"
        )
    t = summary["target"]
    for metric in ("greedy", "pass@1"):
        print(
            f"target on {metric} (mean gain > spread at both stages, under {TARGET_WALL_S}s): "
            f"{'met' if t[metric]['met'] else 'NOT met'} {t[metric]}"
        )
    print(f"wall time {wall:.0f}s; wrote {RESULTS / 'learn.json'} and {RESULTS / 'learn.png'}")


if __name__ == "__main__":
    main()
