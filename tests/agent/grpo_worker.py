"""A GRPO run for `accelerate launch` (tests): the tiny model, sampled turns, a token-parity reward.

Each rank appends, at every sampling call, a hash of the weights it samples with and the
questions it got to `<output_dir>/rank-<i>.jsonl`, so a test can check that the ranks hold
identical weights after every update and split each step's questions between them.
Rollout seeds come from the step and the question, not the rank, so a question's group is
the same whichever rank samples it and the loss curve must not depend on the process count.

    accelerate launch tests/agent/grpo_worker.py OUTPUT_DIR STEPS
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path

import torch

from agent.rollout.model_server import weights_sha256
from agent.rollout.models import tiny_model
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
from agent.rollout.react import ChatFormat
from agent.rollout.trajectory import Trajectory, Turn
from agent.train.config import GRPOConfig
from agent.train.grpo import GRPOResult, train_grpo

QUESTIONS = [f"q{i}" for i in range(8)]


def run(
    out: Path,
    steps: int,
    deadline: float | None = None,
    collapse_at: int | None = None,
    recover_at: int | None = None,
    quiet_at: int | None = None,
    **fields: object,
) -> GRPOResult:
    """`collapse_at`: greedy episodes (the collapse guard's checks) from that check on, counted
    from 0, go unanswered, until check `recover_at` (None: never); before check `quiet_at` (None:
    always) each writes a search call, from it on none. `fields` override the config's."""
    cfg = GRPOConfig(
        output_dir=str(out),
        seed=3,
        steps=steps,
        questions_per_step=4,
        group_size=4,
        lr=1e-2,
        micro_batch_size=4,
        cpu=True,
        dev_every=0,
        max_new_tokens=6,
        **fields,  # type: ignore[arg-type]
    )
    tok, _ = tiny_model(cfg.seed)
    chat = ChatFormat(tok)
    checks = 0

    def sample(model, task_ids, n, seed, temperature, starts=None):
        from accelerate import PartialState

        nonlocal checks
        rank = PartialState().process_index
        record = {
            "weights": weights_sha256(model),
            "questions": list(task_ids),
            "temperature": temperature,
        }
        with (out / f"rank-{rank}.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")
        gone = (
            temperature == 0
            and collapse_at is not None
            and collapse_at <= checks < (recover_at if recover_at is not None else checks + 1)
        )
        searched = (
            ("search",) if temperature == 0 and (quiet_at is None or checks < quiet_at) else ()
        )
        checks += temperature == 0
        policy = TransformersPolicy(tok, model, sampling=SamplingConfig(temperature=temperature))
        step_seed = seed // 1_000  # drop the rank (see the module docstring)
        trajs = []
        for q in task_ids:
            prompt = chat.prompt_ids(
                [{"role": "user", "content": f"Say an even token for {q}"}], None
            )
            seeds = [zlib.crc32(f"{q}/{step_seed}/{j}".encode()) for j in range(n)]
            for j, (ids, lps, _) in enumerate(
                policy.generate([list(prompt)] * n, [cfg.max_new_tokens] * n, seeds)
            ):
                trajs.append(
                    Trajectory(
                        task_id=q,
                        seed=seeds[j],
                        policy="tiny",
                        prompt_ids=prompt,
                        turns=(
                            Turn(
                                text=tok.decode(ids),
                                ids=tuple(ids),
                                logprobs=tuple(lps),
                                tool_calls=searched,
                            ),
                        ),
                        answer=None if gone else str(ids[0]),
                        reward=float(ids[0] % 2 == 0),
                        terminated=True,
                        truncated=False,
                        manifest_hash="",
                        version="0",
                    )
                )
        model.train()
        return trajs

    return train_grpo(cfg, QUESTIONS, sample, deadline=deadline)


if __name__ == "__main__":
    torch.set_num_threads(1)
    run(Path(sys.argv[1]), int(sys.argv[2]))
