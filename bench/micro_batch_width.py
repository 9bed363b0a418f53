"""A training micro-batch cut to its own longest row against one padded to the whole batch's.

`collate` pads every row of an update to the longest; `Batch.rows` then cuts each micro-batch
to its own longest row before the forward pass (SFT and GRPO alike). This times one SFT step
(`agent.train.sft.sft_loss` over the micro-batches, then the optimizer) of SmolLM2 + the
shipped LoRA adapter on CPU both ways, in this process, alternating, on the same seeded
episodes (`bench/grpo_step.py`'s, with 1 to 4 turns: 400 to 1,000 tokens, as a GRPO group's
episodes differ when some stop after one search and others visit), and checks that the loss
and gradient norm agree.

    nice -n 10 .venv/bin/python bench/micro_batch_width.py [--sequences 8] [--micro-batch 1] [--repeats 2]
Writes bench/results/micro_batch_width.json; the last line is its JSON summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from unittest import mock

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from grpo_step import RESULTS, episodes, sft_update  # noqa: E402

from agent.rollout.trajectory import Trajectory  # noqa: E402
from agent.train.loop import Batch  # noqa: E402


def padded_rows(self: Batch, mb: slice) -> Batch:
    """The baseline: the micro-batch's rows at the whole batch's width."""
    return Batch(
        self.input_ids[mb], self.attention_mask[mb], self.loss_mask[mb], self.old_logprobs[mb]
    )


def varied(n: int, seed: int) -> list[Trajectory]:
    """grpo_step's episodes with 1 to 4 turns (it makes 2 to 4)."""
    out = []
    for i, t in enumerate(episodes(n, 49152, seed)):
        turns = (t.turns * 2)[: 1 + i % 4]
        out.append(dataclasses.replace(t, turns=turns))
    return out


def alternate(variants: dict[str, Callable[[], dict]], repeats: int) -> dict[str, list[dict]]:
    """Each variant's runs, alternating, so that the machine's load falls on all alike."""
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            runs[name].append(run())
            print(name, runs[name][-1], flush=True)
    return runs


def report(name: str, args: argparse.Namespace, trajs: list[Trajectory], runs: dict) -> None:
    """Median times, the first variant's over the second's, and how far their first runs' loss
    and gradient norm differ; written to bench/results/NAME.json and printed."""
    (base, slow), (new, fast) = ((k, v[0]) for k, v in runs.items())
    time = {k: statistics.median(r["time_s"] for r in v) for k, v in runs.items()}
    summary = {
        **{k: v for k, v in vars(args).items() if k not in ("init", "threads")},
        "tokens_per_sequence": [len(t.token_ids()) for t in trajs],
        "time_s": time,
        f"time_ratio_{base}_over_{new}".replace(" ", "_"): time[base] / time[new],
        "loss_abs_diff": abs(slow["loss"] - fast["loss"]),
        "grad_norm_rel_diff": abs(slow["grad_norm"] - fast["grad_norm"]) / slow["grad_norm"],
        "threads": args.threads,
        "load_avg_1min": os.getloadavg()[0],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary))


def setup(p: argparse.ArgumentParser) -> tuple[argparse.Namespace, list[Trajectory]]:
    """The flags this bench and grpo_rows.py share, parsed; torch's threads; the episodes."""
    p.add_argument("--init", default="data/models/smollm2-wikisim-lora")
    p.add_argument("--sequences", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    return args, varied(args.sequences, args.seed)


def main() -> None:
    args, trajs = setup(argparse.ArgumentParser(description=__doc__.splitlines()[0]))

    def padded() -> dict:
        with mock.patch.object(Batch, "rows", padded_rows):
            return sft_update(args, args.micro_batch, trajs)

    runs = alternate(
        {"padded": padded, "cut": lambda: sft_update(args, args.micro_batch, trajs)}, args.repeats
    )
    report("micro_batch_width", args, trajs, runs)


if __name__ == "__main__":
    main()
