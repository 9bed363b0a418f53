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
from pathlib import Path

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", default="data/models/smollm2-wikisim-lora")
    p.add_argument("--sequences", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    trajs = varied(args.sequences, args.seed)
    cut = Batch.rows
    runs: dict[str, list[dict]] = {"padded": [], "cut": []}
    for _ in range(args.repeats):
        for name, rows in (("padded", padded_rows), ("cut", cut)):
            Batch.rows = rows  # type: ignore[method-assign]
            try:
                runs[name].append(sft_update(args, args.micro_batch, trajs))
            finally:
                Batch.rows = cut  # type: ignore[method-assign]
            print(name, runs[name][-1], flush=True)
    time = {k: statistics.median(r["time_s"] for r in v) for k, v in runs.items()}
    summary = {
        "sequences": args.sequences,
        "micro_batch": args.micro_batch,
        "tokens_per_sequence": [len(t.token_ids()) for t in trajs],
        "time_s": time,
        "time_ratio_padded_over_cut": time["padded"] / time["cut"],
        "loss_abs_diff": abs(runs["padded"][0]["loss"] - runs["cut"][0]["loss"]),
        "grad_norm_rel_diff": abs(runs["padded"][0]["grad_norm"] - runs["cut"][0]["grad_norm"])
        / runs["padded"][0]["grad_norm"],
        "threads": args.threads,
        "load_avg_1min": os.getloadavg()[0],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "micro_batch_width.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
