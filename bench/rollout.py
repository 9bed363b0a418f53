"""Rollout throughput with the bundled SmolLM2: batched vs one-at-a-time, and env vs policy time.

    .venv/bin/python bench/rollout.py [--tasks 8] [--batch 8] [--max-turns 2] [--max-new-tokens 48]

The same jobs run twice with the same model and greedy decoding: once with one env and
batch size 1, once with `--batch` envs and that batch size. Prints episodes/s, generated
tokens/s, their ratio (target >= 3x) and the env's share of wall time (target < 5%);
writes bench/results/rollout.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from agent.rollout.episodes import jobs_for, make_envs, rollout
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
from agent.rollout.react import Budget
from wikisim.env.tasks import load_tasks
from wikisim.index.build import ensure_bundled_index

RESULTS = Path(__file__).resolve().parent / "results"


def measure(policy: TransformersPolicy, envs, jobs, budget: Budget, batch: int) -> dict[str, float]:
    policy.sampling = SamplingConfig(batch_size=batch)
    policy.generated_tokens = 0
    start = time.perf_counter()
    trajs = rollout(envs, policy, jobs, budget=budget)
    wall = time.perf_counter() - start
    env_s = sum(t.timings["env_s"] for t in trajs)
    policy_s = sum(t.timings["policy_s"] for t in trajs)
    return {
        "episodes": len(trajs),
        "wall_s": wall,
        "episodes_per_s": len(trajs) / wall,
        "generated_tokens": policy.generated_tokens,
        "generated_tokens_per_s": policy.generated_tokens / wall,
        "env_s": env_s,
        "policy_s": policy_s,
        "env_share": env_s / wall,
        "em": sum(t.metrics["em"] for t in trajs) / len(trajs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args()
    tasks = load_tasks()
    jobs = jobs_for(tasks.ids()[: args.tasks], [0])
    budget = Budget(max_turns=args.max_turns, max_new_tokens=args.max_new_tokens)
    envs = make_envs(
        args.batch, index=ensure_bundled_index(), tasks=tasks, max_turns=args.max_turns
    )
    policy = TransformersPolicy.smollm2()
    rollout(envs[:1], policy, jobs[:1], budget=Budget(max_turns=1, max_new_tokens=4))  # warm-up
    single = measure(policy, envs[:1], jobs, budget, 1)
    batched = measure(policy, envs, jobs, budget, args.batch)
    ratio = batched["generated_tokens_per_s"] / single["generated_tokens_per_s"]
    result = {
        "model": policy.name,
        "torch_threads": torch.get_num_threads(),
        "args": vars(args),
        "one_at_a_time": single,
        "batched": batched,
        "tokens_per_s_ratio": ratio,
        "episodes_per_s_ratio": batched["episodes_per_s"] / single["episodes_per_s"],
    }
    for name, r in (("one-at-a-time", single), (f"batched x{args.batch}", batched)):
        print(
            f"{name:>14}: {r['episodes_per_s']:.3f} episodes/s, {r['generated_tokens_per_s']:.1f} gen tokens/s, "
            f"env {100 * r['env_share']:.2f}% of {r['wall_s']:.1f} s wall"
        )
    print(
        f"batched / one-at-a-time: {ratio:.2f}x tokens/s (target >= 3x), "
        f"{result['episodes_per_s_ratio']:.2f}x episodes/s; env share batched {100 * batched['env_share']:.2f}% "
        "(target < 5%)"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "rollout.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
