"""GRPO from a trained adapter, by default the shipped one (CPU or one GPU): pass-rate probe, curriculum, held-out EM start vs end.

GRPO learns nothing on a question whose group is all right or all wrong (every leave-one-out
advantage is 0); from a weak SFT policy that is most questions. So before training:
  1. candidates: a seeded draw of bench/learn_agent.py's training questions; with
     `--teacher-solvable N`, only those of the first N the research teacher answers from an
     observation within the turn budget (the rejection sampler SFT uses);
  2. probe and start (`agent.train.grpo.probe_start`): the adapter plays `--probe-samples` episodes
     of `--probe-questions` candidates at the GRPO temperature; the curriculum (band (0, 1)) starts
     on the ones it sometimes solves, tops up with unprobed candidates, and starts unprobed when
     none is in the band;
  3. GRPO (`agent.train.grpo.train_grpo`) with the env's reward (`--reward em|f1`), `--steps` of
     them or, with `--deadline-s`, as many as fit that wall-clock budget (at the pace so far);
     per step: training solve rate, mean reward, share of rollouts with a nonzero advantage,
     gradient norm (the run's curves.png plots them); at the end, how far the adapter moved;
     with `--teacher-starts S --teacher-data FILE` (e.g. learn_agent's SEED/sft_data.jsonl), a
     share S of the groups start from a teacher episode's turns before its answer
     (`agent.train.starts`), and the candidates are FILE's questions (at S = 1 there is no probe:
     pass rates from scratch say nothing of started groups); with `--own-starts N` instead
     (GRPOConfig.own_starts), the start adapter plays one episode of N candidates (drawn by the seed), and
     GRPO trains only on those it answered after its own searches showed a gold answer, each group
     started from that episode's turns before its answer (its reading, in its own states; no probe),
     or with `--own-share S` a share S of them, the rest from scratch (`--own-episodes FILE` reuses
     another run's played episodes);
  4. `--eval end|both`: greedy EM of the GRPO adapter (and, with both, the start adapter) on
     bench/learn_agent.py's held-out sets (`--eval-sets`), through the harness behind `wikisim eval`
     (each run a `wikisim eval` folder: `wikisim compare START END` pairs them); per set, each
     adapter's EM with its bootstrap interval and GRPO - start paired by task (`compare_runs`).
     `--start-run DIR` reuses an eval folder of the start adapter made with the same settings.

With `--budget-s` the whole run fits a wall-clock budget (a GPU lease): `--eval both` then runs the
start adapter's eval first, and the GRPO steps get what it, the probe and a margin for the end eval
leave. `--device` (default: cuda when present) places sampling, training and eval.

    nice -n 5 .venv/bin/python bench/grpo_from_sft.py [--steps 2] [--reward f1] [--eval both]
    python bench/grpo_from_sft.py --device cuda --threads 16 --steps 4 --questions-per-step 8 \
        --micro-batch 8 --teacher-solvable 200 --probe-questions 48 --temperature 0.7 --lr 5e-4 \
        --eval both --eval-batch 128 --name h100   # bench/results/grpo_from_sft_h100.json
    python bench/grpo_from_sft.py --device cuda --threads 16 --reward f1 --temperature 0.7 \
        --steps 60 --questions-per-step 8 --group-size 8 --lr 3e-4 --format-penalty 0.1 \
        --micro-batch 8 --probe-questions 80 --probe-samples 6 --teacher-solvable 343 \
        --eval both --eval-batch 128 --budget-s 440 --name h100b   # 13 steps on an H100
Writes bench/results/grpo_from_sft[_NAME].json; prints one line per step and, last, a JSON summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
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
from learn_agent import (  # noqa: E402
    ENV,
    add_gpu_memory_fraction,
    add_question_groups,
    add_retrieval_bonus,
    cap_gpu_memory,
    load_data,
)
from safetensors.torch import load_file  # noqa: E402

from agent.rollout.models import is_adapter, load_local  # noqa: E402
from agent.rollout.trajectory import read_trajectories  # noqa: E402
from agent.train.config import GRPOConfig  # noqa: E402
from agent.train.episodes import EnvRunner  # noqa: E402
from agent.train.grpo import ProbeStart, probe_start, train_grpo  # noqa: E402
from agent.train.starts import OWN_EPISODES, own_start_summary, read_starts  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.flags import build_config  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
ADAPTER = "adapter_model.safetensors"
EVAL_SETS = ("synth-test", "bundled", "hotpotqa-held", "musique-held")


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
    p.add_argument("--steps", type=int, default=2, help="GRPO steps (with --deadline-s: at most)")
    p.add_argument(
        "--deadline-s", type=float, default=0, help="wall-clock budget of the GRPO steps (0: off)"
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=0,
        help="wall-clock budget of the whole run (0: off): the GRPO steps get what the start "
        "eval, the probe and a margin for the end eval (1.5x the start eval's time) leave",
    )
    p.add_argument(
        "--grounded-only",
        action="store_true",
        help="an answer not read in an observation earns no reward (no credit for recall)",
    )
    p.add_argument("--questions-per-step", type=int, default=2)
    add_question_groups(p)
    add_retrieval_bonus(p)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument(
        "--format-penalty",
        type=float,
        default=0.0,
        help="subtracted from the reward of rollouts without a well-formed answer",
    )
    p.add_argument("--micro-batch", type=int, default=4, help="sequences per forward")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--device",
        default="cuda" if torch.cuda.is_available() else "cpu",
        help="torch device of sampling, training and eval",
    )
    p.add_argument("--eval-batch", type=int, default=32, help="held-out episodes sampled together")
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=96,
        help="tokens a turn may sample, in GRPO and in the eval (learn_agent's budget is 96)",
    )
    p.add_argument("--index", default=ENV["index"], help="index name or built directory")
    p.add_argument(
        "--teacher-solvable",
        type=int,
        default=0,
        help="candidates: those of the first N drawn that the research teacher solves (0: off)",
    )
    p.add_argument(
        "--teacher-starts",
        type=float,
        default=0.0,
        help="share of each step's groups that start from a teacher episode's turns before its "
        "answer (agent.train.starts); candidates are then the questions --teacher-data holds",
    )
    p.add_argument(
        "--teacher-data",
        default="",
        help="trajectories to start from (e.g. learn_agent's SEED/sft_data.jsonl)",
    )
    p.add_argument(
        "--kl-coef",
        type=float,
        default=0.0,
        help="GRPO's k3 KL penalty to the start adapter (as learn_agent.py's --kl-coef)",
    )
    p.add_argument(
        "--think-budget",
        type=int,
        default=0,
        help="tokens a <think> may take before </think> is given, in GRPO's rollouts and the "
        "evals (as learn_agent.py's --think-budget; 0: none)",
    )
    p.add_argument(
        "--own-starts",
        type=int,
        default=0,
        help="GRPOConfig.own_starts: the start adapter plays one episode of N (drawn by the seed) "
        "candidates, and GRPO trains on those it answered after its own searches showed a gold "
        "answer, every group started there (its reading, in its own states; no probe)",
    )
    p.add_argument(
        "--own-share",
        type=float,
        default=1.0,
        help="GRPOConfig.own_share: with --own-starts, the share of each step's groups started "
        "from the own episode; the rest play the question from scratch (searching stays paid)",
    )
    p.add_argument(
        "--own-episodes",
        default="",
        help="with --own-starts, another run's grpo/own_starts.jsonl to start from instead of "
        "playing them again (the same --init, --seed, --temperature and N give the same file)",
    )
    add_gpu_memory_fraction(p)
    p.add_argument("--eval", choices=("none", "end", "both"), default="none")
    p.add_argument("--eval-sets", default=",".join(EVAL_SETS), help="held-out sets evaluated")
    p.add_argument("--eval-limit", type=int, default=0, help="questions per held-out set (0 = all)")
    p.add_argument("--start-run", default="", help="an eval folder of the start adapter to reuse")
    p.add_argument("--name", default="")
    args = p.parse_args()
    if args.own_episodes and not (args.own_starts and Path(args.own_episodes).is_file()):
        p.error(f"--own-episodes {args.own_episodes!r} needs --own-starts and an existing file")
    if args.eval == "end" and not args.start_run:  # else it fails after the GRPO steps
        p.error(
            "--eval end is paired with the start adapter's eval: give --start-run DIR, or --eval both"
        )
    torch.set_num_threads(args.threads)
    device = args.device
    cap_gpu_memory(args.gpu_memory_fraction, device)
    name = "grpo_from_sft" + (f"_{args.name}" if args.name else "")
    out = RESULTS / name
    shutil.rmtree(out, ignore_errors=True)
    if args.own_episodes:  # GRPOConfig.own_starts reads the run folder's file back
        (out / "grpo").mkdir(parents=True)
        shutil.copyfile(args.own_episodes, out / "grpo" / OWN_EPISODES)
    began = time.perf_counter()
    data = load_data(args.eval_limit)
    env = build_config(
        EnvConfig, {**ENV, "index": args.index, "max_turns": 4, "reward": args.reward}
    )
    slots = args.questions_per_step * args.group_size
    runner = EnvRunner(
        data.tasks,
        env,
        max_new_tokens=args.max_new_tokens,
        max_context_tokens=2048,
        slots=slots,
        think_budget=args.think_budget,
    )
    sets = {k: data.held[k] for k in args.eval_sets.split(",")}
    start_run = Path(args.start_run) if args.start_run else out / "eval-start"
    run = functools.partial(
        held_out_run,
        sets=sets,
        env=env,
        device=device,
        batch=args.eval_batch,
        max_new_tokens=args.max_new_tokens,
        think_budget=args.think_budget,
    )
    eval_s = 0.0
    if args.eval == "both":  # first: its time sizes the end eval's share of --budget-s
        t0 = time.perf_counter()
        run(args.init, where=start_run)
        eval_s = time.perf_counter() - t0
        print(f"start adapter evaluated on the held-out sets ({eval_s:.0f}s)", flush=True)
    tokenizer, model = load_local(args.init)  # merged: the same policy, sampled faster
    model.to(device)
    sampler = runner.sampler(tokenizer)
    candidates = list(data.train)
    random.Random(args.seed).shuffle(candidates)
    if args.teacher_solvable:
        candidates = teacher_solvable(
            runner, tokenizer, data, candidates[: args.teacher_solvable], args.seed
        )
    if args.teacher_starts:
        startable = read_starts(args.teacher_data)
        candidates = [q for q in candidates if q in startable]
    t0 = time.perf_counter()
    if args.teacher_starts >= 1 or args.own_starts:  # every group starts: pass rates from scratch
        start = ProbeStart({}, (0.0, 1.0))  # say nothing of it (as in learn_agent.py)
    else:
        start = probe_start(
            sampler,
            model,
            candidates,
            questions=args.probe_questions,
            samples=args.probe_samples,
            seed=args.seed,
            temperature=args.temperature,
        )
    probe_s = time.perf_counter() - t0
    del model
    probe = {**start.summary(), "samples": args.probe_samples, "time_s": probe_s}
    print(
        f"probe: {len(candidates)} candidates, {probe['questions']:.0f} probed x "
        f"{args.probe_samples} at T={args.temperature}: mean pass rate {probe['mean_pass_rate']:.3f}, "
        f"{probe['never_solved']:.0f} never solved, {probe['always_solved']:.0f} always, "
        f"{probe['in_band']:.0f} in the band ({probe_s:.0f}s)"
        + ("" if start.prior else "; none in the band: the curriculum starts unprobed"),
        flush=True,
    )
    cfg = GRPOConfig(
        output_dir=str(out / "grpo"),
        seed=args.seed,
        model="smollm2",
        init_checkpoint=args.init,
        env=env,
        lora_rank=8,
        lora_alpha=16,
        lr=args.lr,
        format_penalty=args.format_penalty,
        grounded_only=args.grounded_only,
        steps=args.steps,
        questions_per_step=args.questions_per_step,
        group_size=args.group_size,
        temperature=args.temperature,
        micro_batch_size=args.micro_batch,
        curriculum=True,
        pool_size=max(args.questions_per_step, len(start.in_band)),
        retire_after=4 * args.group_size,
        question_rollouts=args.question_groups * args.group_size,
        dev_every=0,
        cpu=device == "cpu",
        resume=False,
        max_new_tokens=args.max_new_tokens,
        max_context_tokens=2048,
        teacher_starts=args.teacher_starts,
        teacher_data=args.teacher_data,
        own_starts=args.own_starts,
        own_share=args.own_share,
        kl_coef=args.kl_coef,
        retrieval_bonus=args.retrieval_bonus,
        think_budget=args.think_budget,
    )
    deadline_s = args.deadline_s
    if args.budget_s:
        left = args.budget_s - (time.perf_counter() - began) - 1.5 * eval_s - 30
        deadline_s = min(deadline_s or left, left)
        print(f"GRPO deadline {deadline_s:.0f}s of the {args.budget_s:.0f}s budget", flush=True)
    t0 = time.perf_counter()
    result = train_grpo(
        cfg,
        candidates,
        sampler,
        prior=start.prior,
        deadline=t0 + deadline_s if deadline_s else None,
    )
    grpo_s = time.perf_counter() - t0
    own = None
    if args.own_starts:
        own = own_start_summary(list(read_trajectories(out / "grpo" / OWN_EPISODES)))
        print(
            f"own starts: {own['started']} of {own['played']} episodes answered after a gold "
            f"answer was on screen ({own['right_then']} of them right)",
            flush=True,
        )
    keys = (
        "solve_rate",
        "reward",
        "started_share",
        "grounded_share",
        "adv_nonzero_share",
        "adv_std",
        "grad_norm",
        "loss",
    )
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
        "probe": {**probe, "candidates": len(candidates), "pass_rates": start.rates},
        "own_starts": own,
        "steps": [
            {k: r[k] for k in (*keys, "step", "time_step", "time_generate", "time_train")}
            for r in result.history
        ],
        "weight_change": weight_change(Path(args.init), end) if is_adapter(args.init) else None,
        "grpo_time_s": grpo_s,
        "load_avg_1min": os.getloadavg()[0],
        "device": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
    }
    if args.eval != "none":
        run(str(end), where=out / "eval-grpo")
        summary["eval"] = paired_by_set(start_run, out / "eval-grpo", sets)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(
        json.dumps(
            {k: summary[k] for k in ("weight_change", "grpo_time_s")}
            | {
                "probe_mean_pass_rate": probe["mean_pass_rate"],
                "in_band": probe["in_band"],
                "steps": len(result.history),
                "solve_rate_per_step": [r["solve_rate"] for r in result.history],
                "adv_nonzero_share_per_step": [r["adv_nonzero_share"] for r in result.history],
                **({"eval": summary["eval"]} if "eval" in summary else {}),
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


def held_out_run(
    policy_dir: str,
    sets: dict,
    *,
    env: EnvConfig,
    where: Path,
    device: str,
    batch: int,
    max_new_tokens: int = 96,
    think_budget: int = 0,
) -> None:
    """Greedy episodes on the held-out sets, written by the harness behind `wikisim eval --policy DIR`."""
    from agent.eval.harness import EvalConfig, evaluate
    from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy

    where.mkdir(parents=True, exist_ok=True)
    tasks = where / "heldout.jsonl"
    tasks.write_text(
        "".join(json.dumps(t.to_dict()) + "\n" for v in sets.values() for t in v),
        encoding="utf-8",
    )
    tok, model = load_local(policy_dir)
    policy = TransformersPolicy(
        tok,
        model.to(device),
        name=Path(policy_dir).name,
        sampling=SamplingConfig(batch_size=batch, think_budget=think_budget),
    )
    cfg = build_config(
        EvalConfig,
        {
            **env.replace(reward="em").to_dict(),
            "policy": policy_dir,
            "tasks": str(tasks),
            "envs": batch,
            "batch_size": batch,
            "max_new_tokens": max_new_tokens,
            "max_context_tokens": 2048,
            "think_budget": think_budget,  # recorded, so `wikisim eval` replays the same run
        },
    )
    evaluate(cfg, where, policy=policy, progress=False)


def paired_by_set(start_run: Path, end_run: Path, sets: dict) -> dict[str, dict]:
    """Per held-out set and pooled: each run's EM with its interval, end - start paired by task."""
    from agent.eval.compare import compare_runs, load_run

    a, b = load_run(start_run), load_run(end_run)
    out = {}
    for held, ts in [*sets.items(), ("pooled", None)]:
        ids = set(ts.ids()) if ts is not None else set(a.scores)
        pair = [dataclasses.replace(r, scores={t: r.scores[t] for t in ids}) for r in (a, b)]
        rep = compare_runs(pair)
        start_row, end_row = rep["runs"]
        diff = rep["comparisons"][0]
        out[held] = {
            "tasks": len(ids),
            "start_em": [start_row["mean"], start_row["low"], start_row["high"]],
            "grpo_em": [end_row["mean"], end_row["low"], end_row["high"]],
            "diff": [diff["mean"], diff["low"], diff["high"]],
            "p_value": diff["p_value"],
        }
    return out


if __name__ == "__main__":
    main()
