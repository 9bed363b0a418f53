"""A greedy held-out eval of a trained policy with its weights in float32 and in bfloat16
(`SamplingConfig.decode_dtype`), in this process: wall time, tokens, EM and how many answers agree.

Decoding a small model on a CPU reads its weights and the KV cache once a step for every row;
bf16 halves those bytes, and on a CPU with native bf16 arithmetic (AVX-512 BF16, AMX) a step runs
faster. bench/decode.py times first turns only; here whole episodes run (observations prefilled,
later turns over ~1,000-token contexts), in learn_agent.py's env and sampling settings, over the
first `--questions` of its held-out sets in order, each variant `--repeats` times alternately so
a shared machine's load falls on both; the best (least loaded) repeat of each is reported.

    nice -n 10 .venv/bin/python bench/decode_dtype.py [--policy data/models/smollm2-wikisim-lora] [--questions 60]

Writes bench/results/decode_dtype.json; prints one line per variant, then the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from learn_agent import ENV, GRPO_RECIPE, load_data, machine  # noqa: E402

from agent.eval.harness import EvalConfig, evaluate  # noqa: E402
from agent.rollout.policies.base import DECODE_DTYPES  # noqa: E402
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy  # noqa: E402
from agent.rollout.trajectory import Trajectory  # noqa: E402
from wikisim.env.config import EnvConfig  # noqa: E402
from wikisim.flags import build_config  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def run(policy_dir: str, dtype: str, tasks: Path, batch: int) -> tuple[dict, list[Trajectory]]:
    """One greedy eval, as learn_agent.py evaluates a checkpoint; its figures and episodes."""
    env = build_config(EnvConfig, {**ENV, "max_turns": GRPO_RECIPE.env.max_turns})
    settings = {
        "batch_size": batch,
        "think_budget": GRPO_RECIPE.think_budget,
        "decode_dtype": dtype,
    }
    policy = TransformersPolicy.from_path(policy_dir, sampling=SamplingConfig(**settings))
    cfg = build_config(
        EvalConfig,
        {
            **env.to_dict(),
            **settings,
            "policy": policy_dir,
            "tasks": str(tasks),
            "envs": batch,
            "max_new_tokens": GRPO_RECIPE.max_new_tokens,
            "max_context_tokens": GRPO_RECIPE.max_context_tokens,
        },
    )
    start = time.perf_counter()
    _, trajs = evaluate(cfg, policy=policy, progress=False)
    wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "generated_tokens": policy.generated_tokens,
        "em": sum(t.metrics.get("em", 0.0) for t in trajs) / len(trajs),
        "searches": sum(t.tool_calls.count("search") for tr in trajs for t in tr.turns)
        / len(trajs),
    }, trajs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default="data/models/smollm2-wikisim-lora")
    p.add_argument("--questions", type=int, default=60)
    p.add_argument("--batch", type=int, default=60, help="learn_agent.py's CPU eval batch")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    held = [t for v in load_data(0).held.values() for t in v][: args.questions]
    RESULTS.mkdir(parents=True, exist_ok=True)
    tasks = RESULTS / "decode_dtype_tasks.jsonl"
    tasks.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in held), encoding="utf-8")
    runs: dict[str, list[dict]] = {d: [] for d in DECODE_DTYPES}
    answers: dict[str, list[str | None]] = {}
    for _ in range(args.repeats):
        for dtype in DECODE_DTYPES:
            stats, trajs = run(args.policy, dtype, tasks, args.batch)
            runs[dtype].append(stats)
            answers[dtype] = [t.answer for t in trajs]
            print(dtype, {k: round(v, 3) for k, v in stats.items()}, flush=True)
    tasks.unlink()
    out: dict = {"args": vars(args), **machine("cpu"), "load_avg_1min": os.getloadavg()[0]}
    for dtype in DECODE_DTYPES:
        out[dtype] = {**min(runs[dtype], key=lambda r: r["wall_s"]), "runs": runs[dtype]}
    a, b = answers["float32"], answers["bfloat16"]
    out["same_answers_share"] = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    out["bfloat16_over_float32"] = out["float32"]["wall_s"] / out["bfloat16"]["wall_s"]
    (RESULTS / "decode_dtype.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(
        f"bfloat16 {out['bfloat16_over_float32']:.2f}x float32's speed over {len(held)} episodes; "
        f"the same answer in {out['same_answers_share']:.0%}; EM {out['float32']['em']:.3f} "
        f"(float32) vs {out['bfloat16']['em']:.3f} (bfloat16)"
    )


if __name__ == "__main__":
    main()
