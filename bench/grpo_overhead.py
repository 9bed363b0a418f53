"""Share of a GRPO step spent outside generation and the forward/backward/optimizer update.

Overhead = question selection, advantages, masking and padding, metric reductions, logging
and the curriculum update: everything `agent.train.grpo.train_grpo` does around the sampler and
`grpo_update`'s training block. Target: under 10% of the step. Runs the tiny model on the
generated last-digit task set (bench/learn.py) in WikiSim-v0; the first step (warm-up) and
the last (final checkpoint) are left out.

    .venv/bin/python bench/grpo_overhead.py [--steps 8] [--questions-per-step 16] [--group-size 8]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENAI_API_KEY", "unused")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from learn import TOY_ENV, make_tasks  # noqa: E402

from agent.commands.train import SHORT_SYSTEM_PROMPT  # noqa: E402
from agent.rollout.models import tiny_model  # noqa: E402
from agent.train.config import GRPOConfig  # noqa: E402
from agent.train.episodes import EnvRunner  # noqa: E402
from agent.train.grpo import train_grpo  # noqa: E402
from agent.train.loop import read_metrics  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--questions-per-step", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument(
        "--curriculum", action="store_true", help="include the curriculum update in the step"
    )
    args = p.parse_args()
    tasks, train, _ = make_tasks(400, 0)
    n = args.questions_per_step * args.group_size
    runner = EnvRunner(
        tasks,
        TOY_ENV,
        max_new_tokens=12,
        max_context_tokens=4096,
        slots=n,
        system_prompt=SHORT_SYSTEM_PROMPT,
    )
    out = RESULTS / "grpo_overhead"
    shutil.rmtree(out, ignore_errors=True)
    cfg = GRPOConfig(
        output_dir=str(out),
        steps=args.steps,
        questions_per_step=args.questions_per_step,
        group_size=args.group_size,
        micro_batch_size=64,
        cpu=True,
        dev_every=0,
        curriculum=args.curriculum,
        pool_size=64,
    )
    tok, _ = tiny_model(0)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    train_grpo(cfg, train, runner.sampler(tok))
    wall = time.perf_counter() - t0
    rows = read_metrics(out / "metrics.jsonl")[1:-1]
    med = {
        k: statistics.median(r[k] for r in rows)
        for k in ("time_step", "time_generate", "time_train", "time_other")
    }
    share = statistics.median(r["time_other"] / r["time_step"] for r in rows)
    result = {
        "args": vars(args),
        "median_s": med,
        "overhead_share": share,
        "steps_measured": len(rows),
        "rollouts_per_step": n,
        "wall_s": wall,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "grpo_overhead.json").write_text(json.dumps(result, indent=1))
    print(f"GRPO step ({n} rollouts, tiny model, {len(rows)} steps measured), median seconds:")
    print(
        f"  step {med['time_step']:.3f} = generate {med['time_generate']:.3f} + train {med['time_train']:.3f}"
        f" + other {med['time_other']:.3f}"
    )
    print(
        f"  overhead share of the step: {share:.1%} (target < 10%); "
        f"overhead / (generate + train) = {med['time_other'] / (med['time_generate'] + med['time_train']):.3f}"
    )
    print(f"wall {wall:.0f}s; wrote {RESULTS / 'grpo_overhead.json'}")


if __name__ == "__main__":
    main()
