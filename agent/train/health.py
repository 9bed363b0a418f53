"""The collapse guard: GRPO stops, keeping its last healthy weights, when the policy stops
answering or stops searching.

GRPO on a small CPU policy can drift into a loop of tool calls that never answers (seed 2 in
sessions 22, 38 and 39: up to 51 of 120 greedy held-out episodes unanswered, against ~3 after
SFT), or into answering at once from what it remembers (seed 1 in session 50: 13 of 16 greedy
episodes without a search after step 28, against 1 after SFT, while every one answered). The
training rollouts cannot tell that drift from a passing bad group: 16 rollouts of two questions
a step, and a seed that recovered showed as many unanswered ones (9 of 32 over two steps) as one
that collapsed. So a fixed draw of training questions is played greedily, as the held-out evals
play, before step 1 and every `GRPOConfig.health_every` steps; where the share left unanswered,
or the share that wrote no search call, has risen more than `health_margin` over the starting
weights', the trainable weights go back to those of the last check that passed and the run stops
there; under `health_retries` it goes on from them instead, that many times at most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from agent.train.config import GRPOConfig
from agent.train.episodes import Sampler, drawn
from agent.train.loop import RunDir, global_sum


@dataclass
class Health:
    """The guard's state: its questions, the starting weights' unanswered and unsearched shares,
    and the weights (trainable parameters, on the CPU) of the last check that passed."""

    questions: list[str]
    base: float
    # None: resumed from a checkpoint written before the guard watched searching
    base_unsearched: float | None
    kept_step: int
    kept: dict[str, torch.Tensor] = field(repr=False)
    stopped_at: int | None = None  # the step whose check failed
    # the steps whose failed check GRPO went on from (`GRPOConfig.health_retries`)
    rolled_back: list[int] = field(default_factory=list)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps (the weights are the checkpoint's own)."""
        return {
            "base": self.base,
            "base_unsearched": self.base_unsearched,
            "kept_step": self.kept_step,
            "stopped_at": self.stopped_at,
            "rolled_back": self.rolled_back,
        }


def health_questions(cfg: GRPOConfig, task_ids: Sequence[str]) -> list[str]:
    """`cfg.health_questions` training questions, drawn by the seed."""
    return drawn(task_ids, cfg.health_questions, cfg.seed * 31 + 11)


def check(
    sampler: Sampler,
    model: torch.nn.Module,
    questions: Sequence[str],
    seed: int,
    run: RunDir,
    step: int,
) -> dict[str, float]:
    """Greedy episodes of `questions` (each process a shard, kept in the run folder's
    `health/step-N.rankR.jsonl`): the share unanswered, the share that wrote no search call (run
    or refused), and their mean reward."""
    accelerator = run.accelerator
    rank, world = accelerator.process_index, accelerator.num_processes
    mine = list(questions)[rank::world]
    trajs = sampler(model, mine, 1, seed, 0.0) if mine else []
    run.rollouts(step, trajs, "health")
    unanswered = global_sum(accelerator, float(sum(t.answer is None for t in trajs)))
    unsearched = global_sum(accelerator, float(sum(not t.called("search") for t in trajs)))
    reward = global_sum(accelerator, sum(t.reward for t in trajs))
    n = len(questions)
    return {
        "health_unanswered": unanswered / n,
        "health_unsearched": unsearched / n,
        "health_reward": reward / n,
    }


def trainable(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A CPU copy of the parameters training changes (a LoRA adapter's, or all of them)."""
    return {
        n: p.detach().to("cpu", copy=True) for n, p in model.named_parameters() if p.requires_grad
    }


def restore(model: torch.nn.Module, kept: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in kept:
                p.copy_(kept[n])


def start(
    cfg: GRPOConfig,
    sampler: Sampler,
    model: torch.nn.Module,
    task_ids: Sequence[str],
    run: RunDir,
    step: int,
    state: dict[str, Any] | None,
) -> Health:
    """The guard at `step`: a fresh run checks its starting weights; a resumed one reads the base
    back from its checkpoint and keeps the resumed weights as the last healthy ones (a run the
    guard stopped saved them restored)."""
    questions = health_questions(cfg, task_ids)
    if state:
        stopped = state["stopped_at"]
        kept_step = state["kept_step"] if stopped is not None else step
        return Health(
            questions,
            state["base"],
            state.get("base_unsearched"),  # absent from older checkpoints, as is rolled_back
            kept_step,
            trainable(model),
            stopped,
            list(state.get("rolled_back", [])),
        )
    base = check(sampler, model, questions, _seed(cfg), run, step)
    return Health(
        questions, base["health_unanswered"], base["health_unsearched"], step, trainable(model)
    )


def after_step(
    health: Health,
    cfg: GRPOConfig,
    sampler: Sampler,
    model: torch.nn.Module,
    run: RunDir,
    done: int,
    last: bool,
) -> dict[str, float]:
    """Check the weights after step `done`: passed, they become the kept ones; failed, the model
    goes back to the kept ones and either `health.stopped_at` is set or, with a retry left and
    steps to come (not `last`), `done` joins `health.rolled_back` and the caller clears the
    optimizer's moments. The check's figures, to log."""
    figures = check(sampler, model, health.questions, _seed(cfg), run, done)
    figures["health_base"] = health.base
    rose = figures["health_unanswered"] - health.base > cfg.health_margin
    if health.base_unsearched is not None:
        figures["health_base_unsearched"] = health.base_unsearched
        rose |= figures["health_unsearched"] - health.base_unsearched > cfg.health_margin
    if rose:
        restore(model, health.kept)
        if not last and len(health.rolled_back) < cfg.health_retries:
            health.rolled_back.append(done)
            figures["health_rolled_back"] = float(len(health.rolled_back))
        else:
            health.stopped_at = done
        figures["health_kept_step"] = float(health.kept_step)
    else:
        health.kept, health.kept_step = trainable(model), done
    return figures


def _seed(cfg: GRPOConfig) -> int:
    return cfg.seed * 7 + 2
