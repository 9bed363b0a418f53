"""GRPO from the shipped SFT adapter on CPU: pass-rate probe, curriculum, and whether steps move the weights.

GRPO learns nothing on a question whose group is all right or all wrong (every leave-one-out
advantage is 0); from a weak SFT policy that is most questions, and the last GPU run made no
update at all. So before training:
  1. probe: the adapter plays `--probe-samples` episodes of `--probe-questions` training questions
     (a seeded draw from the training set of bench/learn_agent.py; with `--teacher-solvable N`,
     only those of the first N the research teacher answers from an observation within the turn
     budget, found by the rejection sampler SFT uses) at the GRPO temperature; each question's
     pass rate is the curriculum's prior (`agent.train.grpo.probe_pass_rates`);
  2. GRPO (`agent.train.grpo.train_grpo`, the curriculum on, band (0, 1)) starts on the questions
     the adapter sometimes solves, with the env's reward (`--reward em|f1`; f1 gives partial credit);
  3. per step: training solve rate, mean reward, share of rollouts with a nonzero advantage,
     gradient norm; at the end, how far the adapter's weights moved (max and relative L2);
  4. `--eval`: greedy EM on bench/learn_agent.py's held-out sets, start vs end (the harness
     behind `wikisim eval`).

    nice -n 10 .venv/bin/python bench/grpo_from_sft.py [--steps 2] [--reward f1] [--eval]
Writes bench/results/grpo_from_sft[_NAME].json; prints one line per step and, last, a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from learn_agent import ENV, load_data  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from agent.rollout.models import load_local  # noqa: E402
from agent.train.config import GRPOConfig  # noqa: E402
from agent.train.episodes import EnvRunner  # noqa: E402
from agent.train.grpo import probe_pass_rates, train_grpo  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.flags import build_config  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
ADAPTER = "adapter_model.safetensors"


def weight_change(start: Path, end: Path) -> dict[str, float]:
    """How far the adapter moved: the largest change of one weight and ||end - start|| / ||start||."""
    a, b = load_file(str(start / ADAPTER)), load_file(str(end / ADAPTER))
    if set(a) != set(b):
        raise ValueError(f"{start} and {end} hold different adapter tensors")
    diff = sum(float(((b[k].float() - a[k].float()) ** 2).sum()) for k in a)
    norm = sum(float((a[k].float() ** 2).sum()) for k in a)
    top = max(float((b[k].float() - a[k].float()).abs().max()) for k in a)
    return {"max_abs": top, "relative_l2": (diff / norm) ** 0.5, "tensors": float(len(a))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", default="data/models/smollm2-wikisim-lora")
    p.add_argument("--probe-questions", type=int, default=12)
    p.add_argument("--probe-samples", type=int, default=4)
    p.add_argument("--reward", choices=("em", "f1"), default="f1")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--questions-per-step", type=int, default=2)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument(
        "--micro-batch",
        type=int,
        default=1,
        help="sequences per forward (4 x 2k tokens took 24 GB)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--index", default=ENV["index"], help="index name or built directory")
    p.add_argument(
        "--eval", action="store_true", help="greedy EM on the held-out sets, start vs end"
    )
    p.add_argument(
        "--teacher-solvable",
        type=int,
        default=0,
        help="probe only the questions of the first N drawn that the research teacher solves (0: off)",
    )
    p.add_argument("--eval-limit", type=int, default=6, help="questions per held-out set (0 = all)")
    p.add_argument("--name", default="")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    name = "grpo_from_sft" + (f"_{args.name}" if args.name else "")
    out = RESULTS / name
    shutil.rmtree(out, ignore_errors=True)
    data = load_data(args.eval_limit)
    env = build_config(
        EnvConfig, {**ENV, "index": args.index, "max_turns": 4, "reward": args.reward}
    )
    slots = args.questions_per_step * args.group_size
    runner = EnvRunner(data.tasks, env, max_new_tokens=96, max_context_tokens=2048, slots=slots)
    cfg = GRPOConfig(
        output_dir=str(out / "grpo"),
        seed=args.seed,
        model="smollm2",
        init_checkpoint=args.init,
        env=env,
        lora_rank=8,
        lora_alpha=16,
        lr=args.lr,
        steps=args.steps,
        questions_per_step=args.questions_per_step,
        group_size=args.group_size,
        temperature=args.temperature,
        micro_batch_size=args.micro_batch,
        curriculum=True,
        pool_size=max(args.questions_per_step, 8),
        retire_after=4 * args.group_size,
        dev_every=0,
        cpu=True,
        resume=False,
        max_new_tokens=96,
        max_context_tokens=2048,
    )
    tokenizer, model = load_local(args.init)  # merged: the same policy, sampled faster
    sampler = runner.sampler(tokenizer)
    probed = list(data.train)
    random.Random(args.seed).shuffle(probed)
    if args.teacher_solvable:
        probed = teacher_solvable(
            runner, tokenizer, data, probed[: args.teacher_solvable], args.seed
        )
    probed = probed[: args.probe_questions]
    t0 = time.perf_counter()
    prior = probe_pass_rates(
        sampler, model, probed, args.probe_samples, args.seed * 7 + 3, args.temperature
    )
    probe_s = time.perf_counter() - t0
    del model
    in_band = sorted(t for t, r in prior.items() if 0 < r < 1)
    print(
        f"probe: {len(prior)} questions x {args.probe_samples} at T={args.temperature}: "
        f"mean pass rate {sum(prior.values()) / len(prior):.3f}, "
        f"{sum(r == 0 for r in prior.values())} never solved, "
        f"{sum(r == 1 for r in prior.values())} always, {len(in_band)} in the band ({probe_s:.0f}s)",
        flush=True,
    )
    if not in_band:
        raise SystemExit(
            "no probed question is in the band (0, 1): probe more questions or samples"
        )
    t0 = time.perf_counter()
    result = train_grpo(cfg, in_band, sampler, prior=prior)
    grpo_s = time.perf_counter() - t0
    keys = ("solve_rate", "reward", "adv_nonzero_share", "adv_std", "grad_norm", "loss")
    for r in result.history:
        print(
            f"step {r['step']}: "
            + ", ".join(f"{k} {r[k]:.4f}" for k in keys)
            + f", {r['time_step']:.0f}s (generate {r['time_generate']:.0f}s)",
            flush=True,
        )
    end = Path(result.final_dir).parent / "adapter"
    summary: dict = {
        "args": vars(args),
        "env": env.to_dict(),
        "probe": {
            "questions": len(prior),
            "samples": args.probe_samples,
            "mean_pass_rate": sum(prior.values()) / len(prior),
            "in_band": len(in_band),
            "pass_rates": prior,
            "time_s": probe_s,
        },
        "steps": [
            {k: r[k] for k in (*keys, "step", "time_step", "time_generate")} for r in result.history
        ],
        "weight_change": weight_change(Path(args.init), end),
        "grpo_time_s": grpo_s,
        "load_avg_1min": os.getloadavg()[0],
    }
    if args.eval:
        summary["eval"] = {
            "sft": held_out_em(args.init, data, env, out / "eval-sft"),
            "grpo": held_out_em(str(end), data, env, out / "eval-grpo"),
        }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(
        json.dumps(
            {k: summary[k] for k in ("weight_change", "grpo_time_s")}
            | {
                "probe_mean_pass_rate": summary["probe"]["mean_pass_rate"],
                "in_band": len(in_band),
                "solve_rate_per_step": [r["solve_rate"] for r in result.history],
                "adv_nonzero_share_per_step": [r["adv_nonzero_share"] for r in result.history],
                **({"eval": summary["eval"]} if args.eval else {}),
            }
        )
    )


def teacher_solvable(
    runner: EnvRunner, tokenizer, data, questions: list[str], seed: int
) -> list[str]:
    """The questions the research teacher answers correctly from an observation (SFT's filter)."""
    from agent.rollout.react import ChatFormat
    from agent.train.sft import rejection_sample
    from agent.train.teachers import ResearchTeacher

    chat = ChatFormat(tokenizer)
    teacher = ResearchTeacher(data.tasks, chat, max_turns=runner.budget.max_turns)
    _, report = rejection_sample(runner.teacher(teacher, chat, seed), questions, 1)
    return [q for q in questions if report.kept.get(q)]


def held_out_em(policy_dir: str, data, env: EnvConfig, where: Path) -> dict[str, dict]:
    """Greedy EM per held-out set through the harness behind `wikisim eval --policy DIR`."""
    from agent.eval.harness import EvalConfig, evaluate
    from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
    from agent.rollout.trajectory import write_trajectories

    where.mkdir(parents=True, exist_ok=True)
    tasks = where / "heldout.jsonl"
    tasks.write_text(
        "".join(json.dumps(t.to_dict()) + "\n" for v in data.held.values() for t in v),
        encoding="utf-8",
    )
    tok, model = load_local(policy_dir)
    policy = TransformersPolicy(
        tok, model, name=Path(policy_dir).name, sampling=SamplingConfig(batch_size=32)
    )
    cfg = build_config(
        EvalConfig,
        {
            **env.replace(reward="em").to_dict(),
            "policy": policy_dir,
            "tasks": str(tasks),
            "envs": 32,
            "batch_size": 32,
            "max_new_tokens": 96,
            "max_context_tokens": 2048,
        },
    )
    _, trajs = evaluate(cfg, policy=policy, progress=False)
    write_trajectories(where / "trajectories.jsonl", trajs)
    out = {}
    for held, ts in data.held.items():
        ids = set(ts.ids())
        mine = [t for t in trajs if t.task_id in ids]
        out[held] = {
            "episodes": len(mine),
            "em": sum(t.metrics.get("em", 0.0) for t in mine) / max(len(mine), 1),
            "f1": sum(t.metrics.get("f1", 0.0) for t in mine) / max(len(mine), 1),
        }
    return out


if __name__ == "__main__":
    main()
