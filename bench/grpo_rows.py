"""A GRPO update that runs only the rows that add to its loss, against one that runs every row.

Without a KL or entropy term, a rollout with a zero advantage (every rollout of a group whose
rewards are equal) or outside the loss adds nothing to the update, and one process leaves it
out of the forward and backward passes (`agent.train.grpo.rows_in_update`). This times one
update (`agent.train.grpo.grpo_update`) of SmolLM2 + the shipped LoRA adapter on CPU both ways,
in this process, alternating, on `bench/micro_batch_width.py`'s episodes (400-1,000 tokens) in
groups of 2, of which `--equal-groups` have equal rewards (session 13's GPU runs had 12-38% of
rollouts at a zero advantage; unprobed questions leave more), and checks that the loss and
gradient norm agree.

    nice -n 10 .venv/bin/python bench/grpo_rows.py [--sequences 8] [--equal-groups 2] [--repeats 2]
Writes bench/results/grpo_rows.json; the last line is its JSON summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from unittest import mock

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grpo_step import update  # noqa: E402
from micro_batch_width import alternate, report, setup  # noqa: E402

import agent.train.grpo as grpo  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--equal-groups", type=int, default=2, help="groups of 2 with equal rewards")
    args, trajs = setup(p)
    for i in range(2 * args.equal_groups):  # the first groups: both rollouts rewarded alike
        trajs[i] = dataclasses.replace(trajs[i], reward=1.0)

    def every_row() -> dict:
        with mock.patch.object(grpo, "rows_in_update", lambda adv, *_: list(range(len(adv)))):
            return update(args, args.micro_batch, trajs)

    runs = alternate(
        {"every row": every_row, "needed rows": lambda: update(args, args.micro_batch, trajs)},
        args.repeats,
    )
    report("grpo_rows", args, trajs, runs)


if __name__ == "__main__":
    main()
